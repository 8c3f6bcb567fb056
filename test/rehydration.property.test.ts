/**
 * Rehydration by reference on random threads (fast-check; docs/decisions/0014). A thread has externalized
 * artifacts of random sensitivity and tenant; each round appends references to random artifacts — in user text,
 * nested in a tool call's JSON arguments, or only in a tool result (which is not a request) — and prepares a turn
 * in a random format, on one of two workers (one keeps no cache). A small model says what must happen: every artifact referred to by user or assistant since
 * the previous call is brought back, unless it is above clearance (`sensitivity`), another tenant's (`tenant`),
 * or was brought back in one of the last three calls (`cooldown`). Every turn must match the model exactly, be a
 * valid request within budget, and replay. Set FC_SEED to replay a failure.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import type { ContextEngine } from "../src/engine/context-engine.js";
import type { ContextEngineOptions } from "../src/engine/engine-options.js";
import { BudgetInfeasibleError } from "../src/errors/ledger-error.js";
import type { MessageInput, Sensitivity } from "../src/log/message.js";
import { emptyPlan, extendPlan, type PlanAction } from "../src/plan/compaction-plan.js";
import { validateProviderRequest } from "../src/render/provider-rules.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import { fcParams } from "./support/arbitrary-log.js";
import { simpleCounter } from "./support/simple-counter.js";

const THREAD = "t";
const COOLDOWN = 3;

interface ArtifactSpec {
  readonly sensitivity: Sensitivity;
  readonly tenant: "acme" | "other";
}

type Where = "text" | "args" | "result";

interface Round {
  readonly format: "openai" | "responses" | "anthropic";
  /** Whether a second worker without a cache serves the round (the cooldown must hold across workers). */
  readonly cold: boolean;
  readonly refs: ReadonlyArray<{ readonly artifact: number; readonly where: Where }>;
}

const artifactArb: fc.Arbitrary<ArtifactSpec> = fc.record({
  sensitivity: fc.constantFrom<Sensitivity>("public", "internal", "internal", "restricted"),
  tenant: fc.constantFrom<"acme" | "other">("acme", "acme", "acme", "other"),
});

function roundArb(artifacts: number): fc.Arbitrary<Round> {
  return fc.record({
    format: fc.constantFrom("openai" as const, "responses" as const, "anthropic" as const),
    cold: fc.boolean(),
    refs: fc.array(
      fc.record({
        artifact: fc.nat({ max: artifacts - 1 }),
        where: fc.constantFrom<Where>("text", "text", "args", "result"),
      }),
      { maxLength: 4 },
    ),
  });
}

const scenarioArb = fc.array(artifactArb, { minLength: 1, maxLength: 5 }).chain((artifacts) =>
  fc.record({
    artifacts: fc.constant(artifacts),
    rounds: fc.array(roundArb(artifacts.length), { maxLength: 8 }),
  }),
);

/** The messages of one round: a user message naming the text references, then a call and its result. */
function roundMessages(round: Round, ids: ReadonlyArray<string>, n: number): MessageInput[] {
  const named = (where: Where) => round.refs.filter((r) => r.where === where).map((r) => ids[r.artifact]!);
  const text = `round ${n}: ${named("text").join(" and ") || "carry on"}`;
  const args = JSON.stringify({
    query: "x",
    deep: { refs: named("args").map((id) => ({ artifact_id: id })) },
  });
  return [
    { id: `q${n}`, role: "user", parts: [{ type: "text", text }] },
    {
      id: `k${n}`,
      role: "assistant",
      parts: [{ type: "tool_call", callId: `kc${n}`, name: "lookup", args }],
    },
    {
      id: `kr${n}`,
      role: "tool",
      parts: [{ type: "tool_result", callId: `kc${n}`, content: `found ${named("result").join(", ")}` }],
    },
    { id: `ka${n}`, role: "assistant", parts: [{ type: "text", text: "ok" }] },
  ];
}

/** A thread whose plan externalized one artifact per spec, and two engines on its stores (one keeps no cache). */
async function externalizedThread(
  artifacts: ReadonlyArray<ArtifactSpec>,
  extra: Partial<ContextEngineOptions>,
): Promise<{ engine: ContextEngine; cold: ContextEngine; ids: string[] }> {
  const stores = createMemoryStores();
  const options = {
    stores,
    counter: simpleCounter(),
    budget: { contextWindow: 200_000 },
    tenant: "acme",
    rehydration: { maxTokens: 100_000 },
    ...extra,
  };
  const engine = createContextEngine(options);
  const cold = createContextEngine({ ...options, cacheThreads: 0 });
  await engine.append(THREAD, [{ id: "u0", role: "user", parts: [{ type: "text", text: "task" }] }]);
  const ids: string[] = [];
  const actions: PlanAction[] = [];
  for (const [i, spec] of artifacts.entries()) {
    const content = `artifact ${i}: ${"data ".repeat(20 + i)}`;
    await engine.append(THREAD, [
      {
        id: `a${i}`,
        role: "assistant",
        parts: [{ type: "tool_call", callId: `c${i}`, name: "read", args: "{}" }],
      },
      { id: `r${i}`, role: "tool", parts: [{ type: "tool_result", callId: `c${i}`, content }] },
    ]);
    const meta = await stores.artifacts.put({
      content,
      tenant: spec.tenant,
      sensitivity: spec.sensitivity,
      threadId: THREAD,
    });
    ids.push(meta.artifactId);
    actions.push({
      kind: "externalize",
      span: [`a${i}`, `r${i}`],
      record: {
        kind: "externalize",
        artifactId: meta.artifactId,
        summary: `artifact ${i}`,
        tenant: spec.tenant,
      },
      strategy: "test",
      reason: "moved out",
    });
  }
  await stores.forTenant!("acme").plans.commit(
    extendPlan(emptyPlan(THREAD), actions, 1 + 2 * artifacts.length),
    0,
  );
  await engine.prepareTurn(THREAD, { format: "openai" });
  return { engine, cold, ids };
}

