import { describe, expect, it } from "vitest";
import { call, result, text } from "../../test/support/builders.js";
import { simpleCounter } from "../../test/support/simple-counter.js";
import {
  BudgetInfeasibleError,
  RenderValidationError,
  SummarizerError,
  ValidationError,
} from "../errors/ledger-error.js";
import type { MessageInput } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import { type CompactionPlan, emptyPlan, extendPlan, type PlanAction } from "../plan/compaction-plan.js";
import { validatePlan } from "../plan/validate-plan.js";
import { suggestCacheBreakpoints } from "../render/cache-breakpoints.js";
import { toProviderRequest } from "../render/provider-rules.js";
import { renderPrompt } from "../render/render-prompt.js";
import { toolsForFormat } from "../render/tool-definitions.js";
import { createHardFallback } from "../strategies/hard-fallback.js";
import type { Strategy, StrategyContext } from "../strategies/strategy.js";
import { createSummarization } from "../strategies/summarization.js";
import type { Summarizer } from "../strategies/summarizer.js";
import { createTokenBudget } from "../tokens/token-budget.js";
import { createPipeline } from "./pipeline.js";
import { providerProblems } from "./pipeline-outcome.js";
import type { PipelineInput, PipelineStrategy } from "./pipeline-types.js";

const counter = simpleCounter();

/** A system prompt, a user request, then `n` tool rounds with results of `size` characters. */
function agentRun(n: number, size = 400): MessageInput[] {
  const out: MessageInput[] = [
    { id: "sys", role: "system", parts: [text("You are a careful agent.")] },
    { id: "u0", role: "user", parts: [text("Fix the failing test in the parser module.")] },
  ];
  for (let i = 0; i < n; i++) {
    out.push({ id: `a${i}`, role: "assistant", parts: [text(`step ${i}`), call(`c${i}`, `{"i":${i}}`)] });
    out.push({ id: `t${i}`, role: "tool", parts: [result(`c${i}`, `${"x".repeat(size - 8)} line ${i}`)] });
  }
  return out;
}

function budgetOf(tokens: number) {
  return createTokenBudget({ contextWindow: tokens, reserveOutput: 0, safetyMargin: 0 });
}

function input(
  log: ThreadLog,
  tokens: number,
  plan: CompactionPlan = emptyPlan(log.threadId),
): PipelineInput {
  return { log, plan, counter, budget: budgetOf(tokens) };
}

const fixedSummarizer = (text = "the agent ran the test suite"): Summarizer => ({
  id: "fixed",
  promptVersion: "1",
  summarize: async () => ({ text, structured: { toolOutcomes: [text] } }),
});

/** A free strategy that clears the result bodies of the given tool messages. */
function clearing(ids: ReadonlyArray<string>, name = "clearing"): Strategy {
  return {
    name,
    cost: "free",
    kinds: ["clear"],
    propose: () => ({
      actions: [{ kind: "clear", span: ids, record: { kind: "clear" }, strategy: name, reason: "test" }],
    }),
  };
}

