import { MessageNotLoadedError, ValidationError } from "../errors/ledger-error.js";
import { type BatchEntry, prepareBatch, trustedBatch } from "./append-batch.js";
import { GroupIndex } from "./group-index.js";
import { computeGroups, type Group, type GroupKind, type GroupsSnapshot } from "./groups.js";
import {
  absentIdAt,
  absentSeqOf,
  addToHistory,
  ascendingRuns,
  branchHistory,
  countBelow,
  emptyHistory,
  forEachAbsentSeq,
  type HistoryStore,
} from "./history-store.js";
import type { Message, MessageInput } from "./message.js";
import { type Turn, turnsFromStarts } from "./turns.js";

/** Where a tool call lives: the assistant message's seq and the part index inside it. */
export interface CallRef {
  readonly seq: number;
  readonly partIndex: number;
  readonly callId: string;
  readonly name: string;
}

/** One group a projected log holds, as a checkpoint records it (message ids come from the messages). */
export interface HeldGroup {
  readonly index: number;
  readonly kind: GroupKind;
  readonly seqs: ReadonlyArray<number>;
  readonly pending: boolean;
  /** Calls of the group without a result at the checkpoint's length. */
  readonly openCalls: number;
}

/**
 * The log part of a thread checkpoint (docs/decisions/0009): what a projected log needs besides the messages it
 * holds. Plain data, JSON round-trippable; its size grows with what is held, the user turns and nothing else.
 */
export interface LogCheckpoint {
  readonly threadId: string;
  /** The log length it describes. */
  readonly length: number;
  /** Hash of the message at `length - 1`, so a reader can check the checkpoint belongs to the stored log. */
  readonly lastHash: string;
  /** Seqs whose messages a projection holds, as ascending `[start, end)` pairs (whole groups). */
  readonly held: ReadonlyArray<number>;
  readonly pendingCalls: ReadonlyArray<CallRef>;
  /** Seqs of every user message (turn starts). */
  readonly userSeqs: ReadonlyArray<number>;
  /** Per held tool message: its seq, then per part the seq of the call it answers. */
  readonly pairing: ReadonlyArray<ReadonlyArray<number>>;
  /** Number of groups at `length`. */
  readonly groupCount: number;
  /** Statically pinned seqs (all held). */
  readonly pinnedSeqs: ReadonlyArray<number>;
  readonly groups: ReadonlyArray<HeldGroup>;
}

/**
 * An append-only thread log. `append` returns a new log value; earlier values and all messages stay unchanged
 * and deeply frozen. A batch is validated as a whole and appends nothing when any message is bad.
 *
 * @example
 * const log = ThreadLog.empty("t1").append([
 *   { role: "user", parts: [{ type: "text", text: "hi" }] },
 * ]);
 * log.length; // 1
 */
export class ThreadLog {
  readonly threadId: string;
  /** Number of messages; also the seq the next appended message gets. */
  readonly length: number;
  /** Calls without a result yet, by call id (an id is never reused while its call is pending). */
  readonly pendingCalls: ReadonlyMap<string, CallRef>;
  readonly #store: HistoryStore;
  #messages: ReadonlyArray<Message> | undefined;
  #groups: ReadonlyArray<Group> | undefined;
  #groupSnap: GroupsSnapshot | undefined;
  #pinned: ReadonlyArray<number> | undefined;
  #view: GroupIndex | GroupsSnapshot | undefined;
  #turns: ReadonlyArray<Turn> | undefined;

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

  /** An empty log for a thread. */
  static empty(threadId: string): ThreadLog {
    if (typeof threadId !== "string" || threadId.length === 0) {
      throw new ValidationError("thread id must be a non-empty string", { field: "threadId" });
    }
    return new ThreadLog(threadId, emptyHistory(), 0, new Map());
  }

  /** Builds a log from inputs in one atomic append. */
  static from(threadId: string, inputs: ReadonlyArray<MessageInput>): ThreadLog {
    return ThreadLog.empty(threadId).append(inputs);
  }