describe("rehydration by reference (property)", () => {
  it("brings back exactly the allowed artifacts and reports every other one with its reason", async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async ({ artifacts, rounds }) => {
        const { engine, cold, ids } = await externalizedThread(artifacts, {});
        const history: Array<ReadonlySet<string>> = [];
        for (const [n, round] of rounds.entries()) {
          await engine.append(THREAD, roundMessages(round, ids, n));
          const turn = await (round.cold ? cold : engine).prepareTurn(THREAD, { format: round.format });
          // The model: references by user or assistant, in the order of their last mention (text before args).
          const asked: string[] = [];
          for (const where of ["text", "args"] as const) {
            for (const r of round.refs) {
              const id = ids[r.artifact]!;
              if (r.where !== where) continue;
              const at = asked.indexOf(id);
              if (at >= 0) asked.splice(at, 1);
              asked.push(id);
            }
          }
          const cooling = new Set(history.slice(-COOLDOWN).flatMap((s) => [...s]));
          const expected = {
            rehydrated: [] as string[],
            blocked: [] as Array<{ artifactId: string; reason: string }>,
          };
          for (const id of asked) {
            const spec = artifacts[ids.indexOf(id)]!;
            if (cooling.has(id)) expected.blocked.push({ artifactId: id, reason: "cooldown" });
            else if (spec.tenant !== "acme") expected.blocked.push({ artifactId: id, reason: "tenant" });
            else if (spec.sensitivity === "restricted")
              expected.blocked.push({ artifactId: id, reason: "sensitivity" });
            else expected.rehydrated.push(id);
          }
          expect(turn.stats.rehydrated.map((r) => r.artifactId)).toEqual(expected.rehydrated);
          expect(turn.stats.rehydrationBlocked).toEqual(expected.blocked);
          history.push(new Set(expected.rehydrated));
          expect(validateProviderRequest(round.format, turn.request)).toEqual([]);
          expect(turn.stats.tokens).toBeLessThanOrEqual(turn.stats.budget.available);
          const body = JSON.stringify(turn.request);
          for (const id of expected.rehydrated) expect(body).toContain(`[Rehydrated artifact ${id}]`);
          for (const b of expected.blocked)
            expect(body).not.toContain(`[Rehydrated artifact ${b.artifactId}`);
          expect((await engine.replay(turn.callId)).ok).toBe(true);
        }
      }),
      fcParams(150),
    );
  }, 120_000);

  it("never makes a turn that fits without rehydration fail: what cannot fit is left out", async () => {
    await fc.assert(
      fc.asyncProperty(
        scenarioArb,
        fc.integer({ min: 60, max: 900 }),
        async ({ artifacts, rounds }, budget) => {
          // The same thread on two sets of stores: one engine brings references back, the other never looks.
          const extra = { rehydration: { maxTokens: 100_000, maxTokensPerArtifact: 400 } };
          const on = await externalizedThread(artifacts, extra);
          const off = await externalizedThread(artifacts, { rehydration: { detect: false } });
          for (const [n, round] of rounds.entries()) {
            const messages = roundMessages(round, on.ids, n);
            await on.engine.append(THREAD, messages);
            await off.engine.append(THREAD, messages);
            const turn = (engine: ContextEngine) =>
              engine.prepareTurn(THREAD, { format: round.format, budget }).then(
                (t) => t,
                (e: unknown) => {
                  if (e instanceof BudgetInfeasibleError) return undefined;
                  throw e;
                },
              );
            const without = await turn(off.engine);
            const withRefs = await turn(on.engine);
            if (without !== undefined) expect(withRefs).toBeDefined();
            if (withRefs === undefined) continue;
            expect(withRefs.stats.tokens).toBeLessThanOrEqual(budget);
            expect(validateProviderRequest(round.format, withRefs.request)).toEqual([]);
            expect((await on.engine.replay(withRefs.callId)).ok).toBe(true);
          }
        },
      ),
      fcParams(40),
    );
  }, 120_000);
});
