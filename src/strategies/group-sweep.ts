/**
 * What a strategy that walks the log's groups remembers between runs, so a turn looks only at what can have
 * changed: the groups it left open for a plan (those whose answer may still change as the log grows), the
 * groups appended since, and the groups that the actions added to the plan since then name.
 */
import { ValidationError } from "../errors/ledger-error.js";
import type { LogView } from "../log/log-view.js";
import { type CompactionPlan, parentOf } from "../plan/compaction-plan.js";
import { decisionAt, type SeqResolution } from "../plan/resolve-for-log.js";
import type { Decision } from "../plan/resolve-plan.js";

/** Something a strategy remembers about a plan on a log, and whether later logs and plans may build on it. */
export interface LineageMemo {
  readonly log: LogView;
  readonly plan: CompactionPlan;
  /** The log reaches the plan's `basedOnSeq`: a longer log resolves the plan the same way. */
  readonly covers: boolean;
  /** Descendant plans may build on it too: every span id resolved, so only added actions change decisions. */
  readonly extendable: boolean;
}

/** The lineage fields of a memo about `plan` on `log`, whose resolution is `resolution`. */
export function lineageOf(log: LogView, plan: CompactionPlan, resolution: SeqResolution): LineageMemo {
  const covers = log.length >= plan.basedOnSeq;
  return { log, plan, covers, extendable: covers && !resolution.skippedIds };
}

/**
 * The memo of `plan`, or of its nearest ancestor (see `parentOf`), that `log` can build on: made on a log that
 * `log` extends. Decisions under `plan` then differ from the memo's only on messages named by the actions
 * added since (`plan.actions` from `memo.plan.actions.length` on).
 */
export function nearestMemo<M extends LineageMemo>(
  memos: WeakMap<CompactionPlan, M>,
  log: LogView,
  plan: CompactionPlan,
): M | undefined {
  for (let p: CompactionPlan | undefined = plan; p !== undefined; p = parentOf(p)) {
    const memo = memos.get(p);
    if (memo === undefined || !log.extends(memo.log)) continue;
    if (p === plan ? memo.covers : memo.extendable) return memo;
  }
  return undefined;
}

/** Stores a memo unless one made on a longer log is kept (a run on an older log must not undo a newer one). */
export function keepNewest<M extends LineageMemo>(memos: WeakMap<CompactionPlan, M>, memo: M): void {
  const known = memos.get(memo.plan);
  if (known === undefined || memo.log.extends(known.log)) memos.set(memo.plan, memo);
}

/** Calls `visit` with the seq of every message named by the plan's actions from index `from` on. */
export function forEachAddedSeq(
  log: LogView,
  plan: CompactionPlan,
  from: number,
  visit: (seq: number) => void,
): void {
  for (let a = from; a < plan.actions.length; a++) {
    const span = plan.actions[a]!.span;
    let hint = 0;
    for (let i = 0; i < span.length; i++) {
      const seq = log.seqOf(span[i]!, hint);
      if (seq === undefined) continue;
      hint = seq + 1;
      visit(seq);
    }
  }
}

/** One sweep of a plan on a log: the groups it left open and what else the strategy keeps with it. */
export interface SweepMemo<T> extends LineageMemo {
  readonly resolution: SeqResolution;
  /** Groups left open, ascending. */
  readonly open: ReadonlyArray<number>;
  /** Number of groups the sweep saw: later ones are new. */
  readonly scanned: number;
  readonly data: T;
}

/** The part of a sweep memo a checkpoint carries (see `GroupSweep.stateOf`). */
export interface SweepState<T> {
  readonly open: ReadonlyArray<number>;
  readonly scanned: number;
  readonly data: T;
}

/**
 * Whether a message named by an action added since the base sweep changed in a way the strategy cares about,
 * given its decision under the base plan and under the current one (undefined: included by default).
 */
export type DecisionChange = (
  seq: number,
  before: Decision | undefined,
  after: Decision | undefined,
) => boolean;

/** The default `DecisionChange`: the decision's kind changed (include and no decision count as the same). */
export const kindChanged: DecisionChange = (_seq, before, after) =>
  (before?.kind ?? "include") !== (after?.kind ?? "include");

/**
 * Per plan, the groups a strategy's sweep left open. A group is *settled* for a plan when the strategy's answer
 * for it can no longer change while the log grows under that plan; the strategy decides that (the log is
 * append-only, so a non-pending group never changes, and facts such as "expired" only ever become true). A
 * descendant plan's decisions differ only on the messages its added actions name, so the groups where those
 * changed are looked at again. Histories where a tool message fused two groups are swept whole every time.
 *
 * @example
 * const sweep = new GroupSweep<undefined>();
 * const base = sweep.base(log, plan);
 * const open: number[] = [];
 * for (const g of sweep.groupsToVisit(log, resolution, base)) if (!settled(log.groupAt(g))) open.push(g);
 * sweep.remember(log, resolution, open, undefined);
 */
