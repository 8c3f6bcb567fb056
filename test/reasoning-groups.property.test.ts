/**
 * A reasoning-only assistant message right before the message holding the calls it led to (the shape streamed
 * Responses and the Microsoft Agent Framework produce) belongs to those calls' group: on random threads of that
 * shape, whatever the windows and the fallback keep, no rendered request holds the calls without their reasoning
 * (or the reasoning without its calls), and the Anthropic request passes the thinking rule with thinking enabled;
 * with reasoning retention too, which leaves out the reasoning of turns before the one in progress.
 * Reasoning that arrives alone is pending until the next message: a plan made then stays valid when its calls
 * join it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createPipeline } from "../src/compaction/pipeline.js";
import type { PipelineStrategy } from "../src/compaction/pipeline-types.js";
import type { Message, MessageInput } from "../src/log/message.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { emptyPlan, extendPlan } from "../src/plan/compaction-plan.js";
import { validatePlan } from "../src/plan/validate-plan.js";
import { toProviderRequest, validateProviderRequest } from "../src/render/provider-rules.js";
import { createHardFallback } from "../src/strategies/hard-fallback.js";
import { createReasoningRetention } from "../src/strategies/reasoning-retention.js";
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
      // The reasoning arrives alone (streamed), so a turn is compacted while it ends the log.
      streamed: fc.boolean(),
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
      const thought: MessageInput = {
        role: "assistant",
        parts: [{ type: "reasoning", text: step.thought, signature: `sig${n}` }],
      };
      if (step.streamed) batches.push([thought]);
      batches.push([
        ...(step.streamed ? [] : [thought]),
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
        fc.boolean(),
        fc.integer({ min: 60, max: 900 }),
        async (turns, strategy, retention, tokens) => {
          // Reasoning retention leaves out the reasoning of older turns on purpose (not of the turn in progress).
          const strategies = [
            ...(retention ? [createReasoningRetention({ keepTurns: 1 })] : []),
            ...(strategy === undefined ? [] : [strategy]),
          ];
          const pipeline = createPipeline({ strategies, fallback: createHardFallback() });
          const budget = createTokenBudget({ contextWindow: tokens, reserveOutput: 0, safetyMargin: 0 });
          let log = ThreadLog.empty("t");
          let plan = emptyPlan("t");
          for (const batch of threadOf(turns)) {
            log = log.append(batch);
            const out = await pipeline.run({ log, plan, counter, budget });
            if (!out.ok || log.lastUserSeq < 0) continue;
            plan = out.plan;
            // What the request really carries of each message: its own parts (a drop marker or a pending stub
            // carries none of them), or a summary or pointer standing for it.
            const verbatim = out.prompt.messages.filter(
              (m) => m.provenance.kind === "original" || m.provenance.kind === "cleared",
            );
            const sentParts = verbatim.flatMap((m) => m.parts);
            const condensed = new Set(
              out.prompt.messages.flatMap((m) =>
                m.provenance.kind === "summary" || m.provenance.kind === "pointer"
                  ? [...m.provenance.sourceIds]
                  : [],
              ),
            );
            const reasoningSent = (m: Message): boolean =>
              m.parts.every((p) =>
                sentParts.some(
                  (q) => q.type === "reasoning" && p.type === "reasoning" && q.signature === p.signature,
                ),
              );
            const callsSent = (m: Message): boolean =>
              m.parts.every(
                (p) =>
                  p.type !== "tool_call" ||
                  sentParts.some((q) => q.type === "tool_call" && q.callId === p.callId),
              );
            for (const m of log.messages) {
              if (!isReasoningOnly(m)) continue;
              const next = log.at(m.seq + 1);
              if (next === undefined) continue;
              expect(log.groupIndexOf(next.seq)).toBe(log.groupIndexOf(m.seq));
              const why = `${m.id} / ${next.id}`;
              // Reasoning is never sent without the calls it led to; the calls of the turn in progress (and of every
              // turn, without reasoning retention) are never sent without their reasoning.
              if (reasoningSent(m)) expect(callsSent(next), why).toBe(true);
              if (!retention || m.seq > log.lastUserSeq) expect(reasoningSent(m), why).toBe(callsSent(next));
              // Condensed together or not at all.
              expect(condensed.has(m.id), why).toBe(condensed.has(next.id));
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

  it("a plan valid when reasoning ends the log stays valid when its calls join it", () => {
    fc.assert(
      fc.property(fc.array(turnArb, { minLength: 1, maxLength: 3 }), fc.nat(), (turns, pick) => {
        const batches = threadOf(turns);
        let log = ThreadLog.empty("t");
        for (const [k, batch] of batches.entries()) {
          log = log.append(batch);
          // Drop any one group compaction may touch now (none is pending), then let the log grow.
          const movable = log.groups.filter((g) => !g.pending && g.kind !== "system");
          if (movable.length === 0) continue;
          const group = movable[(pick + k) % movable.length]!;
          const drop = {
            kind: "drop" as const,
            span: group.messageIds,
            record: { kind: "drop" as const, reason: "test" },
            strategy: "test",
            reason: "test",
          };
          const plan = extendPlan(emptyPlan("t"), [drop], log.length);
          expect(validatePlan(plan, log)).toEqual([]);
          let grown = log;
          for (const later of batches.slice(k + 1)) {
            grown = grown.append(later);
            // A fresh copy: the validator trusts a plan on logs extending one it already found it valid for.
            const copy = ThreadLog.from(
              "t",
              grown.messages.map(({ id, role, parts, meta }) => ({ id, role, parts, meta })),
            );
            expect(validatePlan(plan, copy), `dropping ${group.messageIds} at length ${log.length}`).toEqual(
              [],
            );
          }
        }
      }),
      fcParams(100),
    );
  });
});
