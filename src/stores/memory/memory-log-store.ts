import { ChainBrokenError } from "../../errors/ledger-error.js";
import {
  chainedTokens,
  chainLogRows,
  type LedgerWriteOptions,
  logGenesis,
} from "../../ledger/ledger-chain.js";
import type { LogChainRow } from "../../ledger/verify-chain.js";
import { deepFreeze } from "../../log/deep-freeze.js";
import { checkSearchArguments, searchTextOf } from "../log-search.js";
import type { ChainedLogRead, LogSearchOptions } from "../log-store.js";
import {
  checkAppendBatch,
  checkReadArguments,
  checkThreadId,
  checkTokenUpdates,
  duplicateIdError,
  type LogStore,
  logConflict,
  normalizeRanges,
  pairedReads,
  type SeqRange,
  type StoredMessage,
  type TokenCountUpdate,
} from "../log-store.js";
import { unknownSeqError } from "../store-errors.js";
import { accessOf, assertAccess, checkTenant, DEFAULT_TENANT } from "../thread-tenancy.js";
import { SearchIndex } from "./memory-search-index.js";

/**
 * The raw rows of a memory thread, as a database would hold them: what a test edits to play someone who rewrites
 * the storage behind the store's back (`MEMORY_ROWS`). `chain[seq]` and `chainedTokens[seq]` go with `entries[seq]`.
 */
export interface MemoryLogRows {
  readonly entries: StoredMessage[];
  /** Each row's chain hash. */
  readonly chain: string[];
  /** Canonical JSON of the counts each row was appended with. */
  readonly chainedTokens: string[];
}

/** The key under which a memory log or plan store hands out its raw rows (tests only; not a public API). */
export const MEMORY_ROWS: unique symbol = Symbol("context-ledger memory rows");

interface ThreadEntries extends MemoryLogRows {
  /** The tenant whose first append made the thread. */
  readonly tenant: string;
  readonly entries: StoredMessage[];
  readonly seqById: Map<string, number>;
  readonly index: SearchIndex;
  /** The messages below this seq are in `index`; the rest are indexed by the next search. */
  indexed: number;
}

/** The threads of a memory log, shared by the stores of every tenant bound to it. */
export type MemoryLogState = Map<string, ThreadEntries>;

/** A new, empty memory log for `createMemoryLogStore` to bind tenants to. */
export function createMemoryLogState(): MemoryLogState {
  return new Map();
}

/**
 * An in-memory `LogStore`, the reference implementation the conformance suite holds the database backends to.
 * Each call checks and writes without awaiting in between, so concurrent async writers serialize on the event
 * loop exactly like database transactions do. The store acts for `tenant` (default `default`): another
 * tenant's thread in the same `state` is refused with `ThreadAccessError`.
 *
 * @example
 * const store = createMemoryLogStore();
 * await store.append("t1", 0, entries);
 */
