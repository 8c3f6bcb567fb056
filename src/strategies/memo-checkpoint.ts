/**
 * The strategies' memos in a thread checkpoint (docs/decisions/0009). A turn's free strategies sweep only the
 * groups their memo of the plan left open and what changed since; a worker without that memo sweeps the whole
 * log, which a checkpoint-restored log cannot (it holds only some messages). So the checkpoint writer brings each
 * memo up to the committed plan (`primeMemos`), keeps the groups the next sweep will visit (`memoGroups`) and
 * the memos' state (`exportMemos`), and the reader puts them back (`restoreMemos`). A memo this module does not
 * know is left out: the strategy then sweeps in full, and the engine answers its `MessageNotLoadedError` with a
 * full load.
 */
import { ValidationError } from "../errors/ledger-error.js";
import { ascendingRuns } from "../log/history-store.js";
import type { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import type { SeqResolution } from "../plan/resolve-for-log.js";
import { GroupSweep, type SweepState } from "./group-sweep.js";
import { absorbable, type StackEntry, SUMMARY_PREFIX, summarySweep } from "./summary-span.js";
import {
  RETENTION_PREFIX,
  ResultFacts,
  type ResultFactsState,
  type RetentionMemo,
} from "./tool-result-facts.js";
import { primeRetention, retentionPolicyOf } from "./tool-result-retention.js";
import { WINDOW_PREFIX, windowedGroups, windowScopeOf } from "./window-trigger.js";

/** One memo as a checkpoint carries it: its history-memo key and its state (JSON). */
export interface MemoCheckpoint {
  readonly key: string;
  readonly state: unknown;
}

interface MemoKind {
  readonly prefix: string;
  /** Brings the memo up to `resolution.plan` on `log`; false when it cannot. */
  prime(log: ThreadLog, resolution: SeqResolution, key: string): boolean;
  /** The memo's sweep in the history. */
  sweep(log: ThreadLog, key: string): GroupSweep<unknown> | undefined;
  /** Extra state beside the sweep's, from the held messages only. */
  exportExtra?(log: ThreadLog, key: string, held: (seq: number) => boolean): unknown;
  /** The sweep's strategy data as JSON, or undefined when it cannot travel. */
  encodeData(data: unknown): unknown | undefined;
  /** Puts the memo back on a restored log. Throws on a state that does not fit. */
  restore(
    log: ThreadLog,
    resolution: SeqResolution,
    key: string,
    sweep: SweepState<unknown>,
    extra: unknown,
  ): void;
}

// A checkpoint's memos are checked by hand, not by schema: a retention memo lists every held result, and a
// schema per number costs a restore more than the rest of it. Each check throws RangeError naming what is wrong
// (restoreMemos turns it into a ValidationError naming the memo).

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function counts(value: unknown, what: string): ReadonlyArray<number> {
  if (!Array.isArray(value) || !value.every(isCount)) throw new RangeError(`${what} must be integers ≥ 0`);
  return value;
}

function record(value: unknown, keys: ReadonlyArray<string>, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new RangeError(`${what} must be an object`);
  }
  const extra = Object.keys(value).find((k) => !keys.includes(k));
  if (extra !== undefined) throw new RangeError(`${what} has an unknown field ${JSON.stringify(extra)}`);
  return value as Record<string, unknown>;
}

function sweepOf(value: unknown): SweepState<unknown> {
  const sweep = record(value, ["open", "scanned", "data"], "sweep");
  if (!isCount(sweep.scanned)) throw new RangeError("sweep.scanned must be an integer ≥ 0");
  return { open: counts(sweep.open, "sweep.open"), scanned: sweep.scanned, data: sweep.data };
}

