import type { LogView } from "../log/log-view.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog } from "../plan/resolve-for-log.js";

/**
 * Which message is the thread's task: `firstUserMessage` (default) protects the thread's first user message, so a
 * single-task agent run keeps its instructions verbatim however many harness messages follow; `none` protects no
 * task (only pinned messages and the newest user message).
 */
export type TaskRule = "firstUserMessage" | "none";

/**
 * The seq of the thread's task under `rule`, or -1 when there is none — or when `plan` already summarizes,
 * externalizes or drops it (a thread compacted before the task was protected): protecting it then would reject
 * every summary that absorbs the one holding it.
 */
export function taskSeqOf(log: LogView, rule: TaskRule, plan?: CompactionPlan): number {
  const seq = rule === "none" ? -1 : log.firstUserSeq;
  if (seq < 0 || plan === undefined || plan.actions.length === 0) return seq;
  const kind = decisionAt(resolveForLog(plan, log), seq)?.kind;
  return kind === undefined || kind === "include" || kind === "clear" ? seq : -1;
}

/**
 * The seqs no strategy may compact on its own: system prompts and `meta.pinned` messages, the task and the newest
 * user message. (Pending calls are guarded by plan validation.) Together with the pending calls they are the
 * protected core that every request keeps.
 */
export function untouchableSeqs(log: LogView, taskSeq: number): Set<number> {
  const seqs = new Set<number>(log.pinnedSeqs);
  if (log.lastUserSeq >= 0) seqs.add(log.lastUserSeq);
  if (taskSeq >= 0) seqs.add(taskSeq);
  return seqs;
}

/**
 * The group of the newest non-system message, or -1: what the model answers next, part of every protected core
 * (a request needs a message besides the system prompt). Not the highest group index: groups are numbered by
 * their first message, and a result can join an older group after a newer one began.
 */
export function newestGroupOf(log: LogView): number {
  for (let seq = log.length - 1; seq >= 0; seq--) {
    const g = log.groupIndexOf(seq);
    if (log.groupAt(g).kind !== "system") return g;
  }
  return -1;
}
