import { backfillChain } from "../../ledger/chain-backfill.js";
import {
  chainedTokens,
  chainLogRows,
  type LedgerWriteOptions,
  logGenesis,
  logLink,
} from "../../ledger/ledger-chain.js";
import type { LogChainRow } from "../../ledger/verify-chain.js";
import { checkSearchArguments } from "../log-search.js";
import {
  type ChainedLogRead,
  checkAppendBatch,
  checkReadArguments,
  checkThreadId,
  checkTokenUpdates,
  duplicateIdError,
  type LogSearchHit,
  type LogSearchOptions,
  type LogStore,
  logConflict,
  normalizeRanges,
  pairedReads,
  type SeqRange,
  type StoredMessage,
  storedFromRow,
  type TokenCountUpdate,
} from "../log-store.js";
import { unknownSeqError } from "../store-errors.js";
import { accessOf, assertAccess, checkTenant, DEFAULT_TENANT } from "../thread-tenancy.js";
import {
  all,
  column,
  run,
  runAll,
  type SqlDialect,
  type SqlStatement,
  type SqlWork,
  storeOperations,
} from "./sql-dialect.js";
import { catchUpSearch, markOf, type SearchSql } from "./sql-search-catchup.js";
import { lockThread, type ThreadSql, threadVersions } from "./sql-threads.js";

/**
 * A dialect's statements on the `messages` table and its search index; rows read carry `body` and `tokens`, or
 * `id` and `seq`.
 */
export interface LogSql {
  readonly threads: ThreadSql;
  /** The search index's statements and its progress mark per thread. */
  readonly searchIndex: SearchSql;
  /** Inserts a batch (already checked, seqs continuing the thread) in as many statements as the dialect likes. */
  insert(threadId: string, batch: ReadonlyArray<ChainedMessageRow>): ReadonlyArray<SqlStatement>;
  /** The `chain_hash` of the row at `seq` (no row for an unknown seq; NULL for a row not chained yet). */
  chainHead(threadId: string, seq: number): SqlStatement;
  /**
   * Rows with seq below `toSeq` in seq order, carrying `seq`, `message_id`, `body` (text), `tokens` (JSON, text
   * or parsed), `chained_tokens` and `chain_hash` (NULL before the chain).
   */
  chainRows(threadId: string, toSeq: number): SqlStatement;
  /** Sets the chain hash and chained counts of a row written before the chain (its backfill). */
  setChain(threadId: string, seq: number, chainHash: string, tokens: string): SqlStatement;
  /**
   * The thread's messages holding any of `terms` (words as `searchWords` makes them), best first and the later
   * message first among equals, at most `limit`, only among `seqs` when given (never empty): rows carry `seq`,
   * `id` and `score` (higher is better).
   */
  search(
    threadId: string,
    terms: ReadonlyArray<string>,
    limit: number,
    seqs: ReadonlyArray<number> | undefined,
    tenant: string,
  ): SqlStatement;
  /**
   * Messages in the ranges (sorted, disjoint, none empty), in seq order, over however many statements; no row
   * when the thread is not `tenant`'s (undefined: any tenant's, for the plan store's own checks).
   */
  ranges(
    threadId: string,
    ranges: ReadonlyArray<SeqRange>,
    tenant: string | undefined,
  ): ReadonlyArray<SqlStatement>;
  /**
   * `id` and `seq` of each of the message ids the thread holds; none when the thread is not `tenant`'s
   * (undefined: any tenant's, for an append that has checked the tenant already in its transaction).
   */
  seqsOf(threadId: string, ids: ReadonlyArray<string>, tenant: string | undefined): SqlStatement;
  /** Merges token counts (JSON) into those of the message at `seq`; changes no row for an unknown seq. */
  patchTokens(threadId: string, seq: number, tokens: string): SqlStatement;
}

/** A row as an append writes it: the message JSON, its counts (JSON and canonical JSON) and its chain hash. */
export interface ChainedMessageRow {
  readonly seq: number;
  readonly id: string;
  readonly body: string;
  readonly tokens: string;
  /** Canonical JSON of the counts, as the chain covers them. */
  readonly chainedTokens: string;
  readonly chainHash: string;
}

