/**
 * What a prefix-ward summary may take under a plan: the strategy's summaries in force (and the messages each
 * still governs) and the candidate groups. Both are remembered per plan, so a run on an extended plan and a longer log
 * only looks at what changed: a summary may stand for most of the thread, and its span is not walked again.
 */
import type { Group } from "../log/groups.js";
import { ascendingRuns } from "../log/history-store.js";
import type { LogView } from "../log/log-view.js";
import type { PlanAction, SummarizationRecord } from "../plan/compaction-plan.js";
import { decisionAt, type SeqResolution } from "../plan/resolve-for-log.js";
import type { Decision } from "../plan/resolve-plan.js";
import { compactable } from "./group-accounting.js";
import { type DecisionChange, GroupSweep } from "./group-sweep.js";
import { newestGroupOf } from "./protected-core.js";
import { counts, record, type StrategyMemo, seqsOfRuns } from "./strategy-memo.js";

/** One of this strategy's summaries in force: its action and the seqs it still governs (ascending). */
export interface StackedSummary {
  readonly action: PlanAction;
  readonly record: SummarizationRecord;
  readonly seqs: ReadonlyArray<number>;
}

/** A summary in force as a sweep remembers it: its action index in the plan and the seqs it governs. */
export interface StackEntry {
  readonly index: number;
  readonly seqs: ReadonlyArray<number>;
}

/**
 * The sweep of a summarization strategy named `name` on a history: what it finds depends only on the log, the
 * plan and the name, so every instance with that name shares it (an engine's background pipeline and the
 * maintenance compaction, say). Its data is the strategy's summaries in force, in log order.
 */
export function summarySweep(log: LogView, name: string): GroupSweep<ReadonlyArray<StackEntry>> {
  return log.historyMemo(`${SUMMARY_PREFIX}${name}`, () => new GroupSweep<ReadonlyArray<StackEntry>>());
}

/** The history-memo key prefix of summarization sweeps (the strategy's name follows it). */
export const SUMMARY_PREFIX = "summarize:";

const isOurs = (action: PlanAction | undefined, name: string): boolean =>
  action?.kind === "summarize" && action.strategy === name;

/** The seqs of the span that `action` governs after precedence, ascending. */
function governedSeqs(log: LogView, resolution: SeqResolution, action: PlanAction): number[] {
  const seqs: number[] = [];
  let hint = 0;
  for (const id of action.span) {
    const seq = log.seqOf(id, hint);
    if (seq === undefined) continue;
    hint = seq + 1;
    if (decisionAt(resolution, seq)?.action === action) seqs.push(seq);
  }
  return seqs.sort((a, b) => a - b);
}

const removed = (d: Decision | undefined): boolean => d?.kind === "drop" || d?.kind === "externalize";

/** The summaries in force and the groups a summary may take (see {@link absorbable}). */
export interface Absorbable {
  /** The strategy's summaries that still govern messages, in log order (of their first message). */
  readonly stack: ReadonlyArray<StackedSummary>;
  readonly groups: ReadonlyArray<Group>;
}

/**
 * The strategy's summaries in force under `resolution`: those the base sweep knew (an action keeps its index
 * in a descendant plan; its seqs are filtered again only when the number it governs changed) and those added
 * since, whose spans are walked once.
 */
function stackOf(
  log: LogView,
  resolution: SeqResolution,
  name: string,
  base: ReadonlyArray<StackEntry> | undefined,
  from: number,
): StackEntry[] {
  const { plan, governed } = resolution;
  const out: StackEntry[] = [];
  for (const entry of base ?? []) {
    const count = governed[entry.index] ?? 0;
    if (count === 0) continue;
    if (count === entry.seqs.length) out.push(entry);
    else {
      const action = plan.actions[entry.index];
      const seqs = entry.seqs.filter((seq) => decisionAt(resolution, seq)?.action === action);
      if (seqs.length > 0) out.push({ index: entry.index, seqs });
    }
  }
  for (let index = base === undefined ? 0 : from; index < plan.actions.length; index++) {
    const action = plan.actions[index]!;
    if (!isOurs(action, name) || (governed[index] ?? 0) === 0) continue;
    const seqs = governedSeqs(log, resolution, action);
    if (seqs.length > 0) out.push({ index, seqs });
  }
  return out.sort((a, b) => a.seqs[0]! - b.seqs[0]!);
}

/**
 * The strategy's summaries in force under the plan (several when later summaries were stacked after earlier
 * ones rather than absorbing them), and the groups a summary may take, oldest first: compactable (not system,
 * pending or pinned), not the group of the last user message (the request being answered stays verbatim) nor
 * the task's (`taskSeq`, -1 for none), nothing dropped or externalized in it, and not already under one of the
 * strategy's summaries. Groups cleared or collapsed by cheaper strategies qualify: the summarizer reads their
 * original messages.
 *
 * Only groups the sweep left open for the plan (or an ancestor) are looked at again, plus those whose messages
 * an added action dropped, externalized, summarized or released: a system or pinned group never qualifies, and a
 * dropped, externalized or summarized one stays so until an action changes that.
 */
