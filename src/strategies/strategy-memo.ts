/**
 * What a strategy remembers between turns, and how a thread checkpoint carries it (docs/decisions/0009). A
 * strategy that sweeps the log keeps a memo in the history (`LogView.historyMemo`, under keys starting with its
 * `prefix`) so a turn looks only at what changed. A worker restored from a checkpoint holds only some messages and
 * could not sweep the whole log; a strategy that declares a `StrategyMemo` lets the checkpoint writer bring its memo
 * up to the committed plan, keep the groups its next sweep visits, and export the memo's state, which the reader
 * puts back. A strategy without one needs nothing: on a restored log it sweeps in full, reads a message the log does
 * not hold, and the engine loads the thread in full.
 */
import type { LogView } from "../log/log-view.js";
import type { SeqResolution } from "../plan/resolve-for-log.js";
import type { GroupSweep, SweepState } from "./group-sweep.js";

/** How a strategy's history memo travels in a thread checkpoint. */
export interface StrategyMemo {
  /** The history-memo key prefix of this kind of memo (the rest of the key is the strategy's own). */
  readonly prefix: string;
  /** Brings the memo under `key` up to `resolution.plan` on `log`; false when it cannot. */
  prime(log: LogView, resolution: SeqResolution, key: string): boolean;
  /** The memo's sweep in the history. */
  sweep(log: LogView, key: string): GroupSweep<unknown> | undefined;
  /** Extra state beside the sweep's, from the held messages only. */
  exportExtra?(log: LogView, key: string, held: (seq: number) => boolean): unknown;
  /** The sweep's strategy data as JSON, or undefined when it cannot travel. */
  encodeData(data: unknown): unknown | undefined;
  /**
   * Puts the memo back on a restored log. Throws on a state that does not fit (a `RangeError` naming what is
   * wrong: the reader turns it into a `ValidationError` naming the memo, and the thread is loaded in full).
   */
  restore(
    log: LogView,
    resolution: SeqResolution,
    key: string,
    sweep: SweepState<unknown>,
    extra: unknown,
  ): void;
}

// A checkpoint's memos are checked by hand, not by schema: a retention memo lists every held result, and a
// schema per number costs a restore more than the rest of it. Each check throws RangeError naming what is wrong.

/** Whether `value` is a whole number ≥ 0. */
export function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

/** `value` as an array of whole numbers ≥ 0, or a RangeError naming `what`. */
export function counts(value: unknown, what: string): ReadonlyArray<number> {
  if (!Array.isArray(value) || !value.every(isCount)) throw new RangeError(`${what} must be integers ≥ 0`);
  return value;
}

/** `value` as a plain object with no keys but `keys`, or a RangeError naming `what`. */
export function record(value: unknown, keys: ReadonlyArray<string>, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new RangeError(`${what} must be an object`);
  }
  const extra = Object.keys(value).find((k) => !keys.includes(k));
  if (extra !== undefined) throw new RangeError(`${what} has an unknown field ${JSON.stringify(extra)}`);
  return value as Record<string, unknown>;
}

/** The seqs of ascending `[start, end)` runs in flat pairs. */
export function seqsOfRuns(runs: ReadonlyArray<number>): number[] {
  let total = 0;
  for (let r = 0; r + 1 < runs.length; r += 2) total += runs[r + 1]! - runs[r]!;
  const seqs = new Array<number>(total);
  let i = 0;
  for (let r = 0; r + 1 < runs.length; r += 2) for (let q = runs[r]!; q < runs[r + 1]!; q++) seqs[i++] = q;
  return seqs;
}

/** The memos of the given strategies, one per prefix (strategies without one left out). */
export function memosOf(strategies: ReadonlyArray<{ readonly memo?: StrategyMemo }>): StrategyMemo[] {
  const out: StrategyMemo[] = [];
  for (const { memo } of strategies) {
    if (memo !== undefined && !out.some((m) => m.prefix === memo.prefix)) out.push(memo);
  }
  return out;
}
