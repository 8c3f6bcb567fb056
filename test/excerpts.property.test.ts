/**
 * Excerpted clears (key lines of old results, head-and-tail cuts of oversized messages) keep what a request must
 * keep: every call next to its result, provider validity, deterministic bytes, and the same render after a JSON
 * round trip of the plan. Set FC_SEED to replay a failure.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ThreadLog } from "../src/log/thread-log.js";
import { type CompactionPlan, emptyPlan } from "../src/plan/compaction-plan.js";
import { parsePlan, serializePlan } from "../src/plan/plan-schema.js";
import { validatePlan } from "../src/plan/validate-plan.js";
import { assertValid, toProviderRequest } from "../src/render/provider-rules.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import type { RenderedPrompt } from "../src/render/rendered-prompt.js";
import { createOversizedExcerpt } from "../src/strategies/oversized-excerpt.js";
import { createToolResultRetention } from "../src/strategies/tool-result-retention.js";
import { arbitraryLog, fcParams } from "./support/arbitrary-log.js";
import { simpleCounter } from "./support/simple-counter.js";
import { runStrategy } from "./support/strategy-context.js";

const counter = simpleCounter();

/** Every call is answered by the tool messages right after its assistant message, and every result by a call. */
function pairingProblems(prompt: RenderedPrompt): string[] {
  const problems: string[] = [];
  const { messages } = prompt;
  messages.forEach((m, i) => {
    if (m.role !== "assistant") return;
    const calls = m.parts.flatMap((p) => (p.type === "tool_call" ? [p.callId] : []));
    const answered: string[] = [];
    for (let j = i + 1; j < messages.length && messages[j]!.role === "tool"; j++) {
      for (const p of messages[j]!.parts) if (p.type === "tool_result") answered.push(p.callId);
    }
    for (const id of calls)
      if (!answered.includes(id)) problems.push(`call ${id} of message ${i} lost its result`);
    for (const id of answered)
      if (!calls.includes(id)) problems.push(`result ${id} after message ${i} has no call`);
  });
  return problems;
}

function valid(check: () => void): boolean {
  try {
    check();
    return true;
  } catch {
    return false;
  }
}

async function excerpted(log: ThreadLog, share: number, keepLast: number): Promise<CompactionPlan> {
  const full = renderPrompt(log, emptyPlan(log.threadId), { counter }).tokenCount;
  const target = Math.max(8, Math.floor(full / 2));
  const retention = createToolResultRetention({ default: { keepTurns: 1, keepLast, minChars: 0 } });
  const first = await runStrategy(retention, log, emptyPlan(log.threadId), { counter, target: full * 4 });
  const oversized = createOversizedExcerpt({ share, keepShare: share / 2, when: "always" });
  return (await runStrategy(oversized, log, first.plan, { counter, target })).plan;
}

describe("excerpted clears", () => {
  it("keep every call/result pair, stay provider-valid, render deterministically and survive a JSON round trip", async () => {
    let excerpts = 0;
    await fc.assert(
      fc.asyncProperty(
        arbitraryLog({ maxOps: 24 }),
        fc.double({ min: 0.02, max: 0.5, noNaN: true }),
        fc.integer({ min: 1, max: 3 }),
        async (log, share, keepLast) => {
          const plan = await excerpted(log, share, keepLast);
          expect(validatePlan(plan, log)).toEqual([]);
          for (const action of plan.actions) {
            if (action.kind === "clear") excerpts += action.record.excerpts?.length ?? 0;
          }
          const prompt = renderPrompt(log, plan, { counter });
          expect(pairingProblems(prompt)).toEqual([]);
          // What the log alone makes invalid (e.g. an empty log) is not the plan's doing.
          const unplanned = renderPrompt(log, emptyPlan(log.threadId), { counter });
          for (const format of ["openai", "responses", "anthropic"] as const) {
            if (!valid(() => assertValid(format, toProviderRequest(format, unplanned)))) continue;
            assertValid(format, toProviderRequest(format, prompt));
          }
          expect(renderPrompt(log, plan, { counter }).hash).toBe(prompt.hash);
          const replayed = parsePlan(JSON.parse(JSON.stringify(JSON.parse(serializePlan(plan)))));
          expect(replayed).toStrictEqual(plan);
          const again = renderPrompt(log, replayed, { counter });
          expect(again.hash).toBe(prompt.hash);
          expect(JSON.stringify(again.messages)).toBe(JSON.stringify(prompt.messages));
        },
      ),
      fcParams(200),
    );
    // The property is about excerpts: make sure the runs made some.
    expect(excerpts).toBeGreaterThan(20);
  });
});
