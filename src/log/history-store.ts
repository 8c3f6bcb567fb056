/**
 * The storage shared by the log values of one linear history (see docs/decisions/0001-shared-history-log.md).
 * A value of length L only ever reads indices < L, so appending in place is invisible to earlier values; a
 * second append from the same value (a branch) copies the first L entries.
 */
import type { GroupIndex } from "./group-index.js";
import type { Message } from "./message.js";

/** One message being added to a history and its pairing with earlier calls. */
export interface HistoryEntry {
  readonly message: Message;
  /** Seqs of the assistant messages whose calls this message answers (sorted, unique). */
  readonly answers: ReadonlyArray<number>;
  /** Per part, the seq of the assistant message holding the call it answers. */
  readonly callSeqByPart: ReadonlyArray<number>;
}

/** What the log values of one history share. */
export interface HistoryStore {
  readonly messages: Message[];
  /** `messages[i].id`, kept contiguous so span checks never touch message objects (cache misses add up). */
  readonly ids: string[];
  readonly seqById: Map<string, number>;
  /** For each tool message seq: the seqs of the assistant messages whose calls it answers. */
  readonly answers: Map<number, ReadonlyArray<number>>;
  /** For each tool message seq: per part, the seq of the assistant message holding the call it answers. */
  readonly callSeqByPart: Map<number, ReadonlyArray<number>>;
  /** For each assistant message seq with calls: the seqs of the tool messages answering them. */
  readonly answeredBy: Map<number, ReadonlyArray<number>>;
  /** Seqs of the user messages (where turns start), ascending. */
  readonly userSeqs: number[];
  /** Values other modules derive from this history (see `ThreadLog.historyMemo`); a branch starts without. */
  readonly memos: Map<string | object, unknown>;
  /** Groups of this history, extended in place as values ask for them. */
  groupIndex?: GroupIndex;
  /**
   * Set on a projected history (restored from a checkpoint, see `src/checkpoints/`): below `floor` it holds
   * only some messages, and the ids of the others come from `absentIds` when first needed.
   */
  projection?: Projection;
}

/** What a projected history knows of the messages it does not hold. */
export interface Projection {
  /**
   * Called when a log value is asked for something the history does not hold (`what`, e.g. "message at seq 12").
   * It never returns: whoever built the projection stops the operation there and runs it again on more of the
   * thread.
   */
  readonly miss: (what: string, seq?: number) => never;
  /** No log value of the history is shorter (the checkpoint's length). */
  readonly floor: number;
  /** Ids of the messages not held below `floor`, in seq order (decoded when first needed). */
  readonly absentIds: () => ReadonlyArray<string>;
  /** Seqs held below `floor` as ascending `[start, end)` pairs. */
  readonly held: ReadonlyArray<number>;
  /** Seq of every id not held, built from `absentIds` when first asked. */
  absentSeqById?: Map<string, number>;
  /** Answers the store gave for ids asked before `absentIds` was decoded (undefined: not an id not held). */
  stored?: Map<string, number | undefined>;
  /** True once the history's id table holds the absent ids too (see `ThreadLog.fullIdTable`). */
  idsFilled?: boolean;
}

/** The seq of an id the projection does not hold, or undefined (decodes the absent ids once). */
export function absentSeqOf(projection: Projection, id: string): number | undefined {
  if (projection.absentSeqById === undefined) {
    if (projection.stored?.has(id)) return projection.stored.get(id);
    const ids = projection.absentIds();
    const map = new Map<string, number>();
    let i = 0;
    forEachAbsentSeq(projection.held, projection.floor, (seq) => {
      map.set(ids[i++]!, seq);
    });
    projection.absentSeqById = map;
  }
  return projection.absentSeqById.get(id);
}

/** The id of a seq the projection does not hold (undefined for a held seq or one at or past the floor). */
export function absentIdAt(projection: Projection, seq: number): string | undefined {
  if (seq < 0 || seq >= projection.floor) return undefined;
  // Its position among the absent seqs: the seq less the held seqs below it.
  let heldBelow = 0;
  const { held } = projection;
  for (let r = 0; r < held.length && held[r]! <= seq; r += 2) {
    if (seq < held[r + 1]!) return undefined;
    heldBelow += held[r + 1]! - held[r]!;
  }
  return projection.absentIds()[seq - heldBelow];
}