  /** Builds a log from stored messages without checking or hashing them again (see `appendTrusted`). */
  static fromTrusted(threadId: string, messages: ReadonlyArray<Message>): ThreadLog {
    return ThreadLog.empty(threadId).appendTrusted(messages);
  }

  /** All messages in seq order (frozen; computed once per log value). A projected log throws. */
  get messages(): ReadonlyArray<Message> {
    const projection = this.#store.projection;
    if (projection !== undefined) this.#notHeld(projection.held[0] === 0 ? (projection.held[1] ?? 0) : 0);
    this.#messages ??= Object.freeze(this.#store.messages.slice(0, this.length));
    return this.#messages;
  }

  /**
   * The message at a seq, or undefined past the end. A projected log (see `restore`) throws
   * `MessageNotLoadedError` for a message it does not hold.
   */
  at(seq: number): Message | undefined {
    if (seq < 0 || seq >= this.length) return undefined;
    return this.#store.messages[seq] ?? this.#notHeld(seq);
  }

  /** Whether this log holds the message at a seq (always, below `length`, unless it is projected). */
  holds(seq: number): boolean {
    return seq >= 0 && seq < this.length && this.#store.messages[seq] !== undefined;
  }

  /** True for a log restored from a checkpoint, which holds only some of its messages. */
  get projected(): boolean {
    return this.#store.projection !== undefined;
  }

