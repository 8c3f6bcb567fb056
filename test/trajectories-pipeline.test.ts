/**
 * Every shared trajectory simulated turn by turn through the default pipeline at 50 %, 25 % and 10 % of its
 * full size: every request that is sent fits the budget by the renderer's count and is valid for all three
 * providers; a run fails only when the content the fallback protects alone exceeds the budget, and then the
 * previous plan stays in force.
 */
import { describe, expect, it } from "vitest";
import { simulateTurns } from "../benchmarks/support/simulate-turns.js";
import { parseTranscript } from "../src/log/import-jsonl.js";
import { createDefaultPipeline } from "../src/strategies/default-pipeline.js";
import { createTokenizer } from "../src/tokens/create-tokenizer.js";
import { createMessageCounter } from "../src/tokens/message-counter.js";
import { listTrajectories, trajectoriesAvailable, trajectoriesSkipReason } from "./support/trajectories.js";

const counter = createMessageCounter(createTokenizer({ model: "gpt-4o" }), "openai");

describe.skipIf(!trajectoriesAvailable)(
  `trajectories through the default pipeline ${trajectoriesSkipReason ?? ""}`,
  () => {
    for (const file of listTrajectories()) {
      it(`${file.name}: every request at 50/25/10 % fits and is valid; failures only where nothing could fit`, async () => {
        const messages = parseTranscript(file.text);
        for (const share of [0.5, 0.25, 0.1]) {
          const result = await simulateTurns({ messages, counter, pipeline: createDefaultPipeline(), share });
          expect(result.violations, `${share}`).toEqual([]);
          expect(result.maxTokens).toBeLessThanOrEqual(result.budget);
          // The default fallback never drops the last user turn, so a request fails when that turn (tool bodies
          // stubbed), the system prompt and pending calls alone exceed the budget — and only then.
          expect(
            result.failures - result.protectedOverBudget,
            `${share}: ${result.failureMessages.join(" | ")}`,
          ).toBe(0);
          const lenient = createDefaultPipeline({ protect: "lastUserMessage" });
          const narrow = await simulateTurns({ messages, counter, pipeline: lenient, share });
          expect(narrow.violations).toEqual([]);
          // Protecting only the last user message, a run fails only where nothing at all could fit.
          expect(
            narrow.failures - narrow.unavoidable,
            `${share}: ${narrow.failureMessages.join(" | ")}`,
          ).toBe(0);
        }
      });
    }
  },
);
