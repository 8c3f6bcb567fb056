import type { Message } from "./message.js";

/** A turn: from one user message up to (not including) the next; messages before the first user join turn 0. */
export interface Turn {
  readonly index: number;
  readonly startSeq: number;
  /** Exclusive end. */
  readonly endSeq: number;
}

/** Computes the turns of a log. */
export function computeTurns(log: {
  readonly length: number;
  at(seq: number): Message | undefined;
}): ReadonlyArray<Turn> {
  const starts: number[] = [];
  for (let seq = 0; seq < log.length; seq++) {
    if (log.at(seq)!.role === "user") starts.push(seq);
  }
  return turnsFromStarts(starts, log.length);
}

/** Turns of a log of `length` messages from the ascending seqs of its user messages (later seqs are ignored). */
export function turnsFromStarts(userSeqs: ReadonlyArray<number>, length: number): ReadonlyArray<Turn> {
  if (length === 0) return Object.freeze([]);
  const starts: number[] = [];
  for (let i = 0; i < userSeqs.length && userSeqs[i]! < length; i++) starts.push(userSeqs[i]!);
  // Messages before the first user message join turn 0 (the first user message's turn when there is one).
  if (starts.length === 0 || starts[0] !== 0) starts[0] = 0;
  const turns = starts.map((startSeq, index) =>
    Object.freeze({ index, startSeq, endSeq: starts[index + 1] ?? length }),
  );
  return Object.freeze(turns);
}

/** The index of the turn containing a seq (binary search), or -1. */
export function turnIndexOf(turns: ReadonlyArray<Turn>, seq: number): number {
  let lo = 0;
  let hi = turns.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const turn = turns[mid]!;
    if (seq < turn.startSeq) hi = mid - 1;
    else if (seq >= turn.endSeq) lo = mid + 1;
    else return mid;
  }
  return -1;
}
