import type { ThreadLog } from "../log/thread-log.js";

/**
 * Spans built from seqs remember where their ids are. A strategy knows the seqs of the messages it names; the
 * plan stores their ids (DESIGN.md: explicit ids, never index ranges), and resolution would otherwise map each
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
export function spanOfSeqs(log: ThreadLog, seqs: ArrayLike<number>): string[] {
  const table = log.idTable();
  const span = new Array<string>(seqs.length);
  const runs: number[] = [];
  let previous = -1;
  for (let i = 0; i < seqs.length; i++) {
    const seq = seqs[i]!;
    if (!(seq > previous && seq < log.length)) {
      throw new RangeError(
        `span seqs must ascend within the log (seq ${seq} after ${previous}, log length ${log.length})`,
      );
    }
    span[i] = table[seq]!;
    if (seq === previous + 1 && runs.length > 0) runs[runs.length - 1] = seq + 1;
    else runs.push(seq, seq + 1);
    previous = seq;
  }
  runsBySpan.set(span, { table, runs: Int32Array.from(runs) });
  return span;
}

/**
 * The seq runs recorded for a span when it was built from seqs of this log's history, or undefined (a span
 * from elsewhere, e.g. parsed from JSON, or recorded against another history).
 */
export function recordedRuns(span: ReadonlyArray<string>, log: ThreadLog): Int32Array | undefined {
  const known = runsBySpan.get(span);
  if (known === undefined || known.table !== log.idTable()) return undefined;
  const { runs } = known;
  return runs.length === 0 || runs[runs.length - 1]! <= log.length ? runs : undefined;
}
