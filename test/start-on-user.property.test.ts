/**
 * `startOn: "user"` (LangChain's turn-aligned cut) on the windows and the hard fallback: on random logs and
 * budgets, whatever is kept of a turn starts at its user message, so no answer is kept whose question went.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createPipeline } from "../src/compaction/pipeline.js";
import type { PipelineStrategy } from "../src/compaction/pipeline-types.js";
import type { LogView } from "../src/log/log-view.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { turnIndexOf } from "../src/log/turns.js";
import { emptyPlan } from "../src/plan/compaction-plan.js";
import type { RenderedPrompt } from "../src/render/rendered-prompt.js";
import { createHardFallback } from "../src/strategies/hard-fallback.js";
import { createSlidingWindow } from "../src/strategies/sliding-window.js";
import { createTruncation } from "../src/strategies/truncation.js";
import { createTokenBudget } from "../src/tokens/token-budget.js";
import { arbitraryBatches, fcParams } from "./support/arbitrary-log.js";
import { simpleCounter } from "./support/simple-counter.js";

const counter = simpleCounter();

/** Messages shown as themselves (verbatim or with cleared bodies) whose turn's user message is not sent at all. */
function orphanedAnswers(log: LogView, prompt: RenderedPrompt): string[] {
  const sent = new Set(prompt.messages.flatMap((m) => [...m.provenance.sourceIds]));
  const out: string[] = [];
  for (const m of prompt.messages) {
    if (m.provenance.kind !== "original" && m.provenance.kind !== "cleared") continue;
    for (const id of m.provenance.sourceIds) {
      const seq = log.seqOf(id)!;
      const message = log.at(seq)!;
      const group = log.groupAt(log.groupIndexOf(seq));
      // Protected messages stay whatever happens to their turn: system, pinned, pending calls.
      if (
        message.role === "user" ||
        message.role === "system" ||
        message.meta.pinned === true ||
        group.pending
      )
        continue;
      const turn = log.turns[turnIndexOf(log.turns, group.seqs[0]!)];
      const question = turn === undefined ? undefined : log.at(turn.startSeq);
      if (question?.role === "user" && !sent.has(question.id)) out.push(id);
    }
  }
  return out;
}

const windowArb = fc.oneof(
  fc.constant(undefined),
  fc
    .integer({ min: 1, max: 5 })
    .map((k): PipelineStrategy => createSlidingWindow({ keepGroups: k, startOn: "user" })),
  fc
    .integer({ min: 1, max: 4 })
    .map((k): PipelineStrategy => createTruncation({ keepFirst: 1, keepLast: k, startOn: "user" })),
);

describe("startOn: user (property)", () => {
  it("keeps no answer whose question was dropped, turn by turn on random logs and budgets", async () => {
    await fc.assert(
      fc.asyncProperty(
        arbitraryBatches(),
        windowArb,
        fc.integer({ min: 40, max: 800 }),
        async (batches, window, tokens) => {
          const pipeline = createPipeline({
            strategies: window === undefined ? [] : [window],
            fallback: createHardFallback({ startOn: "user" }),
          });
          const budget = createTokenBudget({ contextWindow: tokens, reserveOutput: 0, safetyMargin: 0 });
          let log = ThreadLog.empty("t");
          let plan = emptyPlan("t");
          for (const batch of batches) {
            log = log.append(batch);
            const out = await pipeline.run({ log, plan, counter, budget });
            if (!out.ok) continue;
            plan = out.plan;
            expect(orphanedAnswers(log, out.prompt)).toEqual([]);
          }
        },
      ),
      fcParams(200),
    );
  });

  it("a window keeps the turn of a call still pending whole, so the answer later keeps its question", async () => {
    // A user message arrives while the turn's calls are pending; the results come after it. A cut made then
    // must not drop the question of the calls' turn: the window does not see the pending group, and once
    // answered it would stay without its question.
    const batches = [
      [{ id: "m0", role: "user", parts: [{ type: "text", text: "massa euismod" }] }],
      [{ id: "m1", role: "user", parts: [{ type: "text", text: " " }] }],
      [{ id: "m2", role: "assistant", parts: [{ type: "text", text: "" }] }],
      [{ id: "m3", role: "system", parts: [{ type: "text", text: "augue" }] }],
      [
        {
          id: "m4",
          role: "assistant",
          parts: [
            { type: "tool_call", callId: "k1", name: "search", args: '{"q":"mi"}' },
            { type: "tool_call", callId: "k2", name: "search", args: '{"q":""}' },
          ],
        },
      ],
      [{ id: "m5", role: "system", parts: [{ type: "text", text: "x".repeat(1000) }] }],
      [{ id: "m6", role: "user", parts: [{ type: "text", text: "" }], meta: { pinned: true } }],
      [{ id: "m7", role: "tool", parts: [{ type: "tool_result", callId: "k1", content: "consequat" }] }],
      [{ id: "m8", role: "tool", parts: [{ type: "tool_result", callId: "k2", content: "" }] }],
    ] as const;
    const pipeline = createPipeline({
      strategies: [createSlidingWindow({ keepGroups: 1, startOn: "user" })],
      fallback: createHardFallback({ startOn: "user" }),
    });
    const budget = createTokenBudget({ contextWindow: 314, reserveOutput: 0, safetyMargin: 0 });
    let log = ThreadLog.empty("t");
    let plan = emptyPlan("t");
    let sent: string[] = [];
    for (const batch of batches) {
      log = log.append(batch);
      const out = await pipeline.run({ log, plan, counter, budget });
      expect(out.ok).toBe(true);
      if (!out.ok) return;
      plan = out.plan;
      expect(orphanedAnswers(log, out.prompt)).toEqual([]);
      sent = out.prompt.messages.flatMap((m) => [...m.provenance.sourceIds]);
    }
    expect(sent).toEqual(expect.arrayContaining(["m1", "m4", "m7", "m8"]));
  });

  it("without it, a cut can keep an answer whose question went (what the option is for)", async () => {
    const log = ThreadLog.from("t", [
      { id: "u1", role: "user", parts: [{ type: "text", text: "first question ".repeat(20) }] },
      { id: "a1", role: "assistant", parts: [{ type: "text", text: "first answer" }] },
      { id: "u2", role: "user", parts: [{ type: "text", text: "second question ".repeat(20) }] },
      { id: "a2", role: "assistant", parts: [{ type: "text", text: "second answer" }] },
      { id: "u3", role: "user", parts: [{ type: "text", text: "third" }] },
    ]);
    const run = async (strategy: PipelineStrategy) => {
      const pipeline = createPipeline({ strategies: [strategy], fallback: false, task: "none", minGain: 0 });
      const budget = createTokenBudget({ contextWindow: 10_000, reserveOutput: 0, safetyMargin: 0 });
      const out = await pipeline.run({ log, plan: emptyPlan("t"), counter, budget });
      if (!out.ok) throw out.error;
      return out.prompt.messages.flatMap((m) => [...m.provenance.sourceIds]);
    };
    // keepGroups 1 cuts between u2 and a2.
    expect(await run(createSlidingWindow({ keepGroups: 1 }))).toEqual(["a2", "u3"]);
    expect(await run(createSlidingWindow({ keepGroups: 1, startOn: "user" }))).toEqual(["u3"]);
    expect(await run(createSlidingWindow({ keepGroups: 2, startOn: "user" }))).toEqual(["u2", "a2", "u3"]);
  });
});
