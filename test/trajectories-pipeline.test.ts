/**
 * Every shared trajectory simulated turn by turn through the default pipeline at 50 %, 25 % and 10 % of its
 * full size: every request that is sent fits the budget by the renderer's count and is valid for all three
 * providers; a run fails only when the content the fallback protects alone exceeds the budget, and then the
 * previous plan stays in force. And one real run whose last tool result alone is over a quarter of the budget
 * goes through a pipeline of the oversized excerpt alone: that result is cut to head and tail, nothing else moves.
 */
import { describe, expect, it } from "vitest";
import { simulateTurns } from "../benchmarks/support/simulate-turns.js";
import { createDefaultPipeline } from "../src/compaction/default-pipeline.js";
import { pipelineFromConfig } from "../src/compaction/pipeline-config.js";
import { parseTranscript } from "../src/log/import-jsonl.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { emptyPlan } from "../src/plan/compaction-plan.js";
import { parsePlan, serializePlan } from "../src/plan/plan-schema.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import { createTokenizer } from "../src/tokens/create-tokenizer.js";
import { createMessageCounter } from "../src/tokens/message-counter.js";
import {
  listTrajectories,
  trajectoriesAvailable,
  trajectoriesSkipReason,
  trajectory,
} from "./support/trajectories.js";

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

describe.skipIf(!trajectoriesAvailable)(
  `oversized results of real runs ${trajectoriesSkipReason ?? ""}`,
  () => {
    const tokenCounter = createMessageCounter(createTokenizer({ model: "gpt-4o" }), "openai");

    it("mini-swe-agent/django__django-15629: the 152 KB last result is excerpted, every earlier message stays", async () => {
      const messages = parseTranscript(trajectory("mini-swe-agent/django__django-15629.jsonl").text);
      const log = ThreadLog.from("t", messages);
      const last = log.at(log.length - 1)!;
      expect(last.role).toBe("tool");
      expect(JSON.stringify(last.parts).length).toBeGreaterThan(150_000);
      const whole = renderPrompt(log, emptyPlan("t"), { counter: tokenCounter });
      const bigTokens = whole.messages[whole.messages.length - 1]!.tokens;
      const rest = whole.tokenCount - bigTokens;
      // A budget the rest fits in, and the whole does not: the big result alone is over a quarter of it.
      const contextWindow = Math.ceil((rest + bigTokens / 2) / 0.99);
      const { pipeline, budget } = pipelineFromConfig({
        budget: { contextWindow, reserveOutput: 0, safetyMargin: 0 },
        strategies: [{ use: "oversizedExcerpt" }],
        fallback: false,
      });
      expect(bigTokens).toBeGreaterThan(contextWindow * 0.25);
      const out = await pipeline.run({ log, plan: emptyPlan("t"), counter: tokenCounter, budget: budget! });
      expect(out.ok).toBe(true);
      if (!out.ok) return;
      expect(out.prompt.tokenCount).toBeLessThanOrEqual(contextWindow);
      // Nothing was dropped or summarized: every message is still there, in order.
      const sources = out.prompt.messages.flatMap((m) => m.provenance.sourceIds);
      expect(sources).toEqual(log.messages.map((m) => m.id));
      const kinds = out.prompt.messages.map((m) => m.provenance.kind);
      expect(kinds).toEqual([...log.messages.slice(0, -1).map(() => "original"), "cleared"]);
      const cutAction = out.plan.actions.find((a) => a.strategy === "oversizedExcerpt")!;
      expect(cutAction.span).toEqual([last.id]);
      const rendered = out.prompt.messages[out.prompt.messages.length - 1]!;
      const content = (rendered.parts[0] as { content: string }).content;
      const original = (last.parts[0] as { content: string }).content;
      const callId = (last.parts[0] as { callId: string }).callId;
      // The marker names the way back, and how many key lines of the cut middle follow it, if any.
      expect(content).toMatch(
        new RegExp(
          `tokens\\) omitted; recall callId ${JSON.stringify(callId)}(; \\d+ key lines? of it below)? …\\]`,
        ),
      );
      expect(original.startsWith(content.slice(0, 200))).toBe(true);
      expect(original.endsWith(content.slice(-200))).toBe(true);
      expect(rendered.tokens).toBeLessThanOrEqual(Math.floor(contextWindow * 0.125));
      // Replay: the plan renders the same bytes after a JSON round trip.
      const again = renderPrompt(log, parsePlan(serializePlan(out.plan)), { counter: tokenCounter });
      expect(again.hash).toBe(out.prompt.hash);
    });
  },
);
