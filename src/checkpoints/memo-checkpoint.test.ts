import { describe, expect, it } from "vitest";
import { call, result, text } from "../../test/support/builders.js";
import { runStrategy } from "../../test/support/strategy-context.js";
import { ValidationError } from "../errors/ledger-error.js";
import type { MessageInput } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import { emptyPlan } from "../plan/compaction-plan.js";
import { resolveForLog } from "../plan/resolve-for-log.js";
import { createSummarization } from "../strategies/summarization.js";
import { createExtractiveSummarizer } from "../strategies/summarizers/extractive-summarizer.js";
import { absorbable, SUMMARY_PREFIX, summaryMemo } from "../strategies/summary-span.js";
import { exportMemos, type MemoCheckpoint, primeMemos, restoreMemos } from "./memo-checkpoint.js";

function rounds(from: number, n: number): MessageInput[] {
  const out: MessageInput[] = [];
  for (let i = from; i < from + n; i++) {
    out.push({ id: `a${i}`, role: "assistant", parts: [call(`c${i}`, `{"n":${i}}`, "grep")] });
    out.push({ id: `t${i}`, role: "tool", parts: [result(`c${i}`, `match ${i}`)] });
  }
  return out;
}

/** A thread with two stacked summaries, and the checkpoint memos of its plan. */
async function stacked() {
  const strategy = createSummarization({ summarizer: createExtractiveSummarizer(), target: 2, threshold: 2 });
  const inputs: MessageInput[] = [
    { id: "sys", role: "system", parts: [text("You are an agent.")] },
    { id: "u0", role: "user", parts: [text("Find the loader.")] },
    ...rounds(0, 6),
  ];
  let log = ThreadLog.from("t", inputs);
  let { plan } = await runStrategy(strategy, log, emptyPlan("t"));
  inputs.push(...rounds(6, 6));
  log = ThreadLog.from("t", inputs);
  ({ plan } = await runStrategy(strategy, log, plan));
  const resolution = resolveForLog(plan, log);
  const keys = primeMemos(log, resolution, KINDS);
  const memos = exportMemos(log, plan, keys, () => true, KINDS);
  // A worker's log: the same messages, none of the memos a sweep leaves on the history.
  const fresh = () => ThreadLog.from("t", inputs);
  return { log, plan, memos, fresh };
}

const KINDS = [summaryMemo];
const summaryOf = (memos: ReadonlyArray<MemoCheckpoint>) =>
  memos.find((m) => m.key.startsWith(SUMMARY_PREFIX))!;

describe("summary memos in a thread checkpoint", () => {
  it("carry every stacked summary, and a restored log finds the same stack without sweeping the whole log", async () => {
    const { log, plan, memos, fresh } = await stacked();
    const state = summaryOf(memos).state as { sweep: { data: { stack: unknown[] } } };
    expect(state.sweep.data.stack).toHaveLength(2);
    const warm = absorbable(log, resolveForLog(plan, log), "summarize");
    const restored = fresh();
    restoreMemos(restored, resolveForLog(plan, restored), memos, KINDS);
    const again = absorbable(restored, resolveForLog(plan, restored), "summarize");
    expect(again.stack.map((s) => [s.action, s.seqs])).toEqual(warm.stack.map((s) => [s.action, s.seqs]));
    expect(again.groups.map((g) => g.index)).toEqual(warm.groups.map((g) => g.index));
  });

  it("still read the one-summary form checkpoints held before summaries stacked", async () => {
    const { plan, memos, fresh } = await stacked();
    const memo = summaryOf(memos);
    const { sweep, extra } = memo.state as { sweep: { data: { stack: unknown[] } }; extra: unknown };
    const newest = sweep.data.stack[1] as { index: number; runs: number[] };
    const legacy = { key: memo.key, state: { sweep: { ...sweep, data: newest }, extra } };
    const restored = fresh();
    restoreMemos(restored, resolveForLog(plan, restored), [legacy], KINDS);
    const { stack } = absorbable(restored, resolveForLog(plan, restored), "summarize");
    expect(stack.map((s) => s.action)).toEqual([plan.actions[newest.index]]);
  });

  it("refuse a stack entry that names no action of the plan, naming the memo", async () => {
    const { plan, memos, fresh } = await stacked();
    const memo = summaryOf(memos);
    const { sweep, extra } = memo.state as { sweep: { data: unknown }; extra: unknown };
    const bad = {
      key: memo.key,
      state: { sweep: { ...sweep, data: { stack: [{ index: 99, runs: [2, 4] }] } }, extra },
    };
    const restored = fresh();
    const attempt = () => restoreMemos(restored, resolveForLog(plan, restored), [bad], KINDS);
    expect(attempt).toThrow(ValidationError);
    expect(attempt).toThrow(/summary index 99/);
  });

  it("are left out by a worker whose strategies declare no such memo (it sweeps in full instead)", async () => {
    const { log, plan, memos, fresh } = await stacked();
    const restored = fresh();
    expect(() => restoreMemos(restored, resolveForLog(plan, restored), memos, [])).not.toThrow();
    expect(restored.peekHistoryMemo(summaryOf(memos).key)).toBeUndefined();
    // Without the memo the strategy's sweep starts from nothing and finds what the warm one knew.
    const warm = absorbable(log, resolveForLog(plan, log), "summarize");
    const swept = absorbable(restored, resolveForLog(plan, restored), "summarize");
    expect(swept.stack.map((s) => [s.action, s.seqs])).toEqual(warm.stack.map((s) => [s.action, s.seqs]));
    expect(swept.groups.map((g) => g.index)).toEqual(warm.groups.map((g) => g.index));
  });
});