function seqsOfRuns(runs: ReadonlyArray<number>): number[] {
  let total = 0;
  for (let r = 0; r + 1 < runs.length; r += 2) total += runs[r + 1]! - runs[r]!;
  const seqs = new Array<number>(total);
  let i = 0;
  for (let r = 0; r + 1 < runs.length; r += 2) for (let q = runs[r]!; q < runs[r + 1]!; q++) seqs[i++] = q;
  return seqs;
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

function factsOf(value: unknown): ResultFactsState {
  const facts = record(value, ["length", "counts", "results"], "result facts");
  if (!isCount(facts.length)) throw new RangeError("result facts length must be an integer ≥ 0");
  const perTool = facts.counts;
  if (
    !Array.isArray(perTool) ||
    !perTool.every((c) => Array.isArray(c) && c.length === 2 && typeof c[0] === "string" && isCount(c[1]))
  ) {
    throw new RangeError("result facts counts must be [tool, count] pairs");
  }
  const results = facts.results;
  const isResult = (r: unknown): boolean =>
    Array.isArray(r) &&
    r.length === 6 &&
    isCount(r[0]) &&
    isCount(r[1]) &&
    isCount(r[2]) &&
    typeof r[3] === "string" &&
    isCount(r[4]) &&
    isCount(r[5]);
  if (!Array.isArray(results) || !results.every(isResult)) {
    throw new RangeError("result facts results must be [seq, seq, seq, tool, count, count] tuples");
  }
  return facts as unknown as ResultFactsState;
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

const summaryKind: MemoKind = {
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

const windowKind: MemoKind = {
  prefix: WINDOW_PREFIX,
  prime: (log, resolution, key) => {
    windowedGroups(log, resolution, windowScopeOf(key));
    return true;
  },
  sweep: (log, key) => log.peekHistoryMemo(key) as GroupSweep<unknown> | undefined,
  encodeData: () => null,
  restore: (log, resolution, key, sweep) => {
    const restored = log.historyMemo(key, () => new GroupSweep<undefined>());
    restored.restore(log, resolution, { ...sweep, data: undefined });
  },
};

const retentionKind: MemoKind = {
  prefix: RETENTION_PREFIX,
  prime: primeRetention,
  sweep: (log, key) => (log.peekHistoryMemo(key) as RetentionMemo | undefined)?.sweep,
  exportExtra: (log, key, held) => (log.peekHistoryMemo(key) as RetentionMemo).facts.stateAt(log, held),
  encodeData: () => null,
  restore: (log, resolution, key, sweep, extra) => {
    const state = factsOf(extra);
    const policyOf = retentionPolicyOf(key);
    const memo = log.historyMemo<RetentionMemo>(key, () => ({
      facts: ResultFacts.restore(policyOf, log, state),
      sweep: new GroupSweep<undefined>(),
    }));
    memo.sweep.restore(log, resolution, { ...sweep, data: undefined });
  },
};

const KINDS: ReadonlyArray<MemoKind> = [summaryKind, windowKind, retentionKind];

function kindOf(key: string): MemoKind | undefined {
  return KINDS.find((k) => key.startsWith(k.prefix));
}

/**
 * Brings every memo of the history that a checkpoint can carry up to `resolution.plan` on `log` (a sweep per
 * memo, as a turn makes) and returns their keys.
 */
export function primeMemos(log: ThreadLog, resolution: SeqResolution): ReadonlyArray<string> {
  const keys: string[] = [];
  for (const key of log.historyMemoKeys()) {
    if (kindOf(key)?.prime(log, resolution, key) === true) keys.push(key);
  }
  return keys;
}

/** The sweep state of `plan` under `key`, when it was made on exactly `log` (a longer log's state does not fit). */
function sweepState(log: ThreadLog, plan: CompactionPlan, key: string): SweepState<unknown> | undefined {
  return kindOf(key)?.sweep(log, key)?.stateOf(plan, log);
}

/** The groups the next sweeps of the primed memos visit at least (a checkpoint must hold them). */
export function memoGroups(log: ThreadLog, plan: CompactionPlan, keys: ReadonlyArray<string>): number[] {
  const groups = new Set<number>();
  for (const key of keys) {
    const state = sweepState(log, plan, key);
    if (state === undefined) continue;
    for (const g of state.open) groups.add(g);
    for (let g = state.scanned; g < log.groupCount; g++) groups.add(g);
  }
  return [...groups].sort((a, b) => a - b);
}

/** The primed memos' state for a checkpoint of `plan` on `log` holding the seqs `held` says. */
export function exportMemos(
  log: ThreadLog,
  plan: CompactionPlan,
  keys: ReadonlyArray<string>,
  held: (seq: number) => boolean,
): MemoCheckpoint[] {
  const out: MemoCheckpoint[] = [];
  for (const key of keys) {
    const kind = kindOf(key)!;
    const state = sweepState(log, plan, key);
    const data = state === undefined ? undefined : kind.encodeData(state.data);
    if (state === undefined || data === undefined) continue;
    const extra = kind.exportExtra?.(log, key, held) ?? null;
    out.push({ key, state: { sweep: { open: [...state.open], scanned: state.scanned, data }, extra } });
  }
  return out;
}

/**
 * Puts checkpointed memos back on a restored log for the restored plan's resolution. Throws `ValidationError`
 * naming the memo when one does not fit (the caller then loads the thread in full).
 */
export function restoreMemos(
  log: ThreadLog,
  resolution: SeqResolution,
  memos: ReadonlyArray<MemoCheckpoint>,
): void {
  for (const { key, state } of memos) {
    const kind = kindOf(key);
    const where = { threadId: log.threadId, field: `checkpoint.memos[${JSON.stringify(key)}]` };
    if (kind === undefined) throw new ValidationError("unknown memo kind", where);
    try {
      const parsed = record(state, ["sweep", "extra"], "memo state");
      kind.restore(log, resolution, key, sweepOf(parsed.sweep), parsed.extra);
    } catch (error) {
      if (error instanceof ValidationError) throw error;
      throw new ValidationError(
        `memo does not fit: ${error instanceof Error ? error.message : error}`,
        where,
      );
    }
  }
}
