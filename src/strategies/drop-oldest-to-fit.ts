import { BudgetInfeasibleError } from "../errors/ledger-error.js";
import type { Group } from "../log/groups.js";
import type { ThreadLog } from "../log/thread-log.js";
import { type CompactionPlan, extendPlan, type PlanAction } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog } from "../plan/resolve-for-log.js";
import { pendingResultText } from "../render/placeholders.js";
import type { MessageCounter } from "../tokens/tokenizer.js";

/** Options of `dropOldestToFit`. */
export interface DropOldestOptions {
  readonly counter: MessageCounter;
  /** The rendered request must have at most this many tokens. */
  readonly budget: number;
  /** Tokens to leave free for content rendered after the history (injections, stubs). */
  readonly reserve?: number;
  readonly strategy?: string;
}

/** Whether compaction may never remove a group: system prompt, pinned messages, pending calls. */
export function isPinnedGroup(log: ThreadLog, group: Group, lastUserSeq: number): boolean {
  if (group.kind === "system" || group.pending) return true;
  return group.seqs.some((seq) => seq >= lastUserSeq || log.at(seq)!.meta.pinned === true);
}

/** Tokens of the stub result the renderer adds for a group's pending calls (an upper bound in `hold` mode). */
function pendingStubTokens(log: ThreadLog, group: Group, counter: MessageCounter): number {
  const parts = [];
  for (const call of log.pendingCalls.values()) {
    if (group.seqs.includes(call.seq)) {
      parts.push({
        type: "tool_result" as const,
        callId: call.callId,
        content: pendingResultText(call.name),
      });
    }
  }
  return parts.length === 0 ? 0 : counter.countMessage({ role: "tool", parts });
}

function lastUserSeq(log: ThreadLog): number {
  for (let seq = log.length - 1; seq >= 0; seq--) if (log.at(seq)!.role === "user") return seq;
  return log.length;
}

interface CutMemo {
  readonly log: ThreadLog;
  /** Groups older than this index are dropped by the plan, except `olderPinned`. */
  readonly cut: number;
  readonly olderPinned: ReadonlyArray<number>;
}

// Where the last fit cut a history, per resulting plan, so the next turn only walks the groups it keeps.
const cuts = new WeakMap<CompactionPlan, CutMemo>();

/**
 * The hard fallback: extends `plan` with one drop action covering the oldest unpinned groups, so that what
 * remains fits the budget by the counter's own per-message counts. Walks groups from the newest backwards and
 * stops at the budget; on the plan it produced last turn it also stops at last turn's cut, so the cost grows with
 * what is kept, not with the thread's length. Returns the same plan (`toBe`) when it already fits; throws
 * `BudgetInfeasibleError` when pinned content alone does not fit.
 */
export function dropOldestToFit(
  log: ThreadLog,
  plan: CompactionPlan,
  options: DropOldestOptions,
): CompactionPlan {
  const resolution = resolveForLog(plan, log);
  const limit = options.budget - (options.reserve ?? 0) - options.counter.requestOverhead;
  const groups = log.groups;
  const userSeq = lastUserSeq(log);
  const memo = cuts.get(plan);
  const known = memo !== undefined && log.extends(memo.log) ? memo : undefined;
  const tokensOf = (group: Group): number => {
    let sum = 0;
    for (const seq of group.seqs) {
      if (decisionAt(resolution, seq)?.kind === "drop") continue;
      const message = log.at(seq)!;
      sum += options.counter.countMessage(message, message.hash);
    }
    return group.pending ? sum + pendingStubTokens(log, group, options.counter) : sum;
  };
  // Pass 1: pinned groups stay whatever happens, so pay for all of them before keeping anything else.
  const stop = known?.cut ?? 0;
  const pinnedSet = new Set<number>();
  let pinned = 0;
  const older: Group[] = []; // ascending: unpinned since last turn, behind last turn's cut
  const newer: Group[] = []; // descending: found by this turn's scan
  for (let g = stop; g < groups.length; g++) {
    if (isPinnedGroup(log, groups[g]!, userSeq)) pinnedSet.add(g);
  }
  // Groups behind last turn's cut stayed only because they were pinned: keep paying for those still pinned and
  // drop the ones that no longer are (a call answered since, an older user turn).
  for (const g of known?.olderPinned ?? []) {
    if (isPinnedGroup(log, groups[g]!, userSeq)) pinnedSet.add(g);
    else older.push(groups[g]!);
  }
  for (const g of pinnedSet) pinned += tokensOf(groups[g]!);
  // Pass 2, newest first: keep whole unpinned groups while they fit; everything older than the first misfit goes.
  let kept = 0;
  let cut = groups.length;
  let full = false;
  for (let g = groups.length - 1; g >= stop; g--) {
    if (pinnedSet.has(g)) continue;
    const group = groups[g]!;
    if (full) {
      // Past the cut everything unpinned goes; only skip groups the plan drops already.
      if (!group.seqs.every((seq) => decisionAt(resolution, seq)?.kind === "drop")) newer.push(group);
      continue;
    }
    const cost = tokensOf(group);
    if (cost === 0) continue;
    if (pinned + kept + cost <= limit) {
      kept += cost;
      cut = g;
    } else {
      full = true;
      newer.push(group);
    }
  }
  if (!full) cut = stop;
  const olderPinned = [...pinnedSet].filter((g) => g < cut).sort((a, b) => a - b);
  if (pinned > limit) {
    throw new BudgetInfeasibleError("pinned content alone exceeds the budget", pinned, limit, {
      threadId: log.threadId,
    });
  }
  if (older.length + newer.length === 0) return plan;
  // Both lists are already ordered and every `older` group precedes every `newer` one: no sort needed.
  const span: string[] = [];
  for (const group of older) for (const id of group.messageIds) span.push(id);
  for (let i = newer.length - 1; i >= 0; i--) for (const id of newer[i]!.messageIds) span.push(id);
  const dropped = older.length + newer.length;
  const action: PlanAction = {
    kind: "drop",
    span,
    record: { kind: "drop", reason: "over budget: oldest unpinned groups" },
    strategy: options.strategy ?? "dropOldestToFit",
    reason: `${dropped} oldest group(s) dropped to fit ${options.budget} tokens`,
  };
  const next = extendPlan(plan, [action], log.length);
  cuts.set(next, { log, cut, olderPinned });
  return next;
}
