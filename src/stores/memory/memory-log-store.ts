import { deepFreeze } from "../../log/deep-freeze.js";
import { checkSearchArguments, searchTextOf } from "../log-search.js";
import type { LogSearchOptions } from "../log-store.js";
import {
  checkAppendBatch,
  checkReadArguments,
  checkThreadId,
  checkTokenUpdates,
  duplicateIdError,
  type LogStore,
  logConflict,
  normalizeRanges,
  type SeqRange,
  type StoredMessage,
  type TokenCountUpdate,
} from "../log-store.js";
import { unknownSeqError } from "../store-errors.js";
import { SearchIndex } from "./memory-search-index.js";

interface ThreadEntries {
  readonly entries: StoredMessage[];
  readonly seqById: Map<string, number>;
  readonly index: SearchIndex;
  /** The messages below this seq are in `index`; the rest are indexed by the next search. */
  indexed: number;
}

/**
 * An in-memory `LogStore`, the reference implementation the conformance suite holds the database backends to.
 * Each call checks and writes without awaiting in between, so concurrent async writers serialize on the event
 * loop exactly like database transactions do.
 *
 * @example
 * const store = createMemoryLogStore();
 * await store.append("t1", 0, entries);
 */
export function createMemoryLogStore(): LogStore {
  const threads = new Map<string, ThreadEntries>();
  const threadOf = (threadId: string): ThreadEntries | undefined => threads.get(threadId);

  function append(threadId: string, expectedSeq: number, batch: ReadonlyArray<StoredMessage>): void {
    checkAppendBatch(threadId, expectedSeq, batch);
    const thread = threadOf(threadId) ?? {
      entries: [],
      seqById: new Map<string, number>(),
      index: new SearchIndex(),
      indexed: 0,
    };
    if (thread.entries.length !== expectedSeq)
      throw logConflict(threadId, expectedSeq, thread.entries.length);
    for (const { message } of batch) {
      if (thread.seqById.has(message.id)) throw duplicateIdError(threadId, message.id);
    }
    for (const entry of batch) {
      // Frozen copies: a caller editing its objects after the append must not change the log.
      const frozen = Object.freeze({
        message: deepFreeze(Object.isFrozen(entry.message) ? entry.message : structuredClone(entry.message)),
        tokens: Object.freeze({ ...entry.tokens }),
      });
      thread.seqById.set(frozen.message.id, thread.entries.length);
      thread.entries.push(frozen);
    }
    if (batch.length > 0) threads.set(threadId, thread);
  }

  /** Indexes the thread's messages appended since its last search, as the SQL backends do. */
  function catchUp(threadId: string): ThreadEntries | undefined {
    const thread = threadOf(threadId);
    if (thread === undefined) return undefined;
    for (; thread.indexed < thread.entries.length; thread.indexed++) {
      const { message } = thread.entries[thread.indexed]!;
      thread.index.add(message.seq, message.id, searchTextOf(message));
    }
    return thread;
  }

  function read(threadId: string, fromSeq = 0, toSeq?: number): ReadonlyArray<StoredMessage> {
    checkReadArguments(threadId, fromSeq, toSeq);
    return Object.freeze((threadOf(threadId)?.entries ?? []).slice(fromSeq, toSeq));
  }

  function readRanges(threadId: string, ranges: ReadonlyArray<SeqRange>): ReadonlyArray<StoredMessage> {
    checkThreadId(threadId);
    const entries = threadOf(threadId)?.entries ?? [];
    const out: StoredMessage[] = [];
    for (const r of normalizeRanges(threadId, ranges)) out.push(...entries.slice(r.from, r.to));
    return Object.freeze(out);
  }

  function seqsOf(threadId: string, ids: ReadonlyArray<string>): ReadonlyMap<string, number> {
    checkThreadId(threadId);
    const seqById = threadOf(threadId)?.seqById;
    const out = new Map<string, number>();
    for (const id of ids) {
      const seq = seqById?.get(id);
      if (seq !== undefined) out.set(id, seq);
    }
    return out;
  }

  function setTokenCounts(threadId: string, updates: ReadonlyArray<TokenCountUpdate>): void {
    checkTokenUpdates(threadId, updates);
    const entries = threadOf(threadId)?.entries ?? [];
    // Check every seq first so a bad update changes nothing.
    for (const { seq } of updates) if (seq >= entries.length) throw unknownSeqError(threadId, seq);
    for (const { seq, tokens } of updates) {
      const entry = entries[seq]!;
      entries[seq] = Object.freeze({
        message: entry.message,
        tokens: Object.freeze({ ...entry.tokens, ...tokens }),
      });
    }
  }

  return Object.freeze({
    append: async (threadId: string, expectedSeq: number, batch: ReadonlyArray<StoredMessage>) =>
      append(threadId, expectedSeq, batch),
    length: async (threadId: string) => {
      checkThreadId(threadId);
      return threadOf(threadId)?.entries.length ?? 0;
    },
    read: async (threadId: string, fromSeq?: number, toSeq?: number) => read(threadId, fromSeq, toSeq),
    readRanges: async (threadId: string, ranges: ReadonlyArray<SeqRange>) => readRanges(threadId, ranges),
    seqsOf: async (threadId: string, ids: ReadonlyArray<string>) => seqsOf(threadId, ids),
    setTokenCounts: async (threadId: string, updates: ReadonlyArray<TokenCountUpdate>) =>
      setTokenCounts(threadId, updates),
    threads: async () => Object.freeze([...threads.keys()].sort()),
    search: async (threadId: string, query: string, options?: LogSearchOptions) => {
      const args = checkSearchArguments(threadId, query, options);
      return Object.freeze([...(catchUp(threadId)?.index.search(args) ?? [])]);
    },
    indexForSearch: async (threadId: string) => {
      checkThreadId(threadId);
      catchUp(threadId);
    },
  });
}