/** The runs of the seqs below `floor` outside the `held` runs (both ascending `[start, end)` pairs). */
export function absentRuns(held: ReadonlyArray<number>, floor: number): number[] {
  const runs: number[] = [];
  let next = 0;
  for (let r = 0; r <= held.length; r += 2) {
    const end = r < held.length ? held[r]! : floor;
    if (end > next) runs.push(next, end);
    next = r < held.length ? held[r + 1]! : floor;
  }
  return runs;
}

/** Calls `visit` with each seq below `floor` outside the `held` runs (ascending `[start, end)` pairs), ascending. */
export function forEachAbsentSeq(
  held: ReadonlyArray<number>,
  floor: number,
  visit: (seq: number) => void,
): void {
  const runs = absentRuns(held, floor);
  for (let r = 0; r < runs.length; r += 2) for (let seq = runs[r]!; seq < runs[r + 1]!; seq++) visit(seq);
}

/** Whether a seq lies in ascending `[start, end)` runs: an odd number of run bounds is at or below it. */
export function inRuns(runs: ArrayLike<number>, seq: number): boolean {
  return countBelow(runs, seq + 1) % 2 === 1;
}

/** A store with no messages. */
export function emptyHistory(): HistoryStore {
  return {
    messages: [],
    ids: [],
    seqById: new Map(),
    answers: new Map(),
    callSeqByPart: new Map(),
    answeredBy: new Map(),
    userSeqs: [],
    memos: new Map(),
  };
}

/**
 * Strictly ascending seqs as `[start, end)` runs in flat pairs (consecutive seqs share a run), or undefined when
 * they do not strictly ascend.
 */
export function ascendingRuns(seqs: Iterable<number>): number[] | undefined {
  const runs: number[] = [];
  let previous = -1;
  for (const seq of seqs) {
    if (seq <= previous) return undefined;
    if (seq === previous + 1 && runs.length > 0) runs[runs.length - 1] = seq + 1;
    else runs.push(seq, seq + 1);
    previous = seq;
  }
  return runs;
}

/** The number of entries of an ascending list that are below `limit`. */
export function countBelow(sorted: ArrayLike<number>, limit: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < limit) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A copy of the first `length` entries, for a value that appends while it is not the tip (a branch). */
export function branchHistory(store: HistoryStore, length: number): HistoryStore {
  const messages = store.messages.slice(0, length);
  const ids = store.ids.slice(0, length);
  const seqById = new Map<string, number>();
  messages.forEach((m, i) => {
    seqById.set(m.id, i);
  });
  const answers = new Map([...store.answers].filter(([seq]) => seq < length));
  const callSeqByPart = new Map([...store.callSeqByPart].filter(([seq]) => seq < length));
  const answeredBy = new Map<number, ReadonlyArray<number>>();
  for (const [seq, results] of store.answeredBy) {
    if (seq >= length) continue;
    const kept = results.filter((r) => r < length);
    if (kept.length > 0) answeredBy.set(seq, kept);
  }
  const userSeqs = store.userSeqs.slice(0, countBelow(store.userSeqs, length));
  const branch: HistoryStore = {
    messages,
    ids,
    seqById,
    answers,
    callSeqByPart,
    answeredBy,
    userSeqs,
    memos: new Map(),
  };
  // A projected branch keeps what it knows of the messages it does not hold; its groups are rebuilt from the
  // first message, which fails loudly on the first one missing (the engine only appends at the tip).
  if (store.projection !== undefined) branch.projection = store.projection;
  return branch;
}

/** Adds one message at the end of the store (its seq must be the store's length). */
export function addToHistory(store: HistoryStore, entry: HistoryEntry): void {
  const { message } = entry;
  const seq = message.seq;
  store.messages.push(message);
  store.ids.push(message.id);
  store.seqById.set(message.id, seq);
  if (message.role === "user") store.userSeqs.push(seq);
  if (entry.answers.length === 0) return;
  store.answers.set(seq, entry.answers);
  store.callSeqByPart.set(seq, entry.callSeqByPart);
  // A new list per result: `resultsOf` hands these lists out, so they are never changed in place.
  for (const callSeq of entry.answers) {
    store.answeredBy.set(callSeq, [...(store.answeredBy.get(callSeq) ?? []), seq]);
  }
}
