import { ValidationError } from "../errors/ledger-error.js";
import { prepareBatch } from "./append-batch.js";
import { GroupIndex } from "./group-index.js";
import { computeGroups, type Group, type GroupsSnapshot } from "./groups.js";
import type { Message, MessageInput } from "./message.js";
import { computeTurns, type Turn } from "./turns.js";

/** Where a tool call lives: the assistant message's seq and the part index inside it. */
export interface CallRef {
  readonly seq: number;
  readonly partIndex: number;
  readonly callId: string;
  readonly name: string;
}

/**
 * Storage shared by the log values of one linear history. A value of length L only ever reads indices < L, so
 * appending in place is invisible to earlier values; a second append from the same value (a branch) copies.
 */
interface SharedStore {
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
  /** Groups of this history, extended in place as values ask for them. */
  groupIndex?: GroupIndex;
}

function branchStore(store: SharedStore, length: number): SharedStore {
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
  return { messages, ids, seqById, answers, callSeqByPart, answeredBy };
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
  readonly #store: SharedStore;
  #messages: ReadonlyArray<Message> | undefined;
  #groups: ReadonlyArray<Group> | undefined;
  #groupSnap: GroupsSnapshot | undefined;
  #pinned: ReadonlyArray<number> | undefined;
  #view: GroupIndex | GroupsSnapshot | undefined;
  #turns: ReadonlyArray<Turn> | undefined;

  private constructor(
    threadId: string,
    store: SharedStore,
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
    return new ThreadLog(
      threadId,
      {
        messages: [],
        ids: [],
        seqById: new Map(),
        answers: new Map(),
        callSeqByPart: new Map(),
        answeredBy: new Map(),
      },
      0,
      new Map(),
    );
  }

  /** Builds a log from inputs in one atomic append. */
  static from(threadId: string, inputs: ReadonlyArray<MessageInput>): ThreadLog {
    return ThreadLog.empty(threadId).append(inputs);
  }

  /** All messages in seq order (frozen; computed once per log value). */
  get messages(): ReadonlyArray<Message> {
    this.#messages ??= Object.freeze(this.#store.messages.slice(0, this.length));
    return this.#messages;
  }

  /** The message at a seq, or undefined. */
  at(seq: number): Message | undefined {
    return seq >= 0 && seq < this.length ? this.#store.messages[seq] : undefined;
  }

  /** The message with an id, or undefined. */
  byId(id: string): Message | undefined {
    const seq = this.#store.seqById.get(id);
    return seq !== undefined && seq < this.length ? this.#store.messages[seq] : undefined;
  }

  /**
   * The seq of a message id, or undefined. `hint` is where the caller expects it (e.g. one past the previous id
   * of a span in log order); a correct hint answers without hashing the id.
   */
  seqOf(id: string, hint?: number): number | undefined {
    if (hint !== undefined && hint >= 0 && hint < this.length && this.#store.ids[hint] === id) return hint;
    const seq = this.#store.seqById.get(id);
    return seq !== undefined && seq < this.length ? seq : undefined;
  }

  /** For a tool message: the seqs of the assistant messages whose calls it answers. */
  answersOf(seq: number): ReadonlyArray<number> {
    return seq < this.length ? (this.#store.answers.get(seq) ?? []) : [];
  }

  /**
   * For a tool message: per part, the seq of the assistant message holding the call that part answers (the
   * pairing decided on append: the nearest earlier unanswered call with the same id).
   */
  callSeqsOfParts(seq: number): ReadonlyArray<number> {
    return seq < this.length ? (this.#store.callSeqByPart.get(seq) ?? []) : [];
  }

  /** For an assistant message: the seqs of the tool messages (in this log value) answering its calls. */
  resultsOf(seq: number): ReadonlyArray<number> {
    if (seq >= this.length) return [];
    const all = this.#store.answeredBy.get(seq);
    if (all === undefined) return [];
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

  /** The ids of every seq below `length`, as one contiguous table (do not read past `length`). */
  idTable(): ArrayLike<string> {
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
    if (other.threadId !== this.threadId || other.length > this.length) return false;
    return other.length === 0 || this.at(other.length - 1) === other.at(other.length - 1);
  }

  /** Turns: each starts at a user message; messages before the first user message form turn 0. */
  get turns(): ReadonlyArray<Turn> {
    this.#turns ??= computeTurns(this);
    return this.#turns;
  }

  /** Returns a new log with the messages appended, or throws `ValidationError` and appends nothing. */
  append(inputs: ReadonlyArray<MessageInput>): ThreadLog {
    if (inputs.length === 0) return this;
    const prepared = prepareBatch(this, inputs);
    const store =
      this.#store.messages.length === this.length ? this.#store : branchStore(this.#store, this.length);
    for (const entry of prepared.entries) {
      store.messages.push(entry.message);
      store.ids.push(entry.message.id);
      store.seqById.set(entry.message.id, entry.message.seq);
      if (entry.answers.length > 0) {
        store.answers.set(entry.message.seq, entry.answers);
        store.callSeqByPart.set(entry.message.seq, entry.callSeqByPart);
        for (const callSeq of entry.answers) {
          store.answeredBy.set(callSeq, [...(store.answeredBy.get(callSeq) ?? []), entry.message.seq]);
        }
      }
    }
    return new ThreadLog(this.threadId, store, this.length + inputs.length, prepared.pending);
  }
}
