/**
 * The pipeline's promise, on random logs and budgets: when the protected content (system, pinned, pending calls,
 * the last user turn) fits, the request fits the budget by the renderer's own count and obeys every provider's
 * rules; when it does not, the run fails with a typed error and the previous plan stays. Strategies include ones
 * that fail, return garbage or propose invalid actions, to show that nothing bad is ever committed.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { floorTokens } from "../benchmarks/support/simulate-turns.js";
import { createPipeline } from "../src/compaction/pipeline.js";
import type { PipelineStrategy } from "../src/compaction/pipeline-types.js";
import { BudgetInfeasibleError, RenderValidationError, SummarizerError } from "../src/errors/ledger-error.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { emptyPlan } from "../src/plan/compaction-plan.js";
import { validatePlan } from "../src/plan/validate-plan.js";
import { toProviderRequest, validateProviderRequest } from "../src/render/provider-rules.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import type { Strategy } from "../src/strategies/strategy.js";
import { createSummarization } from "../src/strategies/summarization.js";
import type { Summarizer } from "../src/strategies/summarizer.js";
import { createTokenBudget } from "../src/tokens/token-budget.js";
import { arbitraryBatches, fcParams } from "./support/arbitrary-log.js";
import { simpleCounter } from "./support/simple-counter.js";

const counter = simpleCounter();
const RUNS = 300;

/** A summarizer that, by a script, succeeds, fails, or returns an empty text. */
function scriptedSummarizer(script: ReadonlyArray<"ok" | "fail" | "empty">): Summarizer {
  let i = 0;
  return {
    id: "scripted",
    promptVersion: "1",
    summarize: async (request) => {
      const mode = script[i++ % script.length] ?? "ok";
      if (mode === "fail") throw new SummarizerError("scripted", "server_error", "HTTP 500");
      if (mode === "empty") return { text: "", structured: {} };
      return { text: `${request.messages.length} messages: tools ran`, structured: {} };
    },
  };
}

/** A strategy that proposes a drop of one random message: often an orphaning split the pipeline must reject. */
function vandal(pick: number): Strategy {
  return {
    name: "vandal",
    cost: "free",
    kinds: ["drop"],
    propose: ({ log }) => {
      if (log.length === 0) return { actions: [] };
      const id = log.at(pick % log.length)!.id;
      return {
        actions: [
          {
            kind: "drop",
            span: [id],
            record: { kind: "drop", reason: "x" },
            strategy: "vandal",
            reason: "x",
          },
        ],
      };
    },
  };
}

describe("pipeline (property)", () => {
  it("turn by turn: fits by the renderer's count and is valid for every provider, or fails typed with the plan kept", async () => {
    await fc.assert(
      fc.asyncProperty(
        arbitraryBatches(),
        fc.integer({ min: 30, max: 600 }),
        fc.array(fc.constantFrom<"ok" | "fail" | "empty">("ok", "ok", "fail", "empty"), {
          minLength: 1,
          maxLength: 4,
        }),
        fc.nat(),
        fc.boolean(),
        async (batches, tokens, script, pick, withVandal) => {
          const strategies: PipelineStrategy[] = [
            createSummarization({ summarizer: scriptedSummarizer(script), minSpanGroups: 1 }),
          ];
          if (withVandal) strategies.unshift(vandal(pick));
          const pipeline = createPipeline({ strategies });
          const budget = createTokenBudget({ contextWindow: tokens, reserveOutput: 0, safetyMargin: 0 });
          let log = ThreadLog.empty("t");
          let plan = emptyPlan("t");
          for (const batch of batches) {
            log = log.append(batch);
            const out = await pipeline.run({ log, plan, counter, budget });
            if (!out.ok) {
              expect(out.plan).toBe(plan);
              if (log.messages.every((m) => m.role !== "user")) {
                // No user message at all: what is left may be no request a provider takes (nothing but a system
                // prompt, a lone empty assistant message), or too big. Either way: typed, and the plan is kept.
                expect(
                  out.error instanceof RenderValidationError || out.error instanceof BudgetInfeasibleError,
                ).toBe(true);
                continue;
              }
              expect(out.error).toBeInstanceOf(BudgetInfeasibleError);
              // Independently of the fallback: even its own rules (last turn kept, tool bodies stubbed) do not fit.
              expect(floorTokens(log, counter, "lastTurn", true)).toBeGreaterThan(tokens);
              continue;
            }
            expect(validatePlan(out.plan, log)).toEqual([]);
            expect(out.prompt.tokenCount).toBeLessThanOrEqual(tokens);
            // An independent render of the committed plan agrees byte for byte (hash) with what was returned.
            expect(renderPrompt(log, out.plan, { counter }).hash).toBe(out.prompt.hash);
            // Valid for every provider, unless the thread was invalid for that provider before this run too
            // (nothing but a system prompt: no plan makes that an Anthropic request); compaction never breaks one.
            const before = renderPrompt(log, plan, { counter });
            for (const format of ["openai", "responses", "anthropic"] as const) {
              const problems = validateProviderRequest(format, toProviderRequest(format, out.prompt));
              if (problems.length === 0) continue;
              expect(validateProviderRequest(format, toProviderRequest(format, before))).not.toEqual([]);
              expect(log.messages.some((m) => m.role === "user")).toBe(false);
            }
            expect(JSON.stringify(out.plan)).not.toContain("HTTP 500");
            plan = out.plan;
          }
        },
      ),
      fcParams(RUNS),
    );
  });
});
