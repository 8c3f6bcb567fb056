import { statement } from "../sql/sql-dialect.js";
import type { ChainedMessageRow, LogSql } from "../sql/sql-log-store.js";
import type { SearchDoc, SearchSql } from "../sql/sql-search-catchup.js";
import type { ThreadSql } from "../sql/sql-threads.js";

/**
 * SQLite's statements on `threads`. A write transaction is `BEGIN IMMEDIATE`, which already holds the database's
 * write lock, so locking a thread takes no statement; a thread's row is created by the first write to it.
 */
export const sqliteThreadSql: ThreadSql = Object.freeze({
  lock: () => [],
  locked: (threadId: string) =>
    statement("SELECT log_length, plan_version, tenant FROM threads WHERE thread_id = ?", [threadId]),
  row: (threadId: string) =>
    statement("SELECT log_length, plan_version, tenant FROM threads WHERE thread_id = ?", [threadId]),
  setLogLength: (threadId: string, length: number, tenant: string) =>
    statement(
      `INSERT INTO threads (thread_id, log_length, tenant) VALUES (?, ?, ?)
       ON CONFLICT (thread_id) DO UPDATE SET log_length = excluded.log_length,
         tenant = coalesce(threads.tenant, excluded.tenant)`,
      [threadId, length, tenant],
    ),
  setPlanVersion: (threadId: string, version: number) =>
    statement(
      `INSERT INTO threads (thread_id, plan_version) VALUES (?, ?)
       ON CONFLICT (thread_id) DO UPDATE SET plan_version = excluded.plan_version`,
      [threadId, version],
    ),
  withMessages: (tenant: string) =>
    statement("SELECT thread_id FROM threads WHERE log_length > 0 AND tenant = ?", [tenant]),
});

const INSERT = `INSERT INTO messages (thread_id, seq, message_id, body, tokens, chained_tokens, chain_hash)
  VALUES (?, ?, ?, ?, ?, ?, ?)`;
// Every read of a thread's messages names the reader's tenant: another tenant's thread yields no row.
const OWNED = "EXISTS (SELECT 1 FROM threads th WHERE th.thread_id = ? AND th.tenant = ?)";
const ANY_RANGE =
  "SELECT body, tokens FROM messages WHERE thread_id = ? AND seq >= ? AND seq < ? ORDER BY seq";
const RANGE = `SELECT body, tokens FROM messages WHERE thread_id = ? AND seq >= ? AND seq < ? AND ${OWNED} ORDER BY seq`;
const INDEX_DOC = "INSERT INTO message_search_docs (thread_id, seq) VALUES (?, ?)";
const INDEX_TEXT = `INSERT INTO message_search (rowid, words)
  VALUES ((SELECT doc FROM message_search_docs WHERE thread_id = ? AND seq = ?), ?)`;

/**
 * A message's words in the search index: a row of `message_search_docs` gives it a rowid, under which the
 * contentless FTS5 table `message_search` indexes its words (the text itself is not stored twice).
 */
function indexStatements(threadId: string, docs: ReadonlyArray<SearchDoc>) {
  return docs.flatMap(({ seq, text }) => [
    statement(INDEX_DOC, [threadId, seq]),
    statement(INDEX_TEXT, [threadId, seq, text]),
  ]);
}

/**
 * Ranked with FTS5's `bm25` (smaller is better, so the score is its negation). The MATCH finds the words' rows
 * through the index; the thread and seqs are checked on the few rows it finds.
 */
function searchStatement(
  threadId: string,
  terms: ReadonlyArray<string>,
  limit: number,
  seqs: ReadonlyArray<number> | undefined,
  tenant: string,
) {
  // Terms are letters and digits only; quoted, FTS5 reads each as a word, never as query syntax.
  const match = terms.map((t) => `"${t}"`).join(" OR ");
  const within = seqs === undefined ? "" : "AND d.seq IN (SELECT value FROM json_each(?))";
  return statement(
    `SELECT d.seq AS seq, m.message_id AS id, -bm25(message_search) AS score
     FROM message_search
     JOIN message_search_docs d ON d.doc = message_search.rowid
     JOIN messages m ON m.thread_id = d.thread_id AND m.seq = d.seq
     WHERE message_search MATCH ? AND d.thread_id = ? ${within} AND ${OWNED}
     ORDER BY bm25(message_search), d.seq DESC
     LIMIT ?`,
    seqs === undefined
      ? [match, threadId, threadId, tenant, limit]
      : [match, threadId, JSON.stringify(seqs), threadId, tenant, limit],
  );
}

