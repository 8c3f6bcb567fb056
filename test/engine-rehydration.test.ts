/**
 * Rehydration by reference (issue 16, items 1–3 and 5): a turn brings back the artifacts this thread externalized
 * that the model or the user referred to since the previous call — gated like an artifact read, held off by a
 * cooldown, cut to a cap, held to the turn's room — and never summarizes or externalizes on that turn.
 */
import { describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import type { EngineEvent } from "../src/engine/engine-events.js";
import type { ContextEngineOptions } from "../src/engine/engine-options.js";
import type { Sensitivity } from "../src/log/message.js";
import { emptyPlan, extendPlan } from "../src/plan/compaction-plan.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import type { Stores } from "../src/stores/stores.js";
import { simpleCounter } from "./support/simple-counter.js";

const THREAD = "t";

/** A thread of a task, one call whose long result was externalized, and an answer. */
async function externalizedThread(
  stores: Stores,
  artifacts: ReadonlyArray<{ content: string; tenant?: string; sensitivity?: Sensitivity }>,
  engineOptions: Partial<ContextEngineOptions> = {},
) {
  const events: EngineEvent[] = [];
  const engine = createContextEngine({
    stores,
    counter: simpleCounter(),
    budget: { contextWindow: 100_000 },
    tenant: "acme",
    events: (e) => events.push(e),
    ...engineOptions,
  });
  await engine.append(THREAD, [{ id: "u0", role: "user", parts: [{ type: "text", text: "find the bug" }] }]);
  const ids: string[] = [];
  const actions = [];
  for (const [i, a] of artifacts.entries()) {
    await engine.append(THREAD, [
      {
        id: `a${i}`,
        role: "assistant",
        parts: [{ type: "tool_call", callId: `c${i}`, name: "read", args: `{"path":"f${i}"}` }],
      },
      { id: `r${i}`, role: "tool", parts: [{ type: "tool_result", callId: `c${i}`, content: a.content }] },
    ]);
    const meta = await stores.artifacts.put({
      content: a.content,
      tenant: a.tenant ?? "acme",
      threadId: THREAD,
      sourceIds: [`a${i}`, `r${i}`],
      ...(a.sensitivity === undefined ? {} : { sensitivity: a.sensitivity }),
    });
    ids.push(meta.artifactId);
    actions.push({
      kind: "externalize" as const,
      span: [`a${i}`, `r${i}`],
      record: {
        kind: "externalize" as const,
        artifactId: meta.artifactId,
        summary: `file f${i}`,
        tenant: a.tenant ?? "acme",
      },
      strategy: "test",
      reason: "moved out",
    });
  }
  await engine.append(THREAD, [{ id: "x0", role: "assistant", parts: [{ type: "text", text: "looked" }] }]);
  const length = 2 + 2 * artifacts.length;
  // The thread is acme's: its plan is committed through stores acting for acme.
  await stores.forTenant!("acme").plans.commit(extendPlan(emptyPlan(THREAD), actions, length), 0);
  const first = await engine.prepareTurn(THREAD, { format: "openai" });
  return { engine, ids, events, first };
}

let turnNo = 0;
function say(text: string) {
  turnNo++;
  return [{ id: `q${turnNo}`, role: "user" as const, parts: [{ type: "text" as const, text }] }];
}

function lastText(request: { messages: ReadonlyArray<{ content?: unknown }> }): string {
  const content = request.messages.at(-1)?.content;
  return typeof content === "string" ? content : JSON.stringify(content);
}

describe("rehydration by reference", () => {
  it("brings back an artifact a user message names, after the last message, and replay verifies", async () => {
    const stores = createMemoryStores();
    const { engine, ids, events } = await externalizedThread(stores, [{ content: "line one\nline two" }]);
    await engine.append(THREAD, say(`please use ${ids[0]} again`));
    const turn = await engine.prepareTurn(THREAD, { format: "openai" });
    expect(turn.stats.rehydrated).toEqual([
      { artifactId: ids[0], tokens: expect.any(Number), truncated: false },
    ]);
    expect(turn.stats.rehydrationBlocked).toEqual([]);
    expect(lastText(turn.request)).toContain(`[Rehydrated artifact ${ids[0]}]\nline one\nline two`);
    expect(events.some((e) => e.type === "rehydrated" && e.detected === true)).toBe(true);
    expect((await engine.replay(turn.callId)).ok).toBe(true);
    const record = await stores.forTenant!("acme").calls.get(turn.callId);
    expect(record?.rehydrated?.map((r) => r.artifactId)).toEqual([ids[0]]);
  });

  it("finds ids inside tool-call arguments at any depth, and not in tool results", async () => {
    const stores = createMemoryStores();
    const { engine, ids } = await externalizedThread(stores, [{ content: "alpha" }, { content: "beta" }]);
    await engine.append(THREAD, [
      {
        id: "call-1",
        role: "assistant",
        parts: [
          {
            type: "tool_call",
            callId: "k1",
            name: "read_artifact",
            args: JSON.stringify({ options: { refs: [{ artifact_id: ids[1] }] } }),
          },
        ],
      },
      { id: "res-1", role: "tool", parts: [{ type: "tool_result", callId: "k1", content: `see ${ids[0]}` }] },
    ]);
    const turn = await engine.prepareTurn(THREAD, { format: "openai" });
    expect(turn.stats.rehydrated.map((r) => r.artifactId)).toEqual([ids[1]]);
  });

  it("does not bring back an artifact a recall call already answers", async () => {
    const stores = createMemoryStores();
    const { engine, ids } = await externalizedThread(stores, [{ content: "alpha" }]);
    const answer = await engine.recall(THREAD, { artifactId: ids[0]! });
    await engine.append(THREAD, [
      {
        id: "call-r",
        role: "assistant",
        parts: [
          { type: "tool_call", callId: "r1", name: "recall", args: JSON.stringify({ artifactId: ids[0] }) },
        ],
      },
      { id: "res-r", role: "tool", parts: [{ type: "tool_result", callId: "r1", content: answer.content }] },
    ]);
    const turn = await engine.prepareTurn(THREAD, { format: "openai" });
    expect(turn.stats.rehydrated).toEqual([]);
    expect(turn.stats.rehydrationBlocked).toEqual([]);
  });

  it("holds an artifact off for the next calls after it was brought back (cooldown 3 by default)", async () => {
    const stores = createMemoryStores();
    const { engine, ids } = await externalizedThread(stores, [{ content: "gamma" }]);
    const ask = async () => {
      await engine.append(THREAD, say(`${ids[0]} please`));
      return (await engine.prepareTurn(THREAD, { format: "openai" })).stats;
    };
    expect((await ask()).rehydrated).toHaveLength(1);
    for (let i = 0; i < 3; i++) {
      expect((await ask()).rehydrationBlocked).toEqual([{ artifactId: ids[0], reason: "cooldown" }]);
    }
    // Three calls later it comes back again.
    expect((await ask()).rehydrated).toHaveLength(1);
    // A call without a reference brings nothing.
    await engine.append(THREAD, say("thanks"));
    expect((await engine.prepareTurn(THREAD, { format: "openai" })).stats.rehydrated).toEqual([]);
  });

  it("is gated like an artifact read: above clearance and another tenant's artifact stay out", async () => {
    const stores = createMemoryStores();
    const { engine, ids, events } = await externalizedThread(stores, [
      { content: "secret", sensitivity: "restricted" },
      { content: "theirs", tenant: "other" },
    ]);
    await engine.append(THREAD, say(`${ids[0]} and ${ids[1]}`));
    const turn = await engine.prepareTurn(THREAD, { format: "openai" });
    expect(turn.stats.rehydrated).toEqual([]);
    expect(turn.stats.rehydrationBlocked).toEqual([
      { artifactId: ids[0], reason: "sensitivity" },
      { artifactId: ids[1], reason: "tenant" },
    ]);
    expect(JSON.stringify(turn.request)).not.toContain("secret");
    expect(JSON.stringify(turn.request)).not.toContain("theirs");
    expect(events.filter((e) => e.type === "rehydration_blocked")).toHaveLength(2);
  });

  it("cuts an artifact to the per-artifact cap with a marker, and holds the turn to its room", async () => {
    const stores = createMemoryStores();
    const big = Array.from({ length: 400 }, (_, i) => `row ${i} ${"x".repeat(30)}`).join("\n");
    const { engine, ids } = await externalizedThread(
      stores,
      [{ content: big }, { content: big.toUpperCase() }],
      {
        rehydration: { maxTokensPerArtifact: 500, maxTokens: 700 },
      },
    );
    await engine.append(THREAD, say(`compare ${ids[0]} with ${ids[1]}`));
    const turn = await engine.prepareTurn(THREAD, { format: "openai" });
    const [a, b] = [turn.stats.rehydrated, turn.stats.rehydrationBlocked];
    // Both are cut to 500; over the room of 700 the largest are halved, and both then fit.
    expect(a.map((r) => r.truncated)).toEqual([true, true]);
    expect(a.reduce((n, r) => n + r.tokens, 0)).toBeLessThanOrEqual(700);
    expect(b).toEqual([]);
    expect(JSON.stringify(turn.request)).toMatch(/chars \(\d+ lines.*omitted/);
    // With room for one only, the latest reference wins.
    const small = await externalizedThread(createMemoryStores(), [{ content: big }, { content: `${big}!` }], {
      rehydration: { maxTokensPerArtifact: 500, maxTokens: 300 },
    });
    await small.engine.append(THREAD, say(`${small.ids[0]} then ${small.ids[1]}`));
    const one = await small.engine.prepareTurn(THREAD, { format: "openai" });
    expect(small.ids[0]).not.toBe(small.ids[1]);
    expect(one.stats.rehydrated.map((r) => r.artifactId)).toEqual([small.ids[1]]);
    expect(one.stats.rehydrated[0]!.tokens).toBeLessThanOrEqual(300);
    expect(one.stats.rehydrationBlocked).toEqual([{ artifactId: small.ids[0], reason: "budget" }]);
  });

  it("runs no summarization or externalization on the turn that rehydrates", async () => {
    const stores = createMemoryStores();
    const filler = Array.from({ length: 60 }, (_, i) => say(`question ${i} ${"words ".repeat(200)}`)).flat();
    const { engine, ids } = await externalizedThread(stores, [{ content: "delta ".repeat(50) }], {
      budget: { contextWindow: 8_000, reserveOutput: 0, safetyMargin: 0 },
      summarization: "inline",
    });
    await engine.append(THREAD, filler);
    await engine.append(THREAD, say(`use ${ids[0]}`));
    const turn = await engine.prepareTurn(THREAD, { format: "openai" });
    expect(turn.stats.rehydrated).toHaveLength(1);
    expect(turn.stats.actionsByKind.summarize ?? 0).toBe(0);
    expect(turn.stats.tokens).toBeLessThanOrEqual(turn.stats.budget.available);
    // The next turn, with no reference, may summarize again.
    await engine.append(THREAD, say("go on"));
    const next = await engine.prepareTurn(THREAD, { format: "openai" });
    expect(next.stats.rehydrated).toEqual([]);
  });
});
