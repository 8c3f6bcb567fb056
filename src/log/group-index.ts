import { type Group, type GroupSource, groupKindOf } from "./groups.js";
import type { Message } from "./message.js";

function countCalls(message: Message): number {
  let calls = 0;
  for (const part of message.parts) if (part.type === "tool_call") calls++;
  return calls;
}

/** The last index in an ascending list whose value is ≤ `limit`, or -1. */
function lastAtMost(sorted: ReadonlyArray<number>, limit: number): number {
  let lo = 0;
  let hi = sorted.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! <= limit) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/**
 * Groups of one linear log history, shared by all its log values and extended in place as messages arrive. A
 * group that gains a result gets a new immutable version valid from that log length on, so a value of length L
 * sees exactly the groups (and pending flags) of its own prefix, and an append of k messages costs O(k).
 * A tool message that fuses two groups breaks the index from that point (rare; callers recompute from scratch).
 */
export class GroupIndex {
  /** Messages indexed so far. */
  length = 0;
  /** Log length from which the index is unusable, or Infinity. */
  brokenAt = Number.POSITIVE_INFINITY;
  readonly #indexBySeq: number[] = [];
  /** Per group: its versions and, in step, the log length from which each is current. */
  readonly #versions: Group[][] = [];
  readonly #since: number[][] = [];
  /** Per group: the log length from which it exists (ascending). */
  readonly #born: number[] = [];
  readonly #openCalls: number[] = [];
  /** Seqs of messages that are pinned whatever happens: system messages and `meta.pinned`. */
  readonly #pinnedSeqs: number[] = [];

  /** Indexes messages up to `log.length` (messages already indexed are skipped). */
  extend(log: GroupSource): void {
    for (let seq = this.length; seq < log.length; seq++) {
      const message = log.at(seq)!;
      if (message.role === "system" || message.meta.pinned === true) this.#pinnedSeqs.push(seq);
      if (message.role === "tool") this.#addResult(log, seq);
      else this.#addGroup(message, seq);
      this.length = seq + 1;
    }
  }

  #addGroup(message: Message, seq: number): void {
    const index = this.#versions.length;
    const calls = countCalls(message);
    this.#indexBySeq.push(index);
    this.#openCalls.push(calls);
    this.#born.push(seq + 1);
    this.#since.push([seq + 1]);
    const group: Group = {
      index,
      kind: groupKindOf(message),
      seqs: Object.freeze([seq]),
      messageIds: Object.freeze([message.id]),
      pending: calls > 0,
    };
    this.#versions.push([Object.freeze(group)]);
  }

  #addResult(log: GroupSource, seq: number): void {
    const targets = new Set(log.answersOf(seq).map((callSeq) => this.#indexBySeq[callSeq]!));
    const index = [...targets][0]!;
    this.#indexBySeq.push(index);
    if (targets.size > 1 && this.brokenAt === Number.POSITIVE_INFINITY) this.brokenAt = seq + 1;
    const versions = this.#versions[index]!;
    const previous = versions[versions.length - 1]!;
    this.#openCalls[index]! -= log.at(seq)!.parts.length;
    const next: Group = {
      ...previous,
      seqs: Object.freeze([...previous.seqs, seq]),
      messageIds: Object.freeze([...previous.messageIds, log.at(seq)!.id]),
      pending: this.#openCalls[index]! > 0,
    };
    versions.push(Object.freeze(next));
    this.#since[index]!.push(seq + 1);
  }

  /** Number of groups in the prefix of length `length`. */
  countAt(length: number): number {
    return lastAtMost(this.#born, length) + 1;
  }

  /** Group `index` as it is in the prefix of length `length`. */
  groupAt(index: number, length: number): Group {
    const since = this.#since[index]!;
    let v = since.length - 1;
    while (v > 0 && since[v]! > length) v--;
    return this.#versions[index]![v]!;
  }

  /** The seq → group index table (shared; read only below the caller's length). */
  indexTable(): ArrayLike<number> {
    return this.#indexBySeq;
  }

  /** The group index of a seq. */
  indexOf(seq: number): number {
    return this.#indexBySeq[seq]!;
  }

  /** Statically pinned seqs (system, `meta.pinned`) below `length`, ascending. */
  pinnedSeqsBelow(length: number): ReadonlyArray<number> {
    return this.#pinnedSeqs.slice(0, lastAtMost(this.#pinnedSeqs, length - 1) + 1);
  }
}