describe("createPipeline", () => {
  const log = ThreadLog.from("t", agentRun(20));
  const full = renderPrompt(log, emptyPlan("t"), { counter }).tokenCount;

  it("changes nothing when the history fits and no free strategy gains enough: same plan (toBe)", async () => {
    const plan = emptyPlan("t");
    const out = await createPipeline({ strategies: [] }).run(input(log, full + 10, plan));
    expect(out.ok).toBe(true);
    expect(out.plan).toBe(plan);
    expect(out.ok && out.changed).toBe(false);
  });

  it("fits a tight budget with summarization and the fallback, by the renderer's count, in one new version", async () => {
    const pipeline = createPipeline({ strategies: [createSummarization({ summarizer: fixedSummarizer() })] });
    const out = await pipeline.run(input(log, Math.floor(full / 3)));
    expect(out.ok).toBe(true);
    if (!out.ok) return;
    expect(out.plan.version).toBe(1);
    expect(validatePlan(out.plan, log)).toEqual([]);
    expect(out.prompt.tokenCount).toBeLessThanOrEqual(Math.floor(full / 3));
    expect(out.report.triggered).toBe(true);
    // Chunked: it aims below the target so the next turns need no compaction.
    expect(out.report.tokensAfter).toBeLessThanOrEqual(out.report.goal);
    expect(out.report.actionsByKind.summarize).toBeGreaterThan(0);
  });

  it("skips model strategies while under target, runs free ones", async () => {
    const calls: string[] = [];
    const spy = (name: string, cost: "free" | "model"): Strategy => ({
      name,
      cost,
      kinds: ["clear"],
      propose: () => {
        calls.push(name);
        return { actions: [] };
      },
    });
    const out = await createPipeline({ strategies: [spy("free", "free"), spy("model", "model")] }).run(
      input(log, full + 100),
    );
    expect(calls).toEqual(["free"]);
    expect(out.report.steps.map((s) => s.outcome)).toEqual(["nothing", "skipped"]);
  });

  it("runs a model strategy under target when it says it is due (count threshold)", async () => {
    const summarize = createSummarization({ summarizer: fixedSummarizer(), target: 4, threshold: 2 });
    const out = await createPipeline({ strategies: [summarize] }).run(input(log, full * 2));
    expect(out.ok && out.changed).toBe(true);
    expect(out.report.steps[0]!.outcome).toBe("applied");
  });

  it("defers small free gains while under target and applies them once over", async () => {
    const strategy = clearing(["t0"]);
    const under = await createPipeline({ strategies: [strategy], minGain: 10_000 }).run(input(log, full + 1));
    expect(under.report.steps[0]!.outcome).toBe("deferred");
    expect(under.ok && under.changed).toBe(false);
    const over = await createPipeline({ strategies: [strategy], minGain: 10_000, fallback: false }).run(
      input(log, full - 1),
    );
    expect(over.report.steps[0]!.outcome).toBe("applied");
  });

  it("rejects a proposal that would orphan a call, and one of a kind the strategy did not declare", async () => {
    const orphaning: Strategy = {
      name: "orphaning",
      cost: "free",
      kinds: ["drop"],
      propose: () => ({
        actions: [
          { kind: "drop", span: ["a3"], record: { kind: "drop", reason: "x" }, strategy: "o", reason: "x" },
        ],
      }),
    };
    const sneaky: Strategy = { ...clearing(["t1"], "sneaky"), kinds: ["drop"] };
    const out = await createPipeline({ strategies: [orphaning, sneaky] }).run(input(log, full + 100));
    expect(out.report.steps.map((s) => s.outcome)).toEqual(["rejected", "rejected"]);
    expect(out.report.steps[1]!.detail).toContain("does not declare");
    expect(out.ok && out.changed).toBe(false);
  });

  it("checks providers against where compaction started: a thread Anthropic refuses anyway does not fail the run", async () => {
    // Only a system prompt: valid for OpenAI Chat, never for Anthropic (no user message) whatever the plan.
    const lone = ThreadLog.from("t", [{ id: "s", role: "system", parts: [text("be brief")] }]);
    const out = await createPipeline({ strategies: [] }).run(input(lone, 1_000));
    expect(out.ok).toBe(true);
    // A request made invalid by compaction is still a problem; one that was invalid before is not.
    const withUser = ThreadLog.from("t", [
      { id: "s", role: "system", parts: [text("be brief")] },
      { id: "u", role: "user", parts: [text("hello")] },
    ]);
    const valid = renderPrompt(withUser, emptyPlan("t"), { counter });
    const invalid = renderPrompt(lone, emptyPlan("t"), { counter });
    expect(providerProblems(["openai", "anthropic"], invalid, () => valid)).toMatch(/^anthropic: /);
    expect(providerProblems(["openai", "anthropic"], invalid, () => invalid)).toBeUndefined();
    expect(providerProblems(["openai", "anthropic"], valid, () => invalid)).toBeUndefined();
  });

  it("returns the request body it is asked for, built from its prompt and valid for its format", async () => {
    const tools = [{ name: "grep", description: "search", parameters: { type: "object" } }];
    const pipeline = createPipeline({ strategies: [clearing(["t0", "t1"])] });
    const spec = { format: "anthropic", tools, cacheBreakpoints: true } as const;
    const out = await pipeline.run({ ...input(log, Math.floor(full * 0.99)), request: spec });
    expect(out.ok && out.changed).toBe(true);
    if (!out.ok) return;
    const body = toProviderRequest("anthropic", out.prompt, {
      cacheBreakpoints: suggestCacheBreakpoints(out.prompt),
    });
    expect(out.request).toEqual({ ...body, tools: toolsForFormat("anthropic", tools) });
    const plain = await pipeline.run(input(log, full + 10));
    expect(plain.ok && plain.request).toBeUndefined();
  });

  it("fails a run whose request its own format refuses, keeping the plan", async () => {
    // Only a system prompt: the run passes its format checks (no plan could fix it), the Anthropic request not.
    const lone = ThreadLog.from("t", [{ id: "s", role: "system", parts: [text("be brief")] }]);
    const pipeline = createPipeline({ strategies: [] });
    const plan = emptyPlan("t");
    const out = await pipeline.run({ ...input(lone, 1_000, plan), request: { format: "anthropic" } });
    expect(out.ok).toBe(false);
    expect(out.plan).toBe(plan);
    expect(!out.ok && out.error).toBeInstanceOf(RenderValidationError);
    const openai = await pipeline.run({ ...input(lone, 1_000, plan), request: { format: "openai" } });
    expect(openai.ok).toBe(true);
    if (openai.ok) expect(openai.request).toEqual(toProviderRequest("openai", openai.prompt));
  });

  it("a failing summarizer leaves the plan unchanged, is reported, and never becomes the summary", async () => {
    const failing: Summarizer = {
      id: "down",
      promptVersion: "1",
      summarize: async () => {
        throw new SummarizerError("down", "server_error", "HTTP 500 Internal Server Error");
      },
    };
    const pipeline = createPipeline({
      strategies: [createSummarization({ summarizer: failing })],
      fallback: false,
    });
    const plan = emptyPlan("t");
    const out = await pipeline.run(input(log, Math.floor(full / 2), plan));
    expect(out.ok).toBe(false);
    expect(out.plan).toBe(plan);
    expect(out.report.steps[0]!.outcome).toBe("failed");
    expect(out.report.steps[0]!.detail).toContain("HTTP 500");
    if (!out.ok) {
      expect(out.error).toBeInstanceOf(BudgetInfeasibleError);
      // The summarizer's reason comes first; the budget is its consequence.
      expect(out.error.message).toMatch(
        /^summarize failed \(.*HTTP 500 Internal Server Error.*\), so the history is still over/,
      );
      expect(out.error.cause).toBeInstanceOf(SummarizerError);
    }
  });

  it("an empty summary is a failure, not a commit", async () => {
    const pipeline = createPipeline({
      strategies: [createSummarization({ summarizer: fixedSummarizer("   ") })],
      fallback: false,
    });
    const out = await pipeline.run(input(log, Math.floor(full / 2)));
    expect(out.report.steps[0]!.outcome).toBe("failed");
    expect(JSON.stringify(out.plan)).not.toContain("summarize");
  });

  it("cools a repeatedly failing model strategy down for a few runs, then tries again", async () => {
    let attempts = 0;
    const flaky: Summarizer = {
      id: "flaky",
      promptVersion: "1",
      summarize: async () => {
        attempts++;
        throw new SummarizerError("flaky", "rate_limited", "429");
      },
    };
    const pipeline = createPipeline({
      strategies: [createSummarization({ summarizer: flaky })],
      maxAttempts: 2,
      failureCooldown: 2,
    });
    const tight = input(log, Math.floor(full / 2));
    await pipeline.run(tight);
    expect(attempts).toBe(2);
    const second = await pipeline.run(tight);
    expect(second.report.steps[0]!.outcome).toBe("skipped");
    await pipeline.run(tight);
    expect(attempts).toBe(2);
    await pipeline.run(tight);
    expect(attempts).toBe(4);
  });

  it("the fallback's infeasible budget is a typed failure naming by how much", async () => {
    const out = await createPipeline({ strategies: [] }).run(input(log, 20));
    expect(out.ok).toBe(false);
    if (out.ok) return;
    expect(out.error).toBeInstanceOf(BudgetInfeasibleError);
    expect(out.error.message).toMatch(/over by \d+/);
  });

  it("injections that overflow their reserve fail loudly", async () => {
    const budget = createTokenBudget({
      contextWindow: full * 2,
      reserveOutput: 0,
      safetyMargin: 0,
      injectionReserve: 5,
    });
    const out = await createPipeline({ strategies: [] }).run({
      log,
      plan: emptyPlan("t"),
      counter,
      budget,
      injections: [{ text: "a long retrieved document ".repeat(20) }],
    });
    expect(out.ok).toBe(false);
    if (!out.ok) expect(out.error.message).toContain("reserve");
  });

  it("runs a plain function as a custom strategy exactly like a built-in", async () => {
    function clearFirstResult(ctx: StrategyContext): PlanAction[] {
      return [
        { kind: "clear", span: [ctx.log.at(3)!.id], record: { kind: "clear" }, strategy: "fn", reason: "x" },
      ];
    }
    const out = await createPipeline({ strategies: [clearFirstResult], minGain: 0 }).run(
      input(log, full + 1),
    );
    expect(out.report.steps[0]).toMatchObject({ strategy: "clearFirstResult", outcome: "applied" });
    expect(out.ok && out.prompt.messages[3]!.provenance.kind).toBe("cleared");
  });

  it("rejects bad options and duplicate names with the field", () => {
    expect(() => createPipeline({ strategies: [], goalRatio: 2 })).toThrow(ValidationError);
    // 0 would aim every compaction at an empty history; minGain is a whole number of tokens.
    expect(() => createPipeline({ strategies: [], goalRatio: 0 })).toThrow(/goalRatio must be more than 0/);
    expect(() => createPipeline({ strategies: [], goalRatio: Number.NaN })).toThrow(/goalRatio/);
    for (const minGain of [-5, Number.NaN, 1.5]) {
      expect(() => createPipeline({ strategies: [], minGain })).toThrow(/minGain must be a whole number/);
    }
    expect(createPipeline({ strategies: [], goalRatio: 1, minGain: 0 }).strategies).toEqual([]);
    const twice = [clearing(["t0"]), clearing(["t1"])] as PipelineStrategy[];
    expect(() => createPipeline({ strategies: twice })).toThrow(/strategies\[1\]\.name/);
    expect(() => createHardFallback({ protect: "everything" } as never)).toThrow(/protect/);
  });

  it("keeps earlier decisions turn by turn: each new plan extends the last one", async () => {
    const pipeline = createPipeline({ strategies: [createSummarization({ summarizer: fixedSummarizer() })] });
    const messages = agentRun(40);
    let plan = emptyPlan("t");
    let previousActions: ReadonlyArray<PlanAction> = [];
    for (let n = 10; n <= messages.length; n += 6) {
      const grown = ThreadLog.from("t", messages.slice(0, n));
      const out = await pipeline.run(input(grown, Math.floor(full / 3), plan));
      expect(out.ok).toBe(true);
      if (!out.ok) return;
      expect(out.plan.actions.slice(0, previousActions.length)).toEqual(previousActions);
      plan = out.plan;
      previousActions = plan.actions;
    }
  });

  it("keeps summarizing a thread whose plan summarized the task before the task was protected", async () => {
    const later: MessageInput = { id: "u1", role: "user", parts: [text("Now update the docs.")] };
    const log = ThreadLog.from("t", [...agentRun(12), later]);
    const old: PlanAction = {
      kind: "summarize",
      span: ["u0", "a0", "t0", "a1", "t1"],
      record: { kind: "summarize", summary: "older", summarizerId: "fixed", promptVersion: "1" },
      strategy: "summarize",
      reason: "an older plan",
    };
    const plan = extendPlan(emptyPlan("t"), [old], log.length);
    const pipeline = createPipeline({
      strategies: [createSummarization({ summarizer: fixedSummarizer(), minSpanGroups: 1 })],
      fallback: false,
    });
    const out = await pipeline.run(input(log, 600, plan));
    expect(out.ok, JSON.stringify(out.report.steps) + (out.ok ? "" : out.error.message)).toBe(true);
    expect(out.report.steps.find((s) => s.strategy === "summarize")?.outcome).toBe("applied");
  });
});