export class GroupSweep<T> {
  readonly #memos = new WeakMap<CompactionPlan, SweepMemo<T>>();

  /** The sweep of `plan`, or of its nearest ancestor, that a sweep on `log` can build on. */
  base(log: LogView, plan: CompactionPlan): SweepMemo<T> | undefined {
    return log.stableGroupIndices ? nearestMemo(this.#memos, log, plan) : undefined;
  }

  /**
   * Group indices to look at, ascending: every group without a base; otherwise the groups the base left open,
   * the groups new since, those holding a message named by an added action whose decision changed as `changed`
   * says, and those holding a seq of `also`.
   */
  groupsToVisit(
    log: LogView,
    resolution: SeqResolution,
    base: SweepMemo<T> | undefined,
    changed: DecisionChange = kindChanged,
    also: ReadonlyArray<number> = [],
  ): ReadonlyArray<number> {
    const count = log.groupCount;
    if (base === undefined) return Array.from({ length: count }, (_, g) => g);
    const visit = [...base.open];
    for (let g = base.scanned; g < count; g++) visit.push(g);
    if (base.plan === resolution.plan && also.length === 0) return visit;
    let last = -1;
    const add = (seq: number): void => {
      const g = log.groupIndexOf(seq);
      // Spans list a group's messages next to each other: skip repeats before sorting.
      if (g !== last) visit.push(g);
      last = g;
    };
    forEachChangedSeq(log, base, resolution, (seq, was, now) => {
      if (changed(seq, was, now)) add(seq);
    });
    for (const seq of also) add(seq);
    visit.sort((a, b) => a - b);
    return visit.filter((g, i) => i === 0 || visit[i - 1] !== g);
  }

  /**
   * What this sweep remembers of exactly `plan` on `log`, for a thread checkpoint (docs/decisions/0009): the
   * groups left open, how many groups it saw and the strategy's data; undefined when it has no memo of that plan
   * made on that log value.
   */
  stateOf(plan: CompactionPlan, log: LogView): SweepState<T> | undefined {
    const memo = this.#memos.get(plan);
    if (memo === undefined || memo.log.length !== log.length || !log.extends(memo.log)) return undefined;
    return { open: memo.open, scanned: memo.scanned, data: memo.data };
  }

  /**
   * Takes a state from `stateOf` as the sweep of `resolution.plan` on `log` (a log restored from a checkpoint at
   * the length the state was made for, or longer): the next sweep visits its open groups and those after
   * `scanned`, which the checkpoint must therefore hold.
   */
  restore(log: LogView, resolution: SeqResolution, state: SweepState<T>): void {
    const count = log.groupCount;
    const ordered = state.open.every((g, i) => g < count && (i === 0 || g > state.open[i - 1]!));
    if (!ordered || state.scanned > count) {
      throw new ValidationError("sweep state names groups the log does not have, or not ascending", {
        threadId: log.threadId,
        field: "checkpoint.memos",
      });
    }
    const lineage = lineageOf(log, resolution.plan, resolution);
    this.#memos.set(resolution.plan, { ...lineage, resolution, ...state });
  }

  /** Records a sweep of `resolution.plan` on `log`: the groups it left open (ascending) and the strategy's data. */
  remember(log: LogView, resolution: SeqResolution, open: ReadonlyArray<number>, data: T): void {
    if (!log.stableGroupIndices) return;
    const lineage = lineageOf(log, resolution.plan, resolution);
    keepNewest(this.#memos, { ...lineage, resolution, open, scanned: log.groupCount, data });
  }
}

/**
 * Calls `visit` for every seq whose decision may differ between the base sweep's plan and `resolution`'s plan
 * (a descendant): the seqs the added actions name, or, when those name a large share of the log (a summary
 * absorbing an older one), the seqs whose winning action differs between the two resolution tables.
 */
function forEachChangedSeq<T>(
  log: LogView,
  base: SweepMemo<T>,
  resolution: SeqResolution,
  visit: (seq: number, was: Decision | undefined, now: Decision | undefined) => void,
): void {
  const plan = resolution.plan;
  const from = base.plan.actions.length;
  let named = 0;
  for (let a = from; a < plan.actions.length; a++) named += plan.actions[a]!.span.length;
  const was = base.resolution;
  if (named * 8 <= log.length) {
    forEachAddedSeq(log, plan, from, (seq) => visit(seq, decisionAt(was, seq), decisionAt(resolution, seq)));
    return;
  }
  // Comparing two typed tables costs far less per seq than finding each span id; an unchanged index is the
  // same action (the descendant's actions start with the base plan's).
  const before = was.actionAt;
  const after = resolution.actionAt;
  for (let seq = 0; seq < after.length; seq++) {
    const b = seq < before.length ? before[seq]! : -1;
    if (b !== after[seq]) visit(seq, decisionAt(was, seq), decisionAt(resolution, seq));
  }
}