/**
 * The `LogStore` on a SQL database. An append locks the thread (`ThreadSql.lock`), checks its length and the
 * batch's ids, inserts the batch and bumps the length in one write transaction: concurrent writers on any
 * machine serialize per thread, a stale one gets `VersionConflictError`, and a writer that dies mid-append leaves
 * nothing of the batch. Appends do not index: a search (or `indexForSearch`) first indexes what was appended
 * since the thread's progress mark (`catchUpSearch`), since searches are rare and appends come every turn.
 *
 * The store acts for `tenant`: the first append claims a thread for it (in the append's transaction), an append
 * to another tenant's thread is refused there, and every read names the tenant in its query, so another
 * tenant's thread yields no row; the store then says `ThreadAccessError` rather than "empty".
 *
 * @example
 * const log = createSqlLogStore(sqliteDialect(db), sqliteLogSql, "acme"); // db already migrated
 * await log.append("t1", 0, entries);
 */
export function createSqlLogStore(
  dialect: SqlDialect,
  sql: LogSql,
  tenant: string | null = DEFAULT_TENANT,
): LogStore {
  // null: a store of no tenant, for the plan store's own checks of a commit the caller's tenant was checked for.
  if (tenant !== null) checkTenant(tenant);
  const claimAs = tenant ?? DEFAULT_TENANT;
  const op = storeOperations(dialect);

  /** The thread's versions, refused when another tenant owns it. */
  async function ownVersions(threadId: string, operation: string) {
    const versions = await threadVersions(dialect, sql.threads, threadId);
    if (tenant !== null) assertAccess(accessOf(versions.tenant, tenant), threadId, operation);
    return versions;
  }

  /** After a tenant-filtered read found nothing: says why when the thread is another tenant's. */
  async function explainEmpty(threadId: string, operation: string): Promise<void> {
    await ownVersions(threadId, operation);
  }

  const seqsFromRows = (rows: ReadonlyArray<unknown>): Map<string, number> => {
    const out = new Map<string, number>();
    for (const row of rows) out.set(String(column(row, "id")), dialect.int(row, "seq"));
    return out;
  };

  function* insert(
    threadId: string,
    expectedSeq: number,
    batch: ReadonlyArray<StoredMessage>,
    key: string | undefined,
  ): SqlWork<void> {
    const locked = yield* lockThread(dialect, sql.threads, threadId);
    if (tenant !== null) assertAccess(accessOf(locked.tenant, tenant), threadId, "appending to the log");
    const { logLength } = locked;
    if (logLength !== expectedSeq) throw logConflict(threadId, expectedSeq, logLength);
    const ids = batch.map((e) => e.message.id);
    const taken = seqsFromRows(yield* all(sql.seqsOf(threadId, ids, undefined)));
    const first = batch.find((e) => taken.has(e.message.id));
    if (first !== undefined) throw duplicateIdError(threadId, first.message.id);
    if (batch.length === 0) return;
    // The chain grows from the head before the batch, read once (a primary-key lookup) in this transaction.
    const previous = yield* headBefore(threadId, expectedSeq, key);
    const rows = batch.map(({ message, tokens }) => ({
      seq: message.seq,
      id: message.id,
      body: JSON.stringify(message),
      tokens: JSON.stringify(tokens),
      chainedTokens: chainedTokens(tokens),
    }));
    const links = rows.map((r) => ({ seq: r.seq, body: r.body, tokens: r.chainedTokens }));
    const hashes = chainLogRows(previous, links, key);
    yield* runAll(
      sql.insert(
        threadId,
        rows.map((row, i) => ({ ...row, chainHash: hashes[i]! })),
      ),
    );
    yield* run(sql.threads.setLogLength(threadId, expectedSeq + batch.length, claimAs));
  }

  /**
   * The chain head after `seq` rows. Rows written before the chain have no hash: the first append after the
   * migration chains them (once, in its transaction), so every later append reads one row. Only that legacy case
   * is backfilled: a row without a hash after chained ones refuses the append (`backfillChain`).
   */
  function* headBefore(threadId: string, seq: number, key: string | undefined): SqlWork<string> {
    if (seq === 0) return logGenesis(threadId, key);
    const [row] = yield* all(sql.chainHead(threadId, seq - 1));
    const stored = column(row, "chain_hash");
    if (typeof stored === "string") return stored;
    const rows = (yield* all(sql.chainRows(threadId, seq))).map((r) => {
      const chained = chainRowOf(r);
      return {
        ...chained,
        position: chained.seq,
        linkTokens: chainedTokens(chained.appendedTokens ?? chained.tokens),
      };
    });
    const spec = {
      threadId,
      chain: "log" as const,
      first: 0,
      genesis: logGenesis(threadId, key),
      link: (previous: string, r: (typeof rows)[number]) =>
        logLink(previous, { seq: r.seq, body: r.body, tokens: r.linkTokens }, key),
    };
    const { head, fills } = backfillChain(spec, rows, seq);
    for (const { row: r, hash } of fills) yield* run(sql.setChain(threadId, r.seq, hash, r.linkTokens));
    return head;
  }

  const parseJson = (value: unknown): unknown => (typeof value === "string" ? JSON.parse(value) : value);
  /** A row of `sql.chainRows` as a chain row; `tokens`: its counts parsed already (by `readWithChain`). */
  const chainRowOf = (row: unknown, tokens?: unknown): LogChainRow => {
    const appended = column(row, "chained_tokens");
    const hash = column(row, "chain_hash");
    const stored = column(row, "tokens");
    const counts = tokens ?? parseJson(stored);
    return {
      seq: dialect.int(row, "seq"),
      messageId: String(column(row, "message_id")),
      body: String(column(row, "body")),
      tokens: counts,
      // Counts never merged into since the append are the same text: parsed once for both.
      appendedTokens: appended == null ? null : appended === stored ? counts : parseJson(appended),
      chainHash: typeof hash === "string" ? hash : null,
    };
  };

  /**
   * The rows below `toSeq` in one scan, each body parsed once: the message `read` would give (checked the same
   * way, so a row that does not read throws the same error) and the chain row `chainRows` would give.
   */
  async function readWithChain(threadId: string, toSeq: number): Promise<ChainedLogRead> {
    checkReadArguments(threadId, 0, toSeq);
    await ownVersions(threadId, "reading the log");
    const entries: StoredMessage[] = [];
    const chain: LogChainRow[] = [];
    for (const row of await dialect.all(sql.chainRows(threadId, toSeq))) {
      const entry = storedFromRow(threadId, column(row, "body"), column(row, "tokens"));
      entries.push(entry);
      chain.push(chainRowOf(row, entry.tokens));
    }
    return Object.freeze({ entries: Object.freeze(entries), chain: Object.freeze(chain) });
  }

  async function append(
    threadId: string,
    expectedSeq: number,
    batch: ReadonlyArray<StoredMessage>,
    options?: LedgerWriteOptions,
  ) {
    checkAppendBatch(threadId, expectedSeq, batch);
    await dialect.transaction(() => insert(threadId, expectedSeq, batch, options?.ledgerKey));
  }

  /**
   * Indexes what the thread holds beyond its mark. The length and the mark are read first, outside a
   * transaction, so a search of an indexed thread takes no write lock; every message below a committed length is
   * committed too, since an append writes both in one transaction.
   */
  async function catchUp(threadId: string): Promise<void> {
    const { logLength } = await ownVersions(threadId, "searching the log");
    if (markOf(await dialect.all(sql.searchIndex.indexed(threadId)), dialect.int) >= logLength) return;
    await dialect.transaction(() => catchUpSearch(sql.searchIndex, dialect.int, threadId, logLength));
  }

  async function readMerged(threadId: string, merged: ReadonlyArray<SeqRange>) {
    const out: StoredMessage[] = [];
    if (merged.length === 0) {
      await explainEmpty(threadId, "reading the log");
      return Object.freeze(out);
    }
    for (const statement of sql.ranges(threadId, merged, tenant ?? undefined)) {
      for (const row of await dialect.all(statement))
        out.push(storedFromRow(threadId, column(row, "body"), column(row, "tokens")));
    }
    if (out.length === 0) await explainEmpty(threadId, "reading the log");
    return Object.freeze(out);
  }

  async function read(threadId: string, fromSeq = 0, toSeq = Number.MAX_SAFE_INTEGER) {
    checkReadArguments(threadId, fromSeq, toSeq);
    return readMerged(threadId, toSeq > fromSeq ? [{ from: fromSeq, to: toSeq }] : []);
  }

  async function search(threadId: string, query: string, options?: LogSearchOptions) {
    const { terms, limit, seqs } = checkSearchArguments(threadId, query, options);
    if (terms.length === 0 || seqs?.length === 0) {
      await explainEmpty(threadId, "searching the log");
      return Object.freeze([]);
    }
    await catchUp(threadId);
    const rows = await dialect.all(sql.search(threadId, terms, limit, seqs, claimAs));
    return Object.freeze(
      rows.map(
        (row): LogSearchHit =>
          Object.freeze({
            seq: dialect.int(row, "seq"),
            messageId: String(column(row, "id")),
            score: Number(column(row, "score")),
          }),
      ),
    );
  }

  async function setTokenCounts(threadId: string, updates: ReadonlyArray<TokenCountUpdate>) {
    checkTokenUpdates(threadId, updates);
    await explainEmpty(threadId, "updating token counts");
    await dialect.transaction(function* () {
      for (const { seq, tokens } of updates) {
        const changed = yield* run(sql.patchTokens(threadId, seq, JSON.stringify(tokens)));
        if (changed === 0) throw unknownSeqError(threadId, seq);
      }
    });
  }

  // The methods readWithChain reads like, handed out as they are (so a replaced one can be told: `oneReadOf`).
  const reads = {
    read: (threadId: string, fromSeq?: number, toSeq?: number) =>
      op("read", threadId, () => read(threadId, fromSeq, toSeq)),
    chainRows: (threadId: string, toSeq: number) =>
      op("chainRows", threadId, async () => {
        checkReadArguments(threadId, 0, toSeq);
        await ownVersions(threadId, "reading the log chain");
        return Object.freeze((await dialect.all(sql.chainRows(threadId, toSeq))).map((r) => chainRowOf(r)));
      }),
  };

  return Object.freeze({
    append: (
      threadId: string,
      expectedSeq: number,
      batch: ReadonlyArray<StoredMessage>,
      options?: LedgerWriteOptions,
    ) => op("append", threadId, () => append(threadId, expectedSeq, batch, options)),
    chainHead: (threadId: string, seq: number) =>
      op("chainHead", threadId, async () => {
        checkReadArguments(threadId, seq, undefined);
        if (seq === 0) return undefined;
        await ownVersions(threadId, "reading the log chain");
        const [row] = await dialect.all(sql.chainHead(threadId, seq - 1));
        const stored = column(row, "chain_hash");
        return typeof stored === "string" ? stored : undefined;
      }),
    ...reads,
    readWithChain: pairedReads(
      (threadId: string, toSeq: number) =>
        op("readWithChain", threadId, () => readWithChain(threadId, toSeq)),
      reads,
    ),
    length: (threadId: string) =>
      op("length", threadId, async () => {
        checkThreadId(threadId);
        return (await ownVersions(threadId, "reading the log")).logLength;
      }),
    readRanges: (threadId: string, ranges: ReadonlyArray<SeqRange>) =>
      op("readRanges", threadId, async () => {
        checkThreadId(threadId);
        return readMerged(threadId, normalizeRanges(threadId, ranges));
      }),
    seqsOf: (threadId: string, ids: ReadonlyArray<string>) =>
      op("seqsOf", threadId, async () => {
        checkThreadId(threadId);
        const found = seqsFromRows(await dialect.all(sql.seqsOf(threadId, ids, tenant ?? undefined)));
        if (found.size === 0) await explainEmpty(threadId, "reading the log");
        return found as ReadonlyMap<string, number>;
      }),
    setTokenCounts: (threadId: string, updates: ReadonlyArray<TokenCountUpdate>) =>
      op("setTokenCounts", threadId, () => setTokenCounts(threadId, updates)),
    threads: () =>
      op("threads", undefined, async () => {
        const rows = await dialect.all(sql.threads.withMessages(claimAs));
        return Object.freeze(rows.map((row) => String(column(row, "thread_id"))).sort());
      }),
    search: (threadId: string, query: string, options?: LogSearchOptions) =>
      op("search", threadId, () => search(threadId, query, options)),
    ...(tenant === null ? {} : { tenant }),
    access: (threadId: string) =>
      op("access", threadId, async () => {
        checkThreadId(threadId);
        return accessOf((await threadVersions(dialect, sql.threads, threadId)).tenant, claimAs);
      }),
    indexForSearch: (threadId: string) =>
      op("indexForSearch", threadId, async () => {
        checkThreadId(threadId);
        await catchUp(threadId);
      }),
  });
}
