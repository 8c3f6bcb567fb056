/**
 * A reasoning-only assistant message right before the message holding the calls it led to (the shape streamed
 * Responses and the Microsoft Agent Framework produce) belongs to those calls' group: on random threads of that
 * shape, whatever the windows and the fallback keep, no rendered request holds the calls without their reasoning
 * (or the reasoning without its calls), and the Anthropic request passes the thinking rule with thinking enabled.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createPipeline } from "../src/compaction/pipeline.js";
import type { PipelineStrategy } from "../src/compaction/pipeline-types.js";
import type { Message, MessageInput } from "../src/log/message.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { emptyPlan } from "../src/plan/compaction-plan.js";
import { toProviderRequest, validateProviderRequest } from "../src/render/provider-rules.js";
import { createHardFallback } from "../src/strategies/hard-fallback.js";
import { createRollingWindow } from "../src/strategies/rolling-window.js";
import { createSlidingWindow } from "../src/strategies/sliding-window.js";
import { createTruncation } from "../src/strategies/truncation.js";
import { createTokenBudget } from "../src/tokens/token-budget.js";
import { fcParams } from "./support/arbitrary-log.js";
import { simpleCounter } from "./support/simple-counter.js";

const counter = simpleCounter();

const isReasoningOnly = (m: Message): boolean =>
  m.role === "assistant" && m.parts.length > 0 && m.parts.every((p) => p.type === "reasoning");

/** One user turn: a question, then steps of (signed reasoning-only message, calls, results), then an answer. */
const turnArb = fc.record({
  question: fc.string({ minLength: 1, maxLength: 40 }),
  steps: fc.array(
    fc.record({
      thought: fc.string({ minLength: 1, maxLength: 120 }),
      calls: fc.integer({ min: 1, max: 3 }),
      output: fc.string({ maxLength: 300 }),
      split: fc.boolean(),
    }),
    { minLength: 1, maxLength: 4 },
  ),
  answer: fc.option(fc.string({ minLength: 1, maxLength: 60 }), { nil: undefined }),
});

function threadOf(
  turns: ReadonlyArray<typeof turnArb extends fc.Arbitrary<infer T> ? T : never>,
): MessageInput[][] {
  let n = 0;
  const batches: MessageInput[][] = [[{ role: "system", parts: [{ type: "text", text: "be brief" }] }]];
  for (const turn of turns) {
    batches.push([{ role: "user", parts: [{ type: "text", text: turn.question || "q" }] }]);
    for (const step of turn.steps) {
      const ids = Array.from({ length: step.calls }, () => `call_${n++}`);
      const results = ids.map((callId) => ({ type: "tool_result" as const, callId, content: step.output }));
      batches.push([
        { role: "assistant", parts: [{ type: "reasoning", text: step.thought, signature: `sig${n}` }] },
        {
          role: "assistant",
          parts: ids.map((callId) => ({ type: "tool_call", callId, name: "bash", args: "{}" })),
        },
        ...(step.split
          ? results.map((r) => ({ role: "tool" as const, parts: [r] }))
          : [{ role: "tool" as const, parts: results }]),
      ]);
    }
    if (turn.answer !== undefined)
      batches.push([{ role: "assistant", parts: [{ type: "text", text: turn.answer }] }]);
  }
  return batches;
}

const strategyArb = fc.oneof(
  fc.integer({ min: 1, max: 4 }).map((k): PipelineStrategy => createSlidingWindow({ keepGroups: k })),
  fc.integer({ min: 1, max: 2 }).map((k): PipelineStrategy => createRollingWindow({ keepTurns: k })),
  fc
    .integer({ min: 1, max: 3 })
    .map((k): PipelineStrategy => createTruncation({ keepFirst: 1, keepLast: k })),
);

describe("reasoning-only messages (property)", () => {
  it("are never separated from the calls they led to by a window or the fallback", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(turnArb, { minLength: 1, maxLength: 4 }),
        fc.option(strategyArb, { nil: undefined }),
        fc.integer({ min: 60, max: 900 }),
        async (turns, strategy, tokens) => {
          const strategies = strategy === undefined ? [] : [strategy];
          const pipeline = createPipeline({ strategies, fallback: createHardFallback() });
          const budget = createTokenBudget({ contextWindow: tokens, reserveOutput: 0, safetyMargin: 0 });
          let log = ThreadLog.empty("t");
          let plan = emptyPlan("t");
          for (const batch of threadOf(turns)) {
            log = log.append(batch);
            const out = await pipeline.run({ log, plan, counter, budget });
            if (!out.ok || log.lastUserSeq < 0) continue;
            plan = out.plan;
            const sent = new Set(out.prompt.messages.flatMap((m) => [...m.provenance.sourceIds]));
            const shown = new Set(
              out.prompt.messages.flatMap((m) =>
                m.provenance.kind === "original" || m.provenance.kind === "cleared"
                  ? [...m.provenance.sourceIds]
                  : [],
              ),
            );
            for (const m of log.messages) {
              if (!isReasoningOnly(m)) continue;
              const next = log.at(m.seq + 1);
              if (next === undefined) continue;
              expect(log.groupIndexOf(next.seq)).toBe(log.groupIndexOf(m.seq));
              // Shown verbatim together, or condensed or dropped together.
              expect(shown.has(m.id), `${m.id} / ${next.id}`).toBe(shown.has(next.id));
              expect(sent.has(m.id)).toBe(sent.has(next.id));
            }
            const request = {
              ...toProviderRequest("anthropic", out.prompt),
              thinking: { type: "enabled" as const, budget_tokens: 1024 },
            };
            expect(validateProviderRequest("anthropic", request)).toEqual([]);
          }
        },
      ),
      fcParams(150),
    );
  });
});
