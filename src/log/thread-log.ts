import { ValidationError } from "../errors/ledger-error.js";
import { type BatchEntry, prepareBatch, trustedBatch } from "./append-batch.js";
import { GroupIndex } from "./group-index.js";
import { type CallRef, computeGroups, type Group, type GroupsSnapshot } from "./groups.js";
import {
  absentIdAt,
  absentSeqOf,
  addToHistory,
  branchHistory,
  countBelow,
  emptyHistory,
  forEachAbsentSeq,
  type HistoryStore,
} from "./history-store.js";
import type { LogView } from "./log-view.js";
import type { Message, MessageInput } from "./message.js";
import { type Turn, turnsFromStarts } from "./turns.js";

export type { CallRef } from "./groups.js";

/**
 * Access to a log value's history for the code that builds and reads partial logs (the checkpoint wing,
 * `src/checkpoints/`). Not part of the public API: everything else reads a log through `LogView`.
 */
export interface HistoryAccess {
  /** The history `log` reads (shared by every value of it). */
  history(log: ThreadLog): HistoryStore;
  /** The history's group index, extended to `log`'s length. */
  groupIndex(log: ThreadLog): GroupIndex;
  /** A log value of `length` messages over `history`, with these pending calls. */
  over(
    threadId: string,
    history: HistoryStore,
    length: number,
    pending: ReadonlyMap<string, CallRef>,
  ): ThreadLog;
}

let access: HistoryAccess | undefined;

/** See `HistoryAccess`. */
export function historyAccess(): HistoryAccess {
  return access!;
}

/**
 * An append-only thread log: a `LogView` that can be extended. `append` returns a new log value; earlier values
 * and all messages stay unchanged and deeply frozen. A batch is validated as a whole and appends nothing when any
 * message is bad. Made by the `ThreadLog` factories (`empty`, `from`, `fromTrusted`).
 *
 * @example
 * const log = ThreadLog.empty("t1").append([
 *   { role: "user", parts: [{ type: "text", text: "hi" }] },
 * ]);
 * log.length; // 1
 */
export interface ThreadLog extends LogView {
  /** Returns a new log with the messages appended, or throws `ValidationError` and appends nothing. */
  append(inputs: ReadonlyArray<MessageInput>): ThreadLog;
  /**
   * Appends messages that a log already validated and hashed when they were first appended — rows read back
   * from a store, which checked them on the way in — without the schema check, copies and hashing of `append`.
   * Seq order, unique ids and the pairing of results with calls are still worked out, and a message that breaks
   * them throws `ValidationError`. Replay uses `append`: it must notice a row changed after it was stored.
   */
  appendTrusted(messages: ReadonlyArray<Message>): ThreadLog;
}

/** The factories of thread logs. */
export const ThreadLog = Object.freeze({
  /** An empty log for a thread. */
  empty(threadId: string): ThreadLog {
    return LogValue.empty(threadId);
  },
  /** Builds a log from inputs in one atomic append. */
  from(threadId: string, inputs: ReadonlyArray<MessageInput>): ThreadLog {
    return LogValue.empty(threadId).append(inputs);
  },
  /** Builds a log from stored messages without checking or hashing them again (see `appendTrusted`). */
  fromTrusted(threadId: string, messages: ReadonlyArray<Message>): ThreadLog {
    return LogValue.empty(threadId).appendTrusted(messages);
  },
});

/** The one implementation of `ThreadLog`: a length over a history shared by the values of one linear history. */
class LogValue implements ThreadLog {
  readonly threadId: string;
  readonly length: number;
  readonly pendingCalls: ReadonlyMap<string, CallRef>;
  readonly #store: HistoryStore;
  #messages: ReadonlyArray<Message> | undefined;
  #groups: ReadonlyArray<Group> | undefined;
  #groupSnap: GroupsSnapshot | undefined;
  #pinned: ReadonlyArray<number> | undefined;
  #view: GroupIndex | GroupsSnapshot | undefined;
  #turns: ReadonlyArray<Turn> | undefined;

  static {
    access = {
      history: (log) => LogValue.#own(log).#store,
      groupIndex: (log) => LogValue.#own(log).#groupIndex(),
      over: (threadId, history, length, pending) => new LogValue(threadId, history, length, pending),
    };
  }

  private constructor(
    threadId: string,
    store: HistoryStore,
    length: number,
    pending: ReadonlyMap<string, CallRef>,
  ) {
    this.threadId = threadId;
    this.#store = store;
    this.length = length;
    this.pendingCalls = pending;
  }

  static empty(threadId: string): LogValue {
    if (typeof threadId !== "string" || threadId.length === 0) {
      throw new ValidationError("thread id must be a non-empty string", { field: "threadId" });
    }
    return new LogValue(threadId, emptyHistory(), 0, new Map());
  }