  #notHeld(seq: number): never {
    throw new MessageNotLoadedError(`message at seq ${seq}`, { threadId: this.threadId }, seq);
  }

  /** The message with an id, or undefined (a projected log throws for a message it does not hold). */
  byId(id: string): Message | undefined {
    const seq = this.seqOf(id);
    return seq === undefined ? undefined : this.at(seq);
  }

  /** Whether the log holds a message with this id (a projected log: among those it holds). */
  holdsId(id: string): boolean {
    const seq = this.#store.seqById.get(id);
    return seq !== undefined && seq < this.length;
  }

  /**
   * Tells a projected log what its store answered for some ids (`found`, as `LogStore.seqsOf` gives it: the ids
   * of `asked` it lacks are in no stored message), so that `seqOf` answers those without decoding the ids of
   * the messages it does not hold (an append checks its new ids that way). Nothing changes for a whole log.
   */
  noteStoredIds(asked: Iterable<string>, found: ReadonlyMap<string, number>): void {
    const projection = this.#store.projection;
    if (projection === undefined) return;
    projection.stored ??= new Map();
    const known = projection.stored;
    for (const id of asked) {
      const seq = found.get(id);
      // Only a seq below the floor can be one not held; one at or past it is held, or past this log value.
      known.set(id, seq !== undefined && seq < projection.floor ? seq : undefined);
    }
  }

  /** The id of the message at a seq (also for a message a projected log does not hold), or undefined. */
  idAt(seq: number): string | undefined {
    if (seq < 0 || seq >= this.length) return undefined;
    const id = this.#store.ids[seq];
    if (id !== undefined) return id;
    const projection = this.#store.projection;
    return projection === undefined ? undefined : absentIdAt(projection, seq);
  }

  /**
   * The seq of a message id, or undefined. `hint` is where the caller expects it (e.g. one past the previous id
   * of a span in log order); a correct hint answers without hashing the id.
   */
  seqOf(id: string, hint?: number): number | undefined {
    if (hint !== undefined && hint >= 0 && hint < this.length && this.#store.ids[hint] === id) return hint;
    const seq = this.#store.seqById.get(id);
    if (seq !== undefined) return seq < this.length ? seq : undefined;
    const projection = this.#store.projection;
    return projection === undefined ? undefined : absentSeqOf(projection, id);
  }

  /** For a tool message: the seqs of the assistant messages whose calls it answers. */
  answersOf(seq: number): ReadonlyArray<number> {
    if (seq >= this.length) return [];
    return this.#store.answers.get(seq) ?? this.#nothingOrNotHeld(seq);
  }

  /** An empty answer for a held seq; a projected log cannot know it for one it does not hold. */
  #nothingOrNotHeld(seq: number): ReadonlyArray<number> {
    if (this.#store.projection !== undefined && this.#store.messages[seq] === undefined) this.#notHeld(seq);
    return [];
  }

  /**
   * For a tool message: per part, the seq of the assistant message holding the call that part answers (the
   * pairing decided on append: the nearest earlier unanswered call with the same id).
   */
  callSeqsOfParts(seq: number): ReadonlyArray<number> {
    if (seq >= this.length) return [];
    return this.#store.callSeqByPart.get(seq) ?? this.#nothingOrNotHeld(seq);
  }

  /** For an assistant message: the seqs of the tool messages (in this log value) answering its calls. */
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

  /** Number of groups; O(log n), without building the `groups` array. */
  get groupCount(): number {
    const view = this.#groupView();
    return view instanceof GroupIndex ? view.countAt(this.length) : view.groups.length;
  }

  /** The group at an index (0 ≤ index < groupCount), without building the `groups` array. */
  groupAt(index: number): Group {
    const view = this.#groupView();
    return view instanceof GroupIndex ? view.groupAt(index, this.length) : view.groups[index]!;
  }

  /**
   * The group index of every seq below `length`, as one contiguous table (for sweeps over the whole log; do not
   * read past `length`).
   */
  groupIndexTable(): ArrayLike<number> {
    const view = this.#groupView();
    return view instanceof GroupIndex ? view.indexTable() : view.indexBySeq;
  }

  /**
   * The ids of every seq below `length`, as one contiguous table (do not read past `length`). In a projected log
   * the entries of messages it does not hold are undefined: look those up with `seqOf`/`idAt`.
   */
  idTable(): ArrayLike<string> {
    return this.#store.ids;
  }

  /**
   * `idTable()` with every entry below `length` present: a projected log fills the entries of the messages it
   * does not hold, in place and once (decoding its absent ids), so the table keeps its identity.
   */
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

  /** The index of the group holding a seq, or -1. */
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

  /** Seqs of messages pinned by nature or by the caller (system messages and `meta.pinned`), ascending. */
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
  extends(other: ThreadLog): boolean {
    return (
      other.threadId === this.threadId &&
      other.length <= this.length &&
      this.sharesPrefix(other, other.length)
    );
  }

  /** Whether this log and `other` hold the same first `length` messages (both at least that long). */
  sharesPrefix(other: ThreadLog, length: number): boolean {
    if (other.threadId !== this.threadId || other.length < length || this.length < length) return false;
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

  /** Number of turns (`turns.length`) in O(log n), without building the `turns` array. */
  get turnCount(): number {
    return this.length === 0 ? 0 : Math.max(1, countBelow(this.#store.userSeqs, this.length));
  }

  /** The index of the turn holding a seq (below `length`), in O(log n); turn indices never change on append. */
  turnIndexOf(seq: number): number {
    return Math.max(0, countBelow(this.#store.userSeqs, seq + 1) - 1);
  }

  /**
   * The seq of the first user message that is not `meta.pinned` (by default the thread's task: a pinned note put
   * before it is protected anyway), or -1 when there is none.
   */
  get firstUserSeq(): number {
    const pinned = this.pinnedSeqs;
    for (const seq of this.#store.userSeqs) {
      if (seq >= this.length) break;
      if (!pinned.includes(seq)) return seq;
    }
    return -1;
  }

  /** The seq of the last user message, or -1 when there is none. */
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

  /** The string keys of the history's memos (see `historyMemo`), for a checkpoint writer that exports them. */
  historyMemoKeys(): ReadonlyArray<string> {
    return [...this.#store.memos.keys()].filter((key): key is string => typeof key === "string");
  }

  /** The history's memo under `key`, if one was made. */
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

  /**
   * The log part of a checkpoint at this length for a projection holding the given groups (ascending indices)
   * plus those every projection holds: pinned messages, calls still waiting for results (a later result must
   * find its call) and the last message (whose hash the checkpoint carries). Undefined when it cannot be made: a projected log that does not hold all of those
   * groups, or a history where a tool message fused two groups (its groups are recomputed from every message).
   * The ids of the messages not held are returned beside it, in seq order (listed when first read).
   */
  checkpoint(
    groups: ReadonlyArray<number>,
  ): { readonly checkpoint: LogCheckpoint; readonly absentIds: ReadonlyArray<string> } | undefined {
    if (this.length === 0 || !this.stableGroupIndices) return undefined;
    const log = this;
    const index = this.#groupIndex();
    const wanted = new Set(groups);
    for (const seq of this.pinnedSeqs) wanted.add(index.indexOf(seq));
    for (const call of this.pendingCalls.values()) wanted.add(index.indexOf(call.seq));
    // The last message too: its hash is what a reader checks the checkpoint against (and what a projection
    // writing the next checkpoint must know).
    wanted.add(index.indexOf(this.length - 1));
    const heldGroups = [...wanted].sort((a, b) => a - b);
    // A projected log can checkpoint the groups it holds (a worker that loaded a checkpoint writes the next).
    if (this.projected && !heldGroups.every((g) => this.#holdsGroup(index, g))) return undefined;
    const state = index.stateAt(this, heldGroups);
    const seqs = state.groups.flatMap((g) => g.group.seqs).sort((a, b) => a - b);
    // Whole groups never share a seq, so the sorted seqs strictly ascend.
    const held = ascendingRuns(seqs)!;
    const pairing = seqs
      .filter((seq) => this.#store.messages[seq]!.role === "tool")
      .map((seq) => [seq, ...this.callSeqsOfParts(seq)]);
    const checkpoint: LogCheckpoint = {
      threadId: this.threadId,
      length: this.length,
      lastHash: this.#store.messages[this.length - 1]!.hash,
      held,
      pendingCalls: [...this.pendingCalls.values()].map((c) => ({ ...c })),
      userSeqs: this.#store.userSeqs.slice(0, countBelow(this.#store.userSeqs, this.length)),
      pairing,
      groupCount: state.count,
      pinnedSeqs: [...state.pinnedSeqs],
      groups: state.groups.map(({ group, openCalls }) => ({
        index: group.index,
        kind: group.kind,
        seqs: [...group.seqs],
        pending: group.pending,
        openCalls,
      })),
    };
    let absentIds: string[] | undefined;
    const length = this.length;
    return {
      checkpoint,
      // Listed when first read: a checkpoint continuing an earlier one's tail lists only some of them, and a
      // projected log has them only after reading its own checkpoint's tail.
      get absentIds() {
        if (absentIds === undefined) {
          const ids = log.fullIdTable();
          const list: string[] = [];
          forEachAbsentSeq(held, length, (seq) => {
            list.push(ids[seq]!);
          });
          absentIds = list;
        }
        return absentIds;
      },
    };
  }

  /** Whether every message of group `g` (as it is at this length) is held. */
  #holdsGroup(index: GroupIndex, g: number): boolean {
    try {
      return index.groupAt(g, this.length).seqs.every((seq) => this.#store.messages[seq] !== undefined);
    } catch (error) {
      if (error instanceof MessageNotLoadedError) return false;
      throw error;
    }
  }

  /**
   * A projected log: the value `checkpoint` describes, holding only `messages` (exactly its held seqs, in order,
   * as a store returned them). Everything derived from the log answers as for the whole log; reading a message
   * it does not hold throws `MessageNotLoadedError`. `absentIds` gives the ids of the others in seq order and
   * is called at most once, when an id not held is first looked up. Throws `ValidationError` when the messages
   * or the checkpoint do not fit together.
   */
  static restore(
    checkpoint: LogCheckpoint,
    messages: ReadonlyArray<Message>,
    absentIds: () => ReadonlyArray<string>,
  ): ThreadLog {
    const { threadId, length, held } = checkpoint;
    const where = { threadId, field: "checkpoint" };
    const store = emptyHistory();
    // Written in ascending seq order, only where held: for a long history V8 keeps these arrays sparse (a
    // dictionary), which costs nothing per message not held. Sizing them to the log instead costs ~1 ms per
    // 100,000 seqs each, and the collector scans them.
    const all = store.messages as Message[];
    let i = 0;
    for (let r = 0; r < held.length; r += 2) {
      for (let seq = held[r]!; seq < held[r + 1]!; seq++) {
        const message = messages[i++];
        if (message?.seq !== seq || seq >= length) {
          throw new ValidationError(
            `checkpoint holds seq ${seq} but the message given there is not it`,
            where,
          );
        }
        all[seq] = message;
        store.ids[seq] = message.id;
        store.seqById.set(message.id, seq);
      }
    }
    if (i !== messages.length) {
      throw new ValidationError(`checkpoint holds ${i} messages but ${messages.length} were given`, where);
    }
    // As long as the log, so appends land at the end (a checkpoint holds its last message, so they are).
    if (all.length < length) {
      all.length = length;
      store.ids.length = length;
    }
    for (const [seq, ...callSeqs] of checkpoint.pairing) {
      if (seq === undefined || all[seq]?.role !== "tool") {
        throw new ValidationError(`checkpoint pairs seq ${seq}, which is not a held tool message`, where);
      }
      store.callSeqByPart.set(seq, callSeqs);
      const answers = [...new Set(callSeqs)].sort((a, b) => a - b);
      store.answers.set(seq, answers);
      for (const callSeq of answers)
        store.answeredBy.set(callSeq, [...(store.answeredBy.get(callSeq) ?? []), seq]);
    }
    store.userSeqs.push(...checkpoint.userSeqs);
    store.groupIndex = GroupIndex.restore({
      length,
      count: checkpoint.groupCount,
      pinnedSeqs: checkpoint.pinnedSeqs,
      groups: checkpoint.groups.map((g) => ({
        group: Object.freeze({
          index: g.index,
          kind: g.kind,
          seqs: Object.freeze([...g.seqs]),
          messageIds: Object.freeze(g.seqs.map((seq) => heldAt(all, seq, where).id)),
          pending: g.pending,
        }),
        openCalls: g.openCalls,
      })),
    });
    let decoded: ReadonlyArray<string> | undefined;
    store.projection = {
      floor: length,
      held,
      absentIds: () => {
        decoded ??= absentIds();
        return decoded;
      },
    };
    const pending = new Map(checkpoint.pendingCalls.map((c) => [c.callId, Object.freeze({ ...c })]));
    return new ThreadLog(threadId, store, length, pending);
  }

  /** Returns a new log with the messages appended, or throws `ValidationError` and appends nothing. */
  append(inputs: ReadonlyArray<MessageInput>): ThreadLog {
    if (inputs.length === 0) return this;
    return this.#extendWith(prepareBatch(this, inputs));
  }

  /**
   * Appends messages that a log already validated and hashed when they were first appended — rows read back
   * from a store, which checked them on the way in — without the schema check, copies and hashing of `append`
   * (a stateless worker rebuilding a long thread spends most of its load there). Seq order, unique ids and the
   * pairing of results with calls are still worked out, and a message that breaks them throws
   * `ValidationError`. Replay uses `append`: it must notice a row changed after it was stored.
   */
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
    return new ThreadLog(this.threadId, store, this.length + batch.entries.length, batch.pending);
  }
}

function heldAt(messages: ReadonlyArray<Message | undefined>, seq: number, where: object): Message {
  const message = messages[seq];
  if (message === undefined) {
    throw new ValidationError(`checkpoint names seq ${seq} in a held group but does not hold it`, where);
  }
  return message;
}
