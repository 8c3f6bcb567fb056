import { ascendingRuns } from "../log/history-store.js";
import type { LogView } from "../log/log-view.js";

/**
 * Spans built from seqs remember where their ids are. A strategy knows the seqs of the messages it names; the
 * plan stores their ids (explicit ids, never index ranges: docs/ARCHITECTURE.md), and resolution would otherwise map each
 * id back to its seq — for a drop span over a 100,000-message thread, 100,000 string comparisons every time a
 * new plan is resolved. A history's seq → id table only grows, so the runs of seqs recorded here stay true for
 * every log value of that history; plans read back from a store carry no runs and resolve by id as before.
 */
interface SpanRuns {
  /** The id table of the history the seqs index (shared by all its log values, append-only). */
  readonly table: ArrayLike<string>;
  /** Ascending, non-overlapping, non-adjacent runs as [start, end) pairs. */
  readonly runs: Int32Array;
}

const runsBySpan = new WeakMap<ReadonlyArray<string>, SpanRuns>();

/**
 * The ids of `seqs` (ascending, no repeats, each below `log.length`) as a span, with the seqs remembered for
 * `resolveForLog`. Throws on seqs out of order or out of range: a wrong record would resolve the span wrongly.
 */
export function spanOfSeqs(log: LogView, seqs: ArrayLike<number>): string[] {
  const list = Array.from(seqs);
  const runs = ascendingRuns(list);
  if (runs === undefined) {
    const at = list.findIndex((seq, i) => !(seq > (i === 0 ? -1 : list[i - 1]!)));
    throw new RangeError(`span seqs must ascend (seq ${list[at]} after ${at === 0 ? -1 : list[at - 1]})`);
  }
  return spanOfRuns(log, runs);
}

/**
 * The span of the seq runs `[start, end)` given as flat pairs (ascending, apart, within the log), with the runs
 * remembered for `resolveForLog`. Throws `RangeError` on runs out of order, touching or out of range.
 */
export function spanOfRuns(log: LogView, runs: ReadonlyArray<number>): string[] {
  const length = log.length;
  for (let r = 0; r < runs.length; r += 2) {
    const start = runs[r]!;
    const end = runs[r + 1]!;
    const floor = r === 0 ? 0 : runs[r - 1]! + 1;
    if (!(start >= floor && end > start && end <= length)) {
      throw new RangeError(
        `span run [${start}, ${end}) is out of order or outside the log (length ${length})`,
      );
    }
  }
  // Copy the ids run by run as slices of the table (block copies; pushing 100,000 ids one by one costs ~10×),
  // joined in batches so a span of many short runs never spreads too many arguments.
  // A span lists every id, held or not: a projected log fills in the ids it does not hold (once, from its
  // checkpoint's tail) when the runs reach one of them. The table keeps its identity either way.
  let table = log.idTable() as ReadonlyArray<string>;
  if (log.partial && !allPresent(table, runs)) table = log.fullIdTable() as ReadonlyArray<string>;
  let span: string[] = [];
  const batch: string[][] = [];
  for (let r = 0; r < runs.length; r += 2) {
    batch.push(table.slice(runs[r], runs[r + 1]));
    if (batch.length === 1024 || r + 2 >= runs.length) {
      span = span.concat(...batch);
      batch.length = 0;
    }
  }
  runsBySpan.set(span, { table, runs: Int32Array.from(runs) });
  return span;
}

/** Whether `table` has an entry at every seq of the runs. */
function allPresent(table: ReadonlyArray<string | undefined>, runs: ReadonlyArray<number>): boolean {
  for (let r = 0; r < runs.length; r += 2) {
    for (let seq = runs[r]!; seq < runs[r + 1]!; seq++) if (table[seq] === undefined) return false;
  }
  return true;
}

/**
 * The seq runs recorded for a span when it was built from seqs of this log's history, or undefined (a span
 * from elsewhere, e.g. parsed from JSON, or recorded against another history).
 */
export function recordedRuns(span: ReadonlyArray<string>, log: LogView): Int32Array | undefined {
  const known = runsBySpan.get(span);
  if (known === undefined || known.table !== log.idTable()) return undefined;
  const { runs } = known;
  return runs.length === 0 || runs[runs.length - 1]! <= log.length ? runs : undefined;
}

/**
 * A span as ascending seq runs of `log` (flat `[start, end)` pairs), or undefined when it cannot be one: an id
 * the log does not know, or ids out of log order or repeated. Uses the runs recorded when the span was built
 * from seqs; otherwise finds each id (by the next slot of the id table first, as resolution does).
 */
export function runsOfSpan(span: ReadonlyArray<string>, log: LogView): Int32Array | undefined {
  const known = recordedRuns(span, log);
  if (known !== undefined) return known;
  const table = log.idTable();
  const seqs: number[] = [];
  let previous = -1;
  for (let i = 0; i < span.length; i++) {
    const id = span[i]!;
    const seq = previous + 1 < log.length && table[previous + 1] === id ? previous + 1 : log.seqOf(id);
    if (seq === undefined) return undefined;
    seqs.push(seq);
    previous = seq;
  }
  const runs = ascendingRuns(seqs);
  return runs === undefined ? undefined : Int32Array.from(runs);
}