export function absorbable(log: LogView, resolution: SeqResolution, name: string, taskSeq = -1): Absorbable {
  const plan = resolution.plan;
  const sweep = summarySweep(log, name);
  const base = sweep.base(log, plan);
  const changed: DecisionChange = (_seq, was, now) =>
    removed(was) !== removed(now) || isOurs(was?.action, name) !== isOurs(now?.action, name);
  const visit = sweep.groupsToVisit(log, resolution, base, changed);
  const entries = stackOf(log, resolution, name, base?.data, base?.plan.actions.length ?? 0);
  const stack = entries.map(({ index, seqs }) => {
    const action = plan.actions[index]!;
    return { action, record: action.record as SummarizationRecord, seqs };
  });
  const groups = candidates(log, resolution, name, visit, taskSeq);
  sweep.remember(log, resolution, groups.open, entries);
  return { stack, groups: groups.out };
}

function candidates(
  log: LogView,
  resolution: SeqResolution,
  name: string,
  visit: ReadonlyArray<number>,
  taskSeq: number,
): { out: Group[]; open: number[] } {
  const lastUser = log.lastUserSeq;
  const protectedGroup = lastUser >= 0 ? log.groupIndexOf(lastUser) : -1;
  const taskGroup = taskSeq >= 0 ? log.groupIndexOf(taskSeq) : -1;
  // The newest group is part of the protected core the hard fallback keeps verbatim, so no summary may take it.
  // When it is the last group `minKeepGroups` (at least 1) keeps it already; an older one holding the newest
  // message (a late result) is held back here.
  const newest = newestGroupOf(log);
  const newestGroup = newest === log.groupCount - 1 ? -1 : newest;
  const out: Group[] = [];
  const open: number[] = [];
  for (const index of visit) {
    const group = log.groupAt(index);
    if (group.kind === "system") continue;
    if (
      group.index === protectedGroup ||
      group.index === taskGroup ||
      group.index === newestGroup ||
      group.pending
    ) {
      open.push(index);
      continue;
    }
    if (!compactable(log, group)) continue;
    const usable = group.seqs.every((seq) => {
      const decision = decisionAt(resolution, seq);
      return !removed(decision) && !isOurs(decision?.action, name);
    });
    if (!usable) continue;
    open.push(index);
    out.push(group);
  }
  return { out, open };
}

interface EncodedEntry {
  readonly index: number;
  readonly runs: ReadonlyArray<number>;
}

function entryOf(value: unknown, what: string): EncodedEntry {
  const data = record(value, ["index", "runs"], what);
  const index = data.index;
  if (!Number.isSafeInteger(index) || (index as number) < -1)
    throw new RangeError(`${what} index must be ≥ -1`);
  return { index: index as number, runs: counts(data.runs, `${what} runs`) };
}

/**
 * A summary sweep's data: `{ stack: [{ index, runs }…] }`, or the one-summary form checkpoints written before
 * summaries could stack held (`{ index, runs }`, index -1 for none).
 */
function summaryDataOf(value: unknown): ReadonlyArray<EncodedEntry> {
  if (typeof value === "object" && value !== null && "stack" in value) {
    const { stack } = record(value, ["stack"], "summary data");
    if (!Array.isArray(stack)) throw new RangeError("summary stack must be an array");
    return stack.map((entry, i) => entryOf(entry, `summary stack[${i}]`));
  }
  const legacy = entryOf(value, "summary data");
  return legacy.index < 0 ? [] : [legacy];
}

/** A stack entry whose seqs are expanded from runs when first read. */
function lazyEntry({ index, runs }: EncodedEntry): StackEntry {
  let seqs: number[] | undefined;
  return {
    index,
    get seqs() {
      seqs ??= seqsOfRuns(runs);
      return seqs;
    },
  };
}

/** How a summarization strategy's sweep travels in a thread checkpoint: its stack of summaries in force. */
export const summaryMemo: StrategyMemo = {
  prefix: SUMMARY_PREFIX,
  prime: (log, resolution, key) => {
    absorbable(log, resolution, key.slice(SUMMARY_PREFIX.length));
    return true;
  },
  sweep: (log, key) => log.peekHistoryMemo(key) as GroupSweep<unknown> | undefined,
  encodeData: (data) => {
    const stack: EncodedEntry[] = [];
    for (const { index, seqs } of data as ReadonlyArray<StackEntry>) {
      const runs = ascendingRuns(seqs);
      if (runs === undefined) return undefined;
      stack.push({ index, runs });
    }
    return { stack };
  },
  restore: (log, resolution, key, sweep) => {
    const entries = summaryDataOf(sweep.data);
    for (const { index } of entries) {
      if (index < 0 || index >= resolution.plan.actions.length) {
        throw new RangeError(`summary index ${index} is not an action of the plan`);
      }
    }
    // The seqs of a summary of most of a long history are many; only the strategy's next sweep reads them
    // (summarization runs in the background by default): expand them then.
    const data = entries.map(lazyEntry);
    summarySweep(log, key.slice(SUMMARY_PREFIX.length)).restore(log, resolution, { ...sweep, data });
  },
};
