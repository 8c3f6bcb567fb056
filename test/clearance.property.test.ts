/**
 * For random logs whose messages carry random sensitivities and random valid plans over them, a reader of any
 * clearance never receives content above it in any rendered request (OpenAI Chat, OpenAI Responses, Anthropic),
 * and every request, stubs included, stays valid for its provider (no orphaned call or result). Each message
 * carries a marker unique to it in its text, call arguments, results and reasoning, so a leak is a marker in the
 * request's JSON. The plans' summaries and pointers carry the markers of the messages they stand for, and their
 * records name a random class, often below their messages' (a record may raise a span's class, never lower it).
 * The real collapse and externalization strategies are checked the same way on a group with an unmarked message.
 * Set FC_SEED to replay.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import { AccessDeniedError, BudgetInfeasibleError, ClearanceError } from "../src/errors/ledger-error.js";
import type { MessageInput, Part, Sensitivity } from "../src/log/message.js";
import { mayRead } from "../src/log/sensitivity.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { type CompactionPlan, createPlan, emptyPlan, type PlanAction } from "../src/plan/compaction-plan.js";
import { resolveForLog } from "../src/plan/resolve-for-log.js";
import {
  type ProviderFormat,
  toProviderRequest,
  validateProviderRequest,
} from "../src/render/provider-rules.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import type { RenderedPrompt } from "../src/render/rendered-prompt.js";
import { spanSources } from "../src/render/span-sources.js";
import { type AboveClearancePolicy, withholdAboveClearance } from "../src/render/withhold-content.js";
import { createMemoryArtifactStore } from "../src/stores/memory/memory-artifact-store.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import { createExternalization } from "../src/strategies/externalization.js";
import type { Strategy } from "../src/strategies/strategy.js";
import { createToolResultCollapse } from "../src/strategies/tool-result-collapse.js";
import { availableForPrompt, createTokenBudget } from "../src/tokens/token-budget.js";
import { arbitraryLogInputs, arbitraryPlanFor, fcParams } from "./support/arbitrary-log.js";
import { call, result, text } from "./support/builders.js";
import { simpleCounter } from "./support/simple-counter.js";
import { runStrategy } from "./support/strategy-context.js";

const CLASSES: ReadonlyArray<Sensitivity> = ["public", "internal", "confidential", "restricted"];
const FORMATS: ReadonlyArray<ProviderFormat> = ["openai", "responses", "anthropic"];
const marker = (i: number) => `⟦secret-${i}⟧`;

/** The message with marker `i` in every text it carries (arguments stay JSON), and a class (none: internal). */
function marked(input: MessageInput, i: number, sensitivity: Sensitivity | undefined): MessageInput {
  const parts = input.parts.map((part): Part => {
    if (part.type === "text") return { ...part, text: `${part.text} ${marker(i)}` };
    if (part.type === "tool_result") return { ...part, content: `${part.content} ${marker(i)}` };
    if (part.type === "reasoning") return { ...part, text: `${part.text} ${marker(i)}` };
    if (part.type === "tool_call") return { ...part, args: JSON.stringify({ was: part.args, m: marker(i) }) };
    return part;
  });
  return {
    ...input,
    parts,
    meta: { ...input.meta, ...(sensitivity === undefined ? {} : { sensitivity }) },
  };
}

/**
 * The plan with each summary and pointer carrying the markers of the messages it stands for (as a real one would
 * carry their content) and a record class from `classes` (none, or any class, whatever its messages' are).
 */
function telling(log: ThreadLog, plan: CompactionPlan, classes: ReadonlyArray<Sensitivity | undefined>) {
  const resolved = resolveForLog(plan, log);
  const actions = plan.actions.map((action, k): PlanAction => {
    if (action.kind !== "summarize" && action.kind !== "externalize") return action;
    // The messages it stands for after precedence (a later action may take some of its span).
    const markers = spanSources(log, resolved, k)
      .map((id) => marker(log.seqOf(id)!))
      .join(" ");
    const { sensitivity: _, ...rest } = action.record;
    const sensitivity = classes[k % Math.max(1, classes.length)];
    const record = {
      ...rest,
      summary: `${rest.summary} ${markers}`,
      ...(sensitivity ? { sensitivity } : {}),
    };
    return { ...action, record } as PlanAction;
  });
  return createPlan({ ...plan, actions });
}

/** Whether the plan holds a summary or pointer whose record names a class above `clearance`. */
const recordAbove = (plan: CompactionPlan, clearance: Sensitivity) =>
  plan.actions.some(
    (a) =>
      (a.kind === "summarize" || a.kind === "externalize") &&
      a.record.sensitivity !== undefined &&
      !mayRead(a.record.sensitivity, clearance),
  );

