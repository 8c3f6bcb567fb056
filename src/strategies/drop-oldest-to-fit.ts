import { BudgetInfeasibleError } from "../errors/ledger-error.js";
import type { LogView } from "../log/log-view.js";
import { type CompactionPlan, extendPlan, type PlanAction } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog, type SeqResolution } from "../plan/resolve-for-log.js";
import { spanOfRuns, spanOfSeqs } from "../plan/span-seqs.js";
import type { MessageCounter } from "../tokens/tokenizer.js";
import { groupTokens } from "./group-accounting.js";
import { protectedGroupList } from "./hard-fallback.js";

/** Options of `dropOldestToFit`. */
export interface DropOldestOptions {
  readonly counter: MessageCounter;
  /** The rendered request must have at most this many tokens. */
  readonly budget: number;
  /** Tokens to leave free for content rendered after the history (injections, stubs). */
  readonly reserve?: number;
  readonly strategy?: string;
}

/**
 * Indices of the groups this fallback may never remove: the hard fallback's protected groups with the whole last
 * user turn kept (system prompts, `meta.pinned` messages, pending calls, the last user message and everything after
 * it; the newest non-system group when there is no user message).
 */
export function pinnedGroups(log: LogView): Set<number> {
  return new Set(protectedGroupList(log, "lastTurn"));
}

interface CutMemo {
  readonly log: LogView;
  /** Groups older than this index are dropped by the plan, except `olderPinned`. */
  readonly cut: number;
  readonly olderPinned: ReadonlyArray<number>;
}

// Above this many groups to drop, their ids are found by one sweep over the seq tables.
const MANY_GROUPS = 256;

// Where the last fit cut a history, per resulting plan, so the next turn only walks the groups it keeps.
const cuts = new WeakMap<CompactionPlan, CutMemo>();

/**
 * The hard fallback: extends `plan` with one drop action covering the oldest unpinned groups, so that what
 * remains fits the budget by the counter's own per-message counts (pending-call stubs included). Pinned groups
 * are paid for first; then groups are kept newest first until one does not fit, and everything older goes. On
 * the plan it produced last turn it stops at last turn's cut, so a turn costs what it keeps, not the thread's
 * length. Returns the same plan (`toBe`) when it already fits; throws `BudgetInfeasibleError` when pinned
 * content alone does not fit.
 */
export function dropOldestToFit(
  log: LogView,
  plan: CompactionPlan,
  options: DropOldestOptions,
): CompactionPlan {
  const resolution = resolveForLog(plan, log);
  const limit = options.budget - (options.reserve ?? 0) - options.counter.requestOverhead;
  const memo = cuts.get(plan);
  // Group indices are only comparable across log values while no tool message has fused two groups (after a
  // fusion the groups are recomputed and renumbered): a memo of cut indices is then no use.
  const known = memo !== undefined && log.stableGroupIndices && log.extends(memo.log) ? memo : undefined;
  const stop = known?.cut ?? 0;
  const pinned = protectedGroupList(log, "lastTurn");
  let pinnedTokens = 0;
  for (const g of pinned) pinnedTokens += groupTokens(log, log.groupAt(g), resolution, options.counter);
  if (pinnedTokens > limit) {
    throw new BudgetInfeasibleError("pinned content alone exceeds the budget", pinnedTokens, limit, {
      threadId: log.threadId,
    });
  }
  // Groups to drop are marked by index; their ids are collected at the end (see spanOf).
  const marked = new Uint8Array(log.groupCount);
  // The marked groups, listed only while few (spanOf sweeps the mark table for many).
  const toDrop: number[] = [];
  let dropCount = 0;
  const mark = (g: number): void => {
    if (marked[g] === 0) {
      marked[g] = 1;
      if (++dropCount <= MANY_GROUPS) toDrop.push(g);
    }
  };
  // A mark table instead of Set lookups: the scan below visits every group on a cold call.
  const isPinned = new Uint8Array(log.groupCount);
  for (const g of pinned) isPinned[g] = 1;
  // Behind last turn's cut only pinned groups stayed; drop those no longer pinned (a call answered since, an
  // older user turn).
  for (const g of known?.olderPinned ?? []) if (isPinned[g] === 0) mark(g);
  let kept = 0;
  let cut = log.groupCount;
  let full = false;
  for (let g = log.groupCount - 1; g >= stop; g--) {
    if (isPinned[g] === 1) continue;
    if (full) {
      // Past the cut everything unpinned goes, without reading the group itself.
      mark(g);
      continue;
    }
    const cost = groupTokens(log, log.groupAt(g), resolution, options.counter);
    if (cost === 0) continue;
    if (pinnedTokens + kept + cost <= limit) {
      kept += cost;
      cut = g;
    } else {
      full = true;
      mark(g);
    }
  }
  if (!full) cut = Math.min(cut, stop);
  const span = spanOf(log, resolution, marked, dropCount > MANY_GROUPS ? undefined : toDrop);
  if (span.length === 0) return plan;
  const next = extendPlan(plan, [dropAction(span, options)], log.length);
  cuts.set(next, { log, cut, olderPinned: pinned.filter((g) => g < cut) });
  return next;
}

/**
 * Ids of the marked groups' messages that the plan does not drop yet, in log order. Many groups: one sweep over
 * the contiguous seq tables (reading thousands of scattered group objects costs far more); few: per group.
 */
function spanOf(
  log: LogView,
  resolution: SeqResolution,
  marked: Uint8Array,
  groups: ReadonlyArray<number> | undefined,
): string[] {
  const live = (seq: number): boolean => decisionAt(resolution, seq)?.kind !== "drop";
  if (groups === undefined) {
    const groupOf = log.groupIndexTable();
    const { dropRuns } = resolution;
    const length = log.length;
    const runs: number[] = [];
    let end = -1; // end of the open run
    let dropped = 0; // index into dropRuns
    for (let seq = 0; seq < length; seq++) {
      // What the plan drops already is not named again: jump over its runs.
      while (dropped < dropRuns.length && dropRuns[dropped + 1]! <= seq) dropped += 2;
      if (dropped < dropRuns.length && dropRuns[dropped]! <= seq) {
        seq = dropRuns[dropped + 1]! - 1;
        continue;
      }
      if (marked[groupOf[seq]!] !== 1) continue;
      if (seq === end) runs[runs.length - 1] = seq + 1;
      else runs.push(seq, seq + 1);
      end = seq + 1;
    }
    return spanOfRuns(log, runs);
  }
  const seqs = groups.flatMap((g) => log.groupAt(g).seqs).filter(live);
  return spanOfSeqs(
    log,
    seqs.sort((a, b) => a - b),
  );
}

function dropAction(span: ReadonlyArray<string>, options: DropOldestOptions): PlanAction {
  return {
    kind: "drop",
    span,
    record: { kind: "drop", reason: "over budget: oldest unpinned groups" },
    strategy: options.strategy ?? "dropOldestToFit",
    reason: `${span.length} message(s) of the oldest unpinned groups dropped to fit ${options.budget} tokens`,
  };
}