  static #own(log: ThreadLog): LogValue {
    if (!(log instanceof LogValue)) throw new TypeError("not a log value made by ThreadLog");
    return log;
  }

  /** All messages in seq order (frozen; computed once per log value). A partial log stops the operation. */
  get messages(): ReadonlyArray<Message> {
    const projection = this.#store.projection;
    if (projection !== undefined) this.#notHeld(projection.held[0] === 0 ? (projection.held[1] ?? 0) : 0);
    this.#messages ??= Object.freeze(this.#store.messages.slice(0, this.length));
    return this.#messages;
  }

  /**
   * The message at a seq, or undefined past the end. A partial log asked for a message it does not hold stops the
   * operation through its history's `miss` (see `Projection`).
   */
  at(seq: number): Message | undefined {
    if (seq < 0 || seq >= this.length) return undefined;
    return this.#store.messages[seq] ?? this.#notHeld(seq);
  }

  holds(seq: number): boolean {
    return seq >= 0 && seq < this.length && this.#store.messages[seq] !== undefined;
  }

  get partial(): boolean {
    return this.#store.projection !== undefined;
  }

  #notHeld(seq: number): never {
    const projection = this.#store.projection;
    if (projection === undefined) throw new RangeError(`seq ${seq} is not in thread ${this.threadId}`);
    return projection.miss(`message at seq ${seq}`, seq);
  }

  byId(id: string): Message | undefined {
    const seq = this.seqOf(id);
    return seq === undefined ? undefined : this.at(seq);
  }

  holdsId(id: string): boolean {
    const seq = this.#store.seqById.get(id);
    return seq !== undefined && seq < this.length;
  }

  idAt(seq: number): string | undefined {
    if (seq < 0 || seq >= this.length) return undefined;
    const id = this.#store.ids[seq];
    if (id !== undefined) return id;
    const projection = this.#store.projection;
    return projection === undefined ? undefined : absentIdAt(projection, seq);
  }

  seqOf(id: string, hint?: number): number | undefined {
    if (hint !== undefined && hint >= 0 && hint < this.length && this.#store.ids[hint] === id) return hint;
    const seq = this.#store.seqById.get(id);
    if (seq !== undefined) return seq < this.length ? seq : undefined;
    const projection = this.#store.projection;
    return projection === undefined ? undefined : absentSeqOf(projection, id);
  }

  answersOf(seq: number): ReadonlyArray<number> {
    if (seq >= this.length) return [];
    return this.#store.answers.get(seq) ?? this.#nothingOrNotHeld(seq);
  }

  /** An empty answer for a held seq; a projected log cannot know it for one it does not hold. */
  #nothingOrNotHeld(seq: number): ReadonlyArray<number> {
    if (this.#store.projection !== undefined && this.#store.messages[seq] === undefined) this.#notHeld(seq);
    return [];
  }

  callSeqsOfParts(seq: number): ReadonlyArray<number> {
    if (seq >= this.length) return [];
    return this.#store.callSeqByPart.get(seq) ?? this.#nothingOrNotHeld(seq);
  }

  resultsOf(seq: number): ReadonlyArray<number> {
    if (seq >= this.length) return [];
    const all = this.#store.answeredBy.get(seq);
    if (all === undefined) return this.#nothingOrNotHeld(seq);
    const last = all[all.length - 1];
    return last !== undefined && last < this.length ? all : all.filter((r) => r < this.length);
  }

  /** Atomic groups (system, user, assistant_text, tool_call with its results); built once per value. */
  get groups(): ReadonlyArray<Group> {
    if (this.#groups === undefined) {
      const view = this.#groupView();
      this.#groups =
        view instanceof GroupIndex
          ? Object.freeze(
              Array.from({ length: view.countAt(this.length) }, (_, i) => view.groupAt(i, this.length)),
            )
          : view.groups;
    }
    return this.#groups;
  }

  get groupCount(): number {
    const view = this.#groupView();
    return view instanceof GroupIndex ? view.countAt(this.length) : view.groups.length;
  }

  groupAt(index: number): Group {
    const view = this.#groupView();
    return view instanceof GroupIndex ? view.groupAt(index, this.length) : view.groups[index]!;
  }

  groupIndexTable(): ArrayLike<number> {
    const view = this.#groupView();
    return view instanceof GroupIndex ? view.indexTable() : view.indexBySeq;
  }

  idTable(): ArrayLike<string> {
    return this.#store.ids;
  }

  fullIdTable(): ArrayLike<string> {
    const projection = this.#store.projection;
    if (projection !== undefined && projection.idsFilled !== true) {
      const ids = projection.absentIds();
      const table = this.#store.ids;
      let i = 0;
      forEachAbsentSeq(projection.held, projection.floor, (seq) => {
        table[seq] = ids[i++]!;
      });
      projection.idsFilled = true;
    }
    return this.#store.ids;
  }

  groupIndexOf(seq: number): number {
    if (seq < 0 || seq >= this.length) return -1;
    const view = this.#groupView();
    return view instanceof GroupIndex ? view.indexOf(seq) : view.indexBySeq[seq]!;
  }

  /**
   * Where this value reads its groups: the history's shared index (extended to this length once; it only grows
   * after that, so the reference stays valid) or, after a fusion, a snapshot computed from scratch.
   */
  #groupView(): GroupIndex | GroupsSnapshot {
    this.#view ??= this.#fallbackGroups() ?? this.#groupIndex();
    return this.#view;
  }

  get pinnedSeqs(): ReadonlyArray<number> {
    // The shared index keeps recording pins after a fusion too, so it serves every value.
    this.#pinned ??= Object.freeze(this.#groupIndex().pinnedSeqsBelow(this.length));
    return this.#pinned;
  }

  #groupIndex(): GroupIndex {
    let index = this.#store.groupIndex;
    if (index === undefined) {
      index = new GroupIndex();
      this.#store.groupIndex = index;
    }
    if (index.length < this.length) index.extend(this);
    return index;
  }

  /** Groups computed from scratch, for the rare history where a tool message fused two groups. */
  #fallbackGroups(): GroupsSnapshot | undefined {
    if (this.#groupSnap !== undefined) return this.#groupSnap;
    if (this.length < this.#groupIndex().brokenAt) return undefined;
    this.#groupSnap = computeGroups(this);
    return this.#groupSnap;
  }

  /**
   * True when this log is `other` followed by zero or more appended messages (same thread, same history).
   * Message objects are created once and only shared with logs that contain their whole prefix, so comparing
   * the last message of `other` by identity suffices.
   */
  extends(other: LogView): boolean {
    return (
      other.threadId === this.threadId &&
      other.length <= this.length &&
      this.sharesPrefix(other, other.length)
    );
  }

  sharesPrefix(other: LogView, length: number): boolean {
    if (other.threadId !== this.threadId || other.length < length || this.length < length) return false;
    if (!(other instanceof LogValue)) return false;
    if (length === 0 || this.#store === other.#store) return true;
    const mine = this.#store.messages[length - 1];
    // Message objects are only shared between values of one history: an unheld message proves nothing.
    return mine !== undefined && mine === other.#store.messages[length - 1];
  }

  /** Turns: each starts at a user message; messages before the first user message form turn 0. */
  get turns(): ReadonlyArray<Turn> {
    this.#turns ??= turnsFromStarts(this.#store.userSeqs, this.length);
    return this.#turns;
  }

  get turnCount(): number {
    return this.length === 0 ? 0 : Math.max(1, countBelow(this.#store.userSeqs, this.length));
  }

  /** The index of the turn holding a seq (below `length`), in O(log n); turn indices never change on append. */
  turnIndexOf(seq: number): number {
    return Math.max(0, countBelow(this.#store.userSeqs, seq + 1) - 1);
  }

  get firstUserSeq(): number {
    const pinned = this.pinnedSeqs;
    for (const seq of this.#store.userSeqs) {
      if (seq >= this.length) break;
      if (!pinned.includes(seq)) return seq;
    }
    return -1;
  }

  get lastUserSeq(): number {
    const n = countBelow(this.#store.userSeqs, this.length);
    return n === 0 ? -1 : this.#store.userSeqs[n - 1]!;
  }

  /**
   * True when this value's groups are the history's shared ones (no tool message has fused two groups so far):
   * group i is then the same group in every longer value of the history, so facts about it can be kept.
   */
  get stableGroupIndices(): boolean {
    return this.length < this.#groupIndex().brokenAt;
  }

  peekHistoryMemo(key: string | object): unknown {
    return this.#store.memos.get(key);
  }

  /**
   * A value derived from this history, made once by `create` and shared by every log value of the history
   * (e.g. per-message facts extended as the log grows). It must only ever read messages the asking value holds:
   * a longer value of the same history may have extended it already. A branch starts without.
   */
  historyMemo<T>(key: string | object, create: () => T): T {
    let memo = this.#store.memos.get(key) as T | undefined;
    if (memo === undefined) {
      memo = create();
      this.#store.memos.set(key, memo);
    }
    return memo;
  }

  append(inputs: ReadonlyArray<MessageInput>): ThreadLog {
    if (inputs.length === 0) return this;
    return this.#extendWith(prepareBatch(this, inputs));
  }

  appendTrusted(messages: ReadonlyArray<Message>): ThreadLog {
    if (messages.length === 0) return this;
    return this.#extendWith(trustedBatch(this, messages));
  }

  #extendWith(batch: {
    readonly entries: ReadonlyArray<BatchEntry>;
    readonly pending: ReadonlyMap<string, CallRef>;
  }): ThreadLog {
    const store =
      this.#store.messages.length === this.length ? this.#store : branchHistory(this.#store, this.length);
    for (const entry of batch.entries) addToHistory(store, entry);
    return new LogValue(this.threadId, store, this.length + batch.entries.length, batch.pending);
  }
}