const MARK = "SELECT indexed_upto FROM search_progress WHERE thread_id = ?";

/**
 * SQLite's search index and progress marks. A catch-up runs in `BEGIN IMMEDIATE`, which holds the database's
 * write lock, so reading the mark locks it already.
 */
export const sqliteSearchSql: SearchSql = Object.freeze({
  indexed: (threadId: string) => statement(MARK, [threadId]),
  lock: () => [],
  locked: (threadId: string) => statement(MARK, [threadId]),
  setIndexed: (threadId: string, upto: number) =>
    statement(
      `INSERT INTO search_progress (thread_id, indexed_upto) VALUES (?, ?)
       ON CONFLICT (thread_id) DO UPDATE SET indexed_upto = excluded.indexed_upto`,
      [threadId, upto],
    ),
  page: (threadId: string, from: number, to: number) =>
    statement("SELECT seq, body FROM messages WHERE thread_id = ? AND seq >= ? AND seq < ? ORDER BY seq", [
      threadId,
      from,
      to,
    ]),
  index: indexStatements,
});

/** SQLite's statements on `messages`: one prepared insert per message, one range scan per range. */
export const sqliteLogSql: LogSql = Object.freeze({
  threads: sqliteThreadSql,
  searchIndex: sqliteSearchSql,
  insert: (threadId: string, batch: ReadonlyArray<ChainedMessageRow>) =>
    batch.map((r) =>
      statement(INSERT, [threadId, r.seq, r.id, r.body, r.tokens, r.chainedTokens, r.chainHash]),
    ),
  chainHead: (threadId: string, seq: number) =>
    statement("SELECT chain_hash FROM messages WHERE thread_id = ? AND seq = ?", [threadId, seq]),
  chainRows: (threadId: string, toSeq: number) =>
    statement(
      `SELECT seq, message_id, body, tokens, chained_tokens, chain_hash FROM messages
       WHERE thread_id = ? AND seq < ? ORDER BY seq`,
      [threadId, toSeq],
    ),
  setChain: (threadId: string, seq: number, chainHash: string, tokens: string) =>
    statement("UPDATE messages SET chain_hash = ?, chained_tokens = ? WHERE thread_id = ? AND seq = ?", [
      chainHash,
      tokens,
      threadId,
      seq,
    ]),
  ranges: (
    threadId: string,
    ranges: ReadonlyArray<{ from: number; to: number }>,
    tenant: string | undefined,
  ) =>
    ranges.map((r) =>
      tenant === undefined
        ? statement(ANY_RANGE, [threadId, r.from, r.to])
        : statement(RANGE, [threadId, r.from, r.to, threadId, tenant]),
    ),
  seqsOf: (threadId: string, ids: ReadonlyArray<string>, tenant: string | undefined) =>
    tenant === undefined
      ? statement(
          `SELECT message_id AS id, seq FROM messages
           WHERE thread_id = ? AND message_id IN (SELECT value FROM json_each(?))`,
          [threadId, JSON.stringify(ids)],
        )
      : statement(
          `SELECT message_id AS id, seq FROM messages
           WHERE thread_id = ? AND message_id IN (SELECT value FROM json_each(?)) AND ${OWNED}`,
          [threadId, JSON.stringify(ids), threadId, tenant],
        ),
  patchTokens: (threadId: string, seq: number, tokens: string) =>
    statement("UPDATE messages SET tokens = json_patch(tokens, ?) WHERE thread_id = ? AND seq = ?", [
      tokens,
      threadId,
      seq,
    ]),
  search: searchStatement,
});
