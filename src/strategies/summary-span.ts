/**
 * What a prefix-ward summary may absorb under a plan: the strategy's summary in force (and the messages it still
 * governs) and the candidate groups. Both are remembered per plan, so a run on an extended plan and a longer log
 * only looks at what changed: a summary may stand for most of the thread, and its span is not walked again.
 */
import type { Group } from "../log/groups.js";
import type { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan, PlanAction, SummarizationRecord } from "../plan/compaction-plan.js";
import { decisionAt, type SeqResolution } from "../plan/resolve-for-log.js";
import type { Decision } from "../plan/resolve-plan.js";
import { compactable } from "./group-accounting.js";
import { type DecisionChange, GroupSweep } from "./group-sweep.js";

/** This strategy's summary in force, if any: its action and the seqs it still governs (in span order). */
export interface Previous {
  readonly action: PlanAction;
  readonly record: SummarizationRecord;
  readonly seqs: ReadonlyArray<number>;
}

/** The strategy's last summary in a plan: its action index (-1 for none) and the seqs it governs. */
export interface LastSummary {
  readonly index: number;
  readonly seqs: ReadonlyArray<number>;
}

/**
 * The sweep of a summarization strategy named `name` on a history: what it finds depends only on the log, the
 * plan and the name, so every instance with that name shares it (an engine's background pipeline and the
 * maintenance compaction, say).
 */
export function summarySweep(log: ThreadLog, name: string): GroupSweep<LastSummary> {
  return log.historyMemo(`${SUMMARY_PREFIX}${name}`, () => new GroupSweep<LastSummary>());
}

/** The history-memo key prefix of summarization sweeps (the strategy's name follows it). */
export const SUMMARY_PREFIX = "summarize:";

/** The plan's last summarize action by `name` at or after index `from`, or -1. */
function lastSummaryIndex(plan: CompactionPlan, name: string, from: number): number {
  for (let i = plan.actions.length - 1; i >= from; i--) {
    const action = plan.actions[i]!;
    if (action.kind === "summarize" && action.strategy === name) return i;
  }
  return -1;
}

/** The seqs of the span that `action` governs after precedence, in span order. */
function governedSeqs(log: ThreadLog, resolution: SeqResolution, action: PlanAction): number[] {
  const seqs: number[] = [];
  let hint = 0;
  for (const id of action.span) {
    const seq = log.seqOf(id, hint);
    if (seq === undefined) continue;
    hint = seq + 1;
    if (decisionAt(resolution, seq)?.action === action) seqs.push(seq);
  }
  return seqs;
}

const removed = (d: Decision | undefined): boolean => d?.kind === "drop" || d?.kind === "externalize";

/** The summary in force and the groups it may absorb (see {@link absorbable}). */
export interface Absorbable {
  readonly previous: Previous | undefined;
  readonly groups: ReadonlyArray<Group>;
}

/**
 * The strategy's summary in force under the plan, and the groups a summary may absorb, oldest first: compactable
 * (not system, pending or pinned), not the group of the last user message (the request being answered stays
 * verbatim) nor the task's (`taskSeq`, -1 for none), nothing dropped or externalized in it, and not already under the summary in force. Groups cleared
 * or collapsed by cheaper strategies qualify: the summarizer reads their original messages.
 *
 * Only groups the sweep left open for the plan (or an ancestor) are looked at again, plus those whose messages
 * an added action dropped, externalized, absorbed or released: a system or pinned group never qualifies, and a
 * dropped, externalized or absorbed one stays so until an action changes that.
 */
export function absorbable(
  log: ThreadLog,
  resolution: SeqResolution,
  name: string,
  taskSeq = -1,
): Absorbable {
  const plan = resolution.plan;
  const sweep = summarySweep(log, name);
  const base = sweep.base(log, plan);
  const added = lastSummaryIndex(plan, name, base?.plan.actions.length ?? 0);
  const index = added >= 0 || base === undefined ? added : base.data.index;
  const action = index < 0 ? undefined : plan.actions[index];
  const before = base === undefined || base.data.index < 0 ? undefined : base.plan.actions[base.data.index];
  const left = new Set<number>();
  const changed: DecisionChange = (seq, was, now) => {
    if (was?.action === action && now?.action !== action) left.add(seq);
    return removed(was) !== removed(now) || (was?.action === before) !== (now?.action === action);
  };
  // A newer summary by this strategy releases what the older one held and the newer one does not.
  const also =
    base !== undefined && action !== before
      ? base.data.seqs.filter((seq) => decisionAt(resolution, seq)?.action !== action)
      : [];
  const visit = sweep.groupsToVisit(log, resolution, base, changed, also);
  let seqs: ReadonlyArray<number> = [];
  if (action !== undefined) {
    if (added >= 0 || base === undefined) seqs = governedSeqs(log, resolution, action);
    else seqs = left.size === 0 ? base.data.seqs : base.data.seqs.filter((seq) => !left.has(seq));
  }
  const previous =
    action?.kind === "summarize" && seqs.length > 0 ? { action, record: action.record, seqs } : undefined;
  const groups = candidates(log, resolution, previous, visit, taskSeq);
  sweep.remember(log, resolution, groups.open, { index, seqs });
  return { previous, groups: groups.out };
}

function candidates(
  log: ThreadLog,
  resolution: SeqResolution,
  previous: Previous | undefined,
  visit: ReadonlyArray<number>,
  taskSeq: number,
): { out: Group[]; open: number[] } {
  const lastUser = log.lastUserSeq;
  const protectedGroup = lastUser >= 0 ? log.groupIndexOf(lastUser) : -1;
  const taskGroup = taskSeq >= 0 ? log.groupIndexOf(taskSeq) : -1;
  const out: Group[] = [];
  const open: number[] = [];
  for (const index of visit) {
    const group = log.groupAt(index);
    if (group.kind === "system") continue;
    if (group.index === protectedGroup || group.index === taskGroup || group.pending) {
      open.push(index);
      continue;
    }
    if (!compactable(log, group)) continue;
    const usable = group.seqs.every((seq) => {
      const decision = decisionAt(resolution, seq);
      const absorbed = previous !== undefined && decision?.action === previous.action;
      return !removed(decision) && !absorbed;
    });
    if (!usable) continue;
    open.push(index);
    out.push(group);
  }
  return { out, open };
}
