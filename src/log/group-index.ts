import { awaitsCalls, type Group, type GroupSource, groupKindOf, isReasoningOnly } from "./groups.js";
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

const INITIAL_CAPACITY = 1024;

/** Spare entries a restored table of `n` gets. */
function roomFor(n: number): number {
  return Math.max(INITIAL_CAPACITY, n >> 3);
}

/** `table` copied into one at least twice as long and past `index`, new entries `empty`. */
function grownTable(table: Int32Array, index: number, empty: number): Int32Array {
  const grown = new Int32Array(Math.max(table.length * 2, index + 1));
  if (empty !== 0) grown.fill(empty, table.length);
  grown.set(table);
  return grown;
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
  /** Group index per seq; -1 where unknown (a seq a restored index does not hold). Grows by doubling. */
  #indexBySeq: Int32Array = new Int32Array(INITIAL_CAPACITY).fill(-1);
  /** Per group: its versions and, in step, the log length from which each is current. */
  readonly #versions: Group[][] = [];
  readonly #since: number[][] = [];
  /**
   * Groups below this index exist in every log value of the history (a restored index starts with them; their
   * birth lengths are not kept). 0 for an index built from the first message.
   */
  #bornBase = 0;
  /** Per group from `#bornBase` on: the log length from which it exists (ascending). */
  readonly #born: number[] = [];
  /** Per group: calls without a result (0 for a group a restored index does not hold). Grows by doubling. */
  #openCalls: Int32Array = new Int32Array(INITIAL_CAPACITY);
  /** What a restored index does when asked for a group or seq it does not hold (see `restore`). */
  #miss: (what: string, seq?: number) => never = (what) => {
    throw new RangeError(`${what} is not in this log`);
  };
  /** Seqs of messages that are pinned whatever happens: system messages and `meta.pinned`. */
  readonly #pinnedSeqs: number[] = [];

  /** Indexes messages up to `log.length` (messages already indexed are skipped). */
  extend(log: GroupSource): void {
    for (let seq = this.length; seq < log.length; seq++) {
      const message = log.at(seq)!;
      if (message.role === "system" || message.meta.pinned === true) this.#pinnedSeqs.push(seq);
      if (message.role === "tool" || !this.#joinReasoning(log, message, seq)) {
        this.#settleReasoning(log, seq);
        if (message.role === "tool") this.#addResult(log, seq);
        else this.#addGroup(message, seq);
      }
      this.length = seq + 1;
    }
  }

  #addGroup(message: Message, seq: number): void {
    const index = this.#bornBase + this.#born.length;
    const calls = countCalls(message);
    // Assigned by position, not pushed: a restored index holds only some seqs and groups below its start.
    this.#setIndex(seq, index);
    if (index >= this.#openCalls.length) this.#openCalls = grownTable(this.#openCalls, index, 0);
    this.#openCalls[index] = calls;
    this.#born.push(seq + 1);
    this.#since[index] = [seq + 1];
    const group: Group = {
      index,
      kind: groupKindOf(message),
      seqs: Object.freeze([seq]),
      messageIds: Object.freeze([message.id]),
      // A reasoning-only message ends the log here: the calls it led to may still join it (see `Group.pending`).
      pending: calls > 0 || isReasoningOnly(message),
    };
    this.#versions[index] = [Object.freeze(group)];
  }

  /**
   * Calls right after a reasoning-only assistant message join its group (see `Group`): that group becomes their
   * `tool_call` group from this length on. False when the message does not qualify (the caller adds a group).
   */
  #joinReasoning(log: GroupSource, message: Message, seq: number): boolean {
    const calls = countCalls(message);
    if (calls === 0 || seq === 0) return false;
    const index = seq - 1 < this.#indexBySeq.length ? this.#indexBySeq[seq - 1]! : -1;
    const versions = index < 0 ? undefined : this.#versions[index];
    const previous = versions?.[versions.length - 1];
    if (previous === undefined || previous.seqs.length !== 1 || !isReasoningOnly(log.at(seq - 1)))
      return false;
    this.#setIndex(seq, index);
    this.#openCalls[index] = calls;
    versions!.push(
      Object.freeze({
        ...previous,
        kind: "tool_call" as const,
        seqs: Object.freeze([...previous.seqs, seq]),
        messageIds: Object.freeze([...previous.messageIds, message.id]),
        pending: true,
      }),
    );
    this.#since[index]!.push(seq + 1);
    return true;
  }

  /**
   * A message at `seq` that does not join the reasoning-only group ending the log before it settles that group:
   * nothing can join it any more, so it is pending no longer from this length on.
   */
  #settleReasoning(log: GroupSource, seq: number): void {
    const index = seq > 0 && seq - 1 < this.#indexBySeq.length ? this.#indexBySeq[seq - 1]! : -1;
    const versions = index < 0 ? undefined : this.#versions[index];
    const previous = versions?.[versions.length - 1];
    if (previous === undefined || !previous.pending || !awaitsCalls(log, previous.seqs, seq)) return;
    versions!.push(Object.freeze({ ...previous, pending: false }));
    this.#since[index]!.push(seq + 1);
  }

  #addResult(log: GroupSource, seq: number): void {
    const targets = new Set(log.answersOf(seq).map((callSeq) => this.#indexBySeq[callSeq]!));
    const index = [...targets][0]!;
    this.#setIndex(seq, index);
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

  /** Number of groups in the prefix of length `length` (never shorter than a restored index's start). */
  countAt(length: number): number {
    return this.#bornBase + lastAtMost(this.#born, length) + 1;
  }

  /** Whether the index knows group `index` (a restored index knows only the groups its checkpoint held). */
  knows(index: number): boolean {
    return this.#since[index] !== undefined;
  }

  /** Group `index` as it is in the prefix of length `length`. */
  groupAt(index: number, length: number): Group {
    const since = this.#since[index];
    if (since === undefined) return this.#miss(`group ${index}`);
    let v = since.length - 1;
    while (v > 0 && since[v]! > length) v--;
    return this.#versions[index]![v]!;
  }

  #setIndex(seq: number, index: number): void {
    if (seq >= this.#indexBySeq.length) this.#indexBySeq = grownTable(this.#indexBySeq, seq, -1);
    this.#indexBySeq[seq] = index;
  }

  /**
   * The seq → group index table (read only below the caller's length; -1 at a seq a restored index does not
   * hold). The same table until the index next grows.
   */
  indexTable(): ArrayLike<number> {
    return this.#indexBySeq;
  }

  /** The group index of a seq. */
  indexOf(seq: number): number {
    const index = seq < this.length ? this.#indexBySeq[seq]! : -1;
    if (index < 0) return this.#miss(`message at seq ${seq}`, seq);
    return index;
  }

  /**
   * The state at `log.length` of the given groups (ascending indices). Only valid while the index is not broken
   * (`log.length < brokenAt`): a restored index assumes every group is one message and the results of its calls.
   */
  stateAt(log: GroupSource, held: ReadonlyArray<number>): GroupIndexState {
    const length = log.length;
    const groups = held.map((g) => {
      const group = this.groupAt(g, length);
      let open = 0;
      // Open calls at `length`: the group's call parts less the result parts that answered them by then.
      for (const seq of group.seqs) {
        const message = log.at(seq)!;
        open += message.role === "tool" ? -message.parts.length : countCalls(message);
      }
      return { group, openCalls: open };
    });
    return {
      length,
      count: this.countAt(length),
      pinnedSeqs: this.pinnedSeqsBelow(length),
      groups,
    };
  }

  /**
   * An index whose log values start at `state.length`, holding only the given groups: what a projected log
   * (docs/decisions/0009) needs to number groups, find the groups of the messages it holds and extend them as
   * messages arrive. Asking for a group or seq it does not hold calls `miss` (which never returns).
   */
  static restore(state: GroupIndexState, miss: (what: string, seq?: number) => never): GroupIndex {
    const index = new GroupIndex();
    index.#miss = miss;
    index.length = state.length;
    index.#bornBase = state.count;
    index.#pinnedSeqs.push(...state.pinnedSeqs);
    // Typed tables sized once (cheap, and never scanned by the collector). The per-group lists are written in
    // ascending order, only for the groups held: a long history's array then stays sparse.
    // With room for the messages a worker appends next (growing copies the whole table).
    index.#indexBySeq = new Int32Array(state.length + roomFor(state.length)).fill(-1);
    index.#openCalls = new Int32Array(state.count + roomFor(state.count));
    for (const { group, openCalls } of state.groups) {
      for (const seq of group.seqs) index.#indexBySeq[seq] = group.index;
      index.#versions[group.index] = [group];
      index.#since[group.index] = [0];
      index.#openCalls[group.index] = openCalls;
    }
    return index;
  }

  /** Statically pinned seqs (system, `meta.pinned`) below `length`, ascending. */
  pinnedSeqsBelow(length: number): ReadonlyArray<number> {
    return this.#pinnedSeqs.slice(0, lastAtMost(this.#pinnedSeqs, length - 1) + 1);
  }
}

/** What a restored index needs of one group whose messages a projected log holds (see `GroupIndex.restore`). */
export interface RestoredGroup {
  readonly group: Group;
  /** Calls of the group without a result at the restored length. */
  readonly openCalls: number;
}

/** The state of a group index at a log length, limited to the groups a projected log holds. */
export interface GroupIndexState {
  /** Log length the state describes. */
  readonly length: number;
  /** Number of groups at that length. */
  readonly count: number;
  /** Statically pinned seqs below `length`, ascending (pinned messages are always held). */
  readonly pinnedSeqs: ReadonlyArray<number>;
  /** The held groups, ascending by index, as they are at `length`. */
  readonly groups: ReadonlyArray<RestoredGroup>;
}
