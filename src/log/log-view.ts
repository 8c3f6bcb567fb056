import type { CallRef, Group } from "./groups.js";
import type { Message } from "./message.js";
import type { Turn } from "./turns.js";

/**
 * What everything above the log reads of a thread: its messages by seq and id, their structure (groups, which
 * call each result answers, pending calls, pins, turns) and the history's memos. Plan, render, strategies and the
 * compaction pipeline depend on this, not on how the log is stored. `ThreadLog` implements it whole.
 *
 * A view may hold only some of its messages (`partial`: a worker that loaded a thread from a checkpoint). The ids,
 * groups and structure of every message are still known; only the message objects of the others are not. Code
 * that reads one of those never sees a wrong answer: the view stops the operation, and whoever handed it out
 * runs the operation again on more of the thread (see docs/ARCHITECTURE.md, "Stateless workers"). Reading a
 * view never needs a `try`.
 */
export interface LogView {
  readonly threadId: string;
  /** Number of messages; also the seq the next appended message gets. */
  readonly length: number;
  /** Calls without a result yet, by call id (an id is never reused while its call is pending). */
  readonly pendingCalls: ReadonlyMap<string, CallRef>;
  /** False when the view holds only some of its messages (see the interface comment). */
  readonly partial: boolean;
  /** All messages in seq order (frozen). */
  readonly messages: ReadonlyArray<Message>;
  /** The message at a seq, or undefined past the end. */
  at(seq: number): Message | undefined;
  /** Whether the view holds the message at a seq (always below `length`, unless it is partial). */
  holds(seq: number): boolean;
  /** The message with an id, or undefined. */
  byId(id: string): Message | undefined;
  /** Whether the view holds a message with this id (a partial view: among those it holds). */
  holdsId(id: string): boolean;
  /** The id of the message at a seq (held or not), or undefined past the end. */
  idAt(seq: number): string | undefined;
  /** The seq of a message id, or undefined; `hint` is where the caller expects it (a right hint is O(1)). */
  seqOf(id: string, hint?: number): number | undefined;
  /** For a tool message: the seqs of the assistant messages whose calls it answers. */
  answersOf(seq: number): ReadonlyArray<number>;
  /** For a tool message: per part, the seq of the assistant message holding the call that part answers. */
  callSeqsOfParts(seq: number): ReadonlyArray<number>;
  /** For an assistant message: the seqs of the tool messages answering its calls. */
  resultsOf(seq: number): ReadonlyArray<number>;
  /** Atomic groups (system, user, assistant_text, tool_call with its results). */
  readonly groups: ReadonlyArray<Group>;
  readonly groupCount: number;
  /** The group at an index (0 ≤ index < groupCount), without building `groups`. */
  groupAt(index: number): Group;
  /** The index of the group holding a seq, or -1. */
  groupIndexOf(seq: number): number;
  /** The group index of every seq below `length`, as one table (do not read past `length`). */
  groupIndexTable(): ArrayLike<number>;
  /** The ids of every seq below `length` (a partial view: undefined for messages it does not hold). */
  idTable(): ArrayLike<string>;
  /** `idTable()` with every entry below `length` present (a partial view fills it once, in place). */
  fullIdTable(): ArrayLike<string>;
  /** Seqs of messages pinned by nature or by the caller (system messages and `meta.pinned`), ascending. */
  readonly pinnedSeqs: ReadonlyArray<number>;
  readonly turns: ReadonlyArray<Turn>;
  readonly turnCount: number;
  turnIndexOf(seq: number): number;
  /** The seq of the first user message that is not `meta.pinned` (the task by default), or -1. */
  readonly firstUserSeq: number;
  /** The seq of the last user message, or -1. */
  readonly lastUserSeq: number;
  /** True while group i is the same group in every longer value of the history (facts about it can be kept). */
  readonly stableGroupIndices: boolean;
  /** True when this view is `other` followed by zero or more appended messages (same thread, same history). */
  extends(other: LogView): boolean;
  /** Whether this view and `other` hold the same first `length` messages (both at least that long). */
  sharesPrefix(other: LogView, length: number): boolean;
  /** The history's memo under `key`, if one was made (see `historyMemo`). */
  peekHistoryMemo(key: string | object): unknown;
  /**
   * A value derived from this history, made once by `create` and shared by every log value of the history. It
   * must only ever read messages the asking value holds: a longer value may have extended it already.
   */
  historyMemo<T>(key: string | object, create: () => T): T;
}

/**
 * The name of the tool whose call the result part at `partIndex` of the tool message at `seq` answers, found
 * through the log's own pairing of that very part (call ids may be reused); undefined when the part is not a
 * result or its call is not found.
 */
export function toolNameOfResult(
  log: Pick<LogView, "at" | "callSeqsOfParts">,
  seq: number,
  partIndex: number,
): string | undefined {
  const part = log.at(seq)?.parts[partIndex];
  if (part?.type !== "tool_result") return undefined;
  const callSeq = log.callSeqsOfParts(seq)[partIndex];
  if (callSeq === undefined) return undefined;
  for (const p of log.at(callSeq)?.parts ?? [])
    if (p.type === "tool_call" && p.callId === part.callId) return p.name;
  return undefined;
}