const caseArb = arbitraryLogInputs().chain((inputs) => {
  const classes = fc.array(fc.option(fc.constantFrom(...CLASSES), { nil: undefined }), {
    minLength: inputs.length,
    maxLength: inputs.length,
  });
  return classes.chain((sensitivities) => {
    const log = ThreadLog.from(
      "t",
      inputs.map((input, i) => marked(input, i, sensitivities[i])),
    );
    const records = fc.array(fc.option(fc.constantFrom(...CLASSES), { nil: undefined }), { maxLength: 40 });
    return fc.record({
      log: fc.constant(log),
      sensitivities: fc.constant(sensitivities),
      plan: fc.tuple(arbitraryPlanFor(log), records).map(([plan, classes]) => telling(log, plan, classes)),
      clearance: fc.constantFrom(...CLASSES),
    });
  });
});

/** The prompt, or undefined when the read was refused for signed reasoning of the cycle in progress. */
function inProgressRefused(read: () => RenderedPrompt): RenderedPrompt | undefined {
  try {
    return read();
  } catch (error) {
    if (error instanceof ClearanceError && /tool-use cycle in progress/.test(error.message)) return undefined;
    throw error;
  }
}

describe("clearance on rendered requests (property)", () => {
  it("no request carries content above the reader's clearance, and every request stays valid", () => {
    const counter = simpleCounter();
    fc.assert(
      fc.property(caseArb, ({ log, sensitivities, plan, clearance }) => {
        const rendered = renderPrompt(log, plan, { counter });
        const reader = { clearance, policy: "placeholder" as AboveClearancePolicy };
        const prompt = inProgressRefused(() =>
          withholdAboveClearance(rendered, log, reader, { counter, what: "render" }),
        );
        // A signed thinking block of the cycle in progress above the clearance: refused, never stubbed or sent.
        if (prompt === undefined) return;
        const hidden = sensitivities.flatMap((s, i) => (mayRead(s ?? "internal", clearance) ? [] : [i]));
        if (hidden.length === 0 && !recordAbove(plan, clearance)) expect(prompt).toBe(rendered);
        expect(prompt.messages.map((m) => m.role)).toEqual(rendered.messages.map((m) => m.role));
        for (const format of FORMATS) {
          const request = toProviderRequest(format, prompt);
          // Stubs never make a request invalid (an empty log renders an empty, invalid request either way).
          const before = validateProviderRequest(format, toProviderRequest(format, rendered));
          expect(validateProviderRequest(format, request), format).toEqual(before);
          const json = JSON.stringify(request);
          for (const i of hidden) expect(json, `${format}: message ${i}`).not.toContain(marker(i));
        }
      }),
      fcParams(400),
    );
  });

  it("the refuse policy throws exactly when a placeholder would be needed", () => {
    const counter = simpleCounter();
    fc.assert(
      fc.property(caseArb, ({ log, plan, clearance }) => {
        const rendered = renderPrompt(log, plan, { counter });
        const stubbed = inProgressRefused(() =>
          withholdAboveClearance(
            rendered,
            log,
            { clearance, policy: "placeholder" },
            { counter, what: "render" },
          ),
        );
        const refuse = () =>
          withholdAboveClearance(rendered, log, { clearance, policy: "refuse" }, { counter, what: "render" });
        if (stubbed === rendered) expect(refuse()).toBe(rendered);
        else expect(refuse).toThrow(/above|clearance/);
      }),
      fcParams(200),
    );
  });
});