export function createMemoryLogStore(
  tenant: string | null = DEFAULT_TENANT,
  threads: MemoryLogState = createMemoryLogState(),
): LogStore {
  // null: a store of no tenant, for the plan store's own checks of a commit the caller's tenant was checked for.
  if (tenant !== null) checkTenant(tenant);
  const claimAs = tenant ?? DEFAULT_TENANT;
  /** The thread when this tenant may see it (undefined when nobody has appended); another tenant's throws. */
  const threadOf = (threadId: string, operation = "reading the log"): ThreadEntries | undefined => {
    const thread = threads.get(threadId);
    if (thread !== undefined && tenant !== null)
      assertAccess(accessOf(thread.tenant, tenant), threadId, operation);
    return thread;
  };

  function append(
    threadId: string,
    expectedSeq: number,
    batch: ReadonlyArray<StoredMessage>,
    key: string | undefined,
  ): void {
    checkAppendBatch(threadId, expectedSeq, batch);
    const thread = threadOf(threadId, "appending to the log") ?? {
      tenant: claimAs,
      entries: [],
      chain: [],
      chainedTokens: [],
      seqById: new Map<string, number>(),
      index: new SearchIndex(),
      indexed: 0,
    };
    if (thread.entries.length !== expectedSeq)
      throw logConflict(threadId, expectedSeq, thread.entries.length);
    for (const { message } of batch) {
      if (thread.seqById.has(message.id)) throw duplicateIdError(threadId, message.id);
    }
    // Frozen copies: a caller editing its objects after the append must not change the log.
    const frozen = batch.map((entry) =>
      Object.freeze({
        message: deepFreeze(Object.isFrozen(entry.message) ? entry.message : structuredClone(entry.message)),
        tokens: Object.freeze({ ...entry.tokens }),
      }),
    );
    const links = frozen.map((e) => ({
      seq: e.message.seq,
      body: JSON.stringify(e.message),
      tokens: chainedTokens(e.tokens),
    }));
    const previous = expectedSeq === 0 ? logGenesis(threadId, key) : thread.chain[expectedSeq - 1];
    // Memory rows are chained from their first append: a head without a hash was removed behind the store's back.
    if (!previous)
      throw new ChainBrokenError(threadId, "log", expectedSeq - 1, "it has no chain hash (removed)");
    const hashes = chainLogRows(previous, links, key);
    frozen.forEach((entry, i) => {
      thread.seqById.set(entry.message.id, thread.entries.length);
      thread.entries.push(entry);
      thread.chain.push(hashes[i]!);
      thread.chainedTokens.push(links[i]!.tokens);
    });
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
    const entries = threadOf(threadId, "updating token counts")?.entries ?? [];
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

  function chainRows(threadId: string, toSeq: number): ReadonlyArray<LogChainRow> {
    checkReadArguments(threadId, 0, toSeq);
    const thread = threadOf(threadId);
    if (thread === undefined) return Object.freeze([]);
    return Object.freeze(
      thread.entries.slice(0, toSeq).map((entry, seq) => ({
        seq,
        messageId: entry.message.id,
        body: JSON.stringify(entry.message),
        tokens: entry.tokens,
        appendedTokens: JSON.parse(thread.chainedTokens[seq] ?? "null") as unknown,
        chainHash: thread.chain[seq] ?? null,
      })),
    );
  }

  function readWithChain(threadId: string, toSeq: number): ChainedLogRead {
    const chain = chainRows(threadId, toSeq);
    const entries = threadOf(threadId)?.entries.slice(0, chain.length) ?? [];
    return Object.freeze({ entries: Object.freeze(entries), chain });
  }

  // The methods readWithChain reads like, handed out as they are (so a replaced one can be told: `oneReadOf`).
  const reads = {
    read: async (threadId: string, fromSeq?: number, toSeq?: number) => read(threadId, fromSeq, toSeq),
    chainRows: async (threadId: string, toSeq: number) => chainRows(threadId, toSeq),
  };

  return Object.freeze({
    [MEMORY_ROWS]: (threadId: string): MemoryLogRows | undefined => threadOf(threadId),
    append: async (
      threadId: string,
      expectedSeq: number,
      batch: ReadonlyArray<StoredMessage>,
      options?: LedgerWriteOptions,
    ) => append(threadId, expectedSeq, batch, options?.ledgerKey),
    chainHead: async (threadId: string, seq: number) => {
      checkReadArguments(threadId, seq, undefined);
      return seq === 0 ? undefined : threadOf(threadId)?.chain[seq - 1];
    },
    ...reads,
    readWithChain: pairedReads(
      async (threadId: string, toSeq: number) => readWithChain(threadId, toSeq),
      reads,
    ),
    length: async (threadId: string) => {
      checkThreadId(threadId);
      return threadOf(threadId)?.entries.length ?? 0;
    },
    readRanges: async (threadId: string, ranges: ReadonlyArray<SeqRange>) => readRanges(threadId, ranges),
    seqsOf: async (threadId: string, ids: ReadonlyArray<string>) => seqsOf(threadId, ids),
    setTokenCounts: async (threadId: string, updates: ReadonlyArray<TokenCountUpdate>) =>
      setTokenCounts(threadId, updates),
    threads: async () =>
      Object.freeze(
        [...threads.entries()]
          .filter(([, t]) => t.tenant === claimAs)
          .map(([id]) => id)
          .sort(),
      ),
    ...(tenant === null ? {} : { tenant }),
    access: async (threadId: string) => {
      checkThreadId(threadId);
      return accessOf(threads.get(threadId)?.tenant, claimAs);
    },
    search: async (threadId: string, query: string, options?: LogSearchOptions) => {
      const args = checkSearchArguments(threadId, query, options);
      threadOf(threadId, "searching the log");
      return Object.freeze([...(catchUp(threadId)?.index.search(args) ?? [])]);
    },
    indexForSearch: async (threadId: string) => {
      checkThreadId(threadId);
      catchUp(threadId);
    },
  });
}
