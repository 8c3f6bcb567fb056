import type { Group } from "../log/groups.js";
import type { LogView } from "../log/log-view.js";
import { decisionAt, type SeqResolution } from "../plan/resolve-for-log.js";
import { pendingStub } from "../texts/placeholders.js";
import type { MessageCounter } from "../tokens/tokenizer.js";

// Stub tokens per counter and group version: a pending group's version only changes when a result arrives.
const stubTokens = new WeakMap<MessageCounter, WeakMap<Group, number>>();

/** Tokens of the stub results the renderer adds for a group's pending calls (an upper bound in `hold` mode). */
export function pendingStubTokens(log: LogView, group: Group, counter: MessageCounter): number {
  if (!group.pending) return 0;
  let memo = stubTokens.get(counter);
  if (memo === undefined) {
    memo = new WeakMap();
    stubTokens.set(counter, memo);
  }
  const known = memo.get(group);
  if (known !== undefined) return known;
  // One stub message per call message, built exactly as the renderer builds it.
  let tokens = 0;
  for (const seq of group.seqs) {
    const stub = pendingStub(log, seq);
    if (stub !== undefined) tokens += counter.countMessage({ role: "tool", parts: stub.parts }, stub.hash);
  }
  memo.set(group, tokens);
  return tokens;
}

/**
 * Tokens of one log message as the renderer sends it unchanged: a tool message answering calls of several
 * assistant messages is split into one message per call message (each with its own framing), so it is counted
 * that way.
 */
export function messageTokens(log: LogView, seq: number, counter: MessageCounter): number {
  const page = pageOf(log, counter, seq);
  const at = seq & (PAGE - 1);
  const known = page[at]!;
  if (known >= 0) return known;
  const tokens = countAsRendered(log, seq, counter);
  page[at] = tokens;
  return tokens;
}

function countAsRendered(log: LogView, seq: number, counter: MessageCounter): number {
  const message = log.at(seq)!;
  if (log.answersOf(seq).length <= 1) return counter.countMessage(message, message.hash);
  const callSeqs = log.callSeqsOfParts(seq);
  let sum = 0;
  for (const callSeq of log.answersOf(seq)) {
    const parts = message.parts.filter((_, i) => callSeqs[i] === callSeq);
    sum += counter.countMessage({ role: "tool", parts });
  }
  return sum;
}

// `messageTokens` per seq, per counter and history (keyed by the history's id table, which is shared by all its
// log values and only grows): a message's content and pairing are fixed once appended, so its count never
// changes. Strategies re-count the kept tail and the pinned groups every turn; a table read is what the budget
// loop of a plain trimmer pays, a count-cache lookup by content hash several times that. The table is kept in
// pages of `PAGE` seqs, made when first read: a turn that counts a few messages of a long thread (a stateless
// worker's) must not fill a table as long as the thread.
const PAGE_BITS = 12;
const PAGE = 1 << PAGE_BITS;
const seqTables = new WeakMap<MessageCounter, WeakMap<ArrayLike<string>, Array<Int32Array | undefined>>>();

function pageOf(log: LogView, counter: MessageCounter, seq: number): Int32Array {
  let byHistory = seqTables.get(counter);
  if (byHistory === undefined) {
    byHistory = new WeakMap();
    seqTables.set(counter, byHistory);
  }
  const history = log.idTable();
  let pages = byHistory.get(history);
  if (pages === undefined) {
    pages = [];
    byHistory.set(history, pages);
  }
  const index = seq >>> PAGE_BITS;
  let page = pages[index];
  if (page === undefined) {
    page = new Int32Array(PAGE).fill(-1);
    pages[index] = page;
  }
  return page;
}

/**
 * Tokens a group costs when its messages are sent verbatim, skipping those the plan drops (0 when all are
 * dropped), plus pending-call stubs. Cleared or summarized messages are counted at full size: an upper bound.
 */
export function groupTokens(
  log: LogView,
  group: Group,
  resolution: SeqResolution,
  counter: MessageCounter,
): number {
  let sum = 0;
  for (const seq of group.seqs) {
    if (decisionAt(resolution, seq)?.kind === "drop") continue;
    sum += messageTokens(log, seq, counter);
  }
  return sum === 0 ? 0 : sum + pendingStubTokens(log, group, counter);
}

/** True when no action of the plan (other than `include`) touches any message of the group. */
export function untouched(group: Group, resolution: SeqResolution): boolean {
  for (const seq of group.seqs) {
    const kind = decisionAt(resolution, seq)?.kind;
    if (kind !== undefined && kind !== "include") return false;
  }
  return true;
}

/**
 * True when compaction may act on the group at all: not a system prompt, not pending, no `meta.pinned` message.
 * (Which recent groups a strategy keeps is the strategy's own policy.)
 */
export function compactable(log: LogView, group: Group): boolean {
  if (group.kind === "system" || group.pending) return false;
  for (const seq of group.seqs) if (log.at(seq)!.meta.pinned === true) return false;
  return true;
}