describe("prepareTurn for a reader below the content's class (property)", () => {
  // A stub can be longer than what it stands for, so a turn the pipeline fitted can come out over the budget; the
  // turn then compacts again for the stubs. Whatever the log, classes, clearance and budget: the turn is within its
  // budget, shows nothing above the clearance and replays, or it is refused with a typed error and writes nothing.
  it("stays within its budget and below the clearance, or refuses and writes nothing", async () => {
    const counter = simpleCounter();
    // Short confidential answers early on (a stub is longer than each), before a random log.
    const shortAnswers = fc.nat(14).map((k): MessageInput[] =>
      k === 0
        ? []
        : [
            { role: "user", parts: [text("tally the votes")] },
            ...Array.from(
              { length: k },
              (): MessageInput => ({
                role: "assistant",
                parts: [text("ok")],
                meta: { sensitivity: "confidential" },
              }),
            ),
          ],
    );
    const logArb = fc
      .tuple(shortAnswers, arbitraryLogInputs())
      .map(([short, rest]) =>
        rest[0]?.role === "system" ? [rest[0], ...short, ...rest.slice(1)] : [...short, ...rest],
      );
    const turnArb = logArb.chain((inputs) =>
      fc.record({
        inputs: fc.constant(inputs),
        // Each message keeps the class it came with, or takes a random one.
        sensitivities: fc.tuple(
          ...inputs.map((m) =>
            m.meta?.sensitivity !== undefined
              ? fc.constant(m.meta.sensitivity)
              : fc.option(fc.constantFrom(...CLASSES), { nil: undefined }),
          ),
        ),
        clearance: fc.constantFrom(...CLASSES),
        share: fc.double({ min: 0.2, max: 1.1, noNaN: true }),
      }),
    );
    let stubbedTurns = 0;
    await fc.assert(
      fc.asyncProperty(turnArb, async ({ inputs, sensitivities, clearance, share }) => {
        const messages = inputs.map((input, i) => marked(input, i, sensitivities[i]));
        if (messages.length === 0) return;
        const stores = createMemoryStores();
        const writer = createContextEngine({ stores, counter, clearance: "restricted", budget: 1_000_000 });
        await writer.append("t", messages);
        const whole = (await writer.render("t", { format: "openai" })).prompt.tokenCount;
        const budget = createTokenBudget({
          contextWindow: Math.max(64, Math.round(whole * share)),
          reserveOutput: 0,
          safetyMargin: 0,
        });
        const reader = createContextEngine({ stores, counter, clearance, budget });
        const hidden = sensitivities.flatMap((c, i) => (mayRead(c ?? "internal", clearance) ? [] : [i]));
        let turn: Awaited<ReturnType<typeof reader.prepareTurn<"openai">>>;
        try {
          turn = await reader.prepareTurn("t", { format: "openai" });
        } catch (error) {
          if (!(error instanceof BudgetInfeasibleError || error instanceof ClearanceError)) throw error;
          expect(await stores.calls.list("t")).toEqual([]);
          expect(await stores.plans.versions("t")).toEqual([]);
          return;
        }
        if (hidden.length > 0) stubbedTurns++;
        expect(turn.prompt.tokenCount).toBeLessThanOrEqual(availableForPrompt(budget));
        const json = JSON.stringify(turn.request);
        for (const i of hidden) expect(json, `message ${i}`).not.toContain(marker(i));
        expect(validateProviderRequest("openai", turn.request)).toEqual([]);
        expect((await reader.replay(turn.callId)).ok).toBe(true);
      }),
      fcParams(120),
    );
    // The property ran on turns that did withhold content, not only on ones every reader may see.
    expect(stubbedTurns).toBeGreaterThan(0);
  });
});

describe("clearance through the real collapse and externalization strategies", () => {
  const counter = simpleCounter();
  const bulk = "row ".repeat(200);
  // A public call answered by a public result and by one that names no class (so `internal`).
  const log = ThreadLog.from("t", [
    { id: "u", role: "user", parts: [text("look it up")], meta: { sensitivity: "public" } },
    {
      id: "a",
      role: "assistant",
      parts: [call("c1", '{"q":"open"}', "search"), call("c2", '{"q":"inner"}', "search")],
      meta: { sensitivity: "public" },
    },
    { id: "r1", role: "tool", parts: [result("c1", `public row ${bulk}`)], meta: { sensitivity: "public" } },
    { id: "r2", role: "tool", parts: [result("c2", `SECRET internal row ${bulk}`)] },
    ...[1, 2, 3].flatMap((n): MessageInput[] => [
      { id: `a${n}`, role: "assistant", parts: [call(`d${n}`, "{}", "ls")], meta: { sensitivity: "public" } },
      {
        id: `r${n}x`,
        role: "tool",
        parts: [result(`d${n}`, `listing ${n}`)],
        meta: { sensitivity: "public" },
      },
    ]),
    { id: "z", role: "assistant", parts: [text("done")], meta: { sensitivity: "public" } },
  ]);

  async function check(strategy: Strategy): Promise<PlanAction> {
    const { plan } = await runStrategy(strategy, log, emptyPlan("t"));
    const action = plan.actions.find((a) => a.span.includes("r2"));
    expect(action, "the strategy moved the group out").toBeDefined();
    const record = action!.record as { readonly sensitivity?: Sensitivity };
    expect(record.sensitivity).toBe("internal");
    const rendered = renderPrompt(log, plan, { counter });
    const reader = { clearance: "public" as const, policy: "placeholder" as const };
    const prompt = withholdAboveClearance(rendered, log, reader, { counter, what: "render" });
    for (const format of FORMATS)
      expect(JSON.stringify(toProviderRequest(format, prompt))).not.toContain("SECRET");
    return action!;
  }

  it("a collapse line of a group with an unmarked message is internal, withheld from a public reader", async () => {
    await check(createToolResultCollapse({ keepGroups: 1, minGroupTokens: 1, maxItemChars: 400 }));
  });

  it("an artifact and pointer of such a group are internal: a public reader gets neither", async () => {
    const store = createMemoryArtifactStore();
    const action = await check(
      createExternalization({ store, tenant: "x", minChars: 100, keepRecentGroups: 1 }),
    );
    if (action.record.kind !== "externalize") throw new Error("expected an externalize record");
    const head = await store.head(action.record.artifactId, { tenant: "x", clearance: "restricted" });
    expect(head?.sensitivity).toBe("internal");
    await expect(
      store.get(action.record.artifactId, { tenant: "x", clearance: "public" }),
    ).rejects.toBeInstanceOf(AccessDeniedError);
  });
});
