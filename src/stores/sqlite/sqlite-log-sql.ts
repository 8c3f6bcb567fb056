import type { StoredMessage } from "../log-store.js";
import { statement } from "../sql/sql-dialect.js";
import type { LogSql } from "../sql/sql-log-store.js";
import type { ThreadSql } from "../sql/sql-threads.js";

/**
 * SQLite's statements on `threads`. A write transaction is `BEGIN IMMEDIATE`, which already holds the database's
 * write lock, so locking a thread takes no statement; a thread's row is created by the first write to it.
 */
export const sqliteThreadSql: ThreadSql = Object.freeze({
  lock: () => [],
  locked: (threadId: string) =>
    statement("SELECT log_length, plan_version FROM threads WHERE thread_id = ?", [threadId]),
  row: (threadId: string) =>
    statement("SELECT log_length, plan_version FROM threads WHERE thread_id = ?", [threadId]),
  setLogLength: (threadId: string, length: number) =>
    statement(
      `INSERT INTO threads (thread_id, log_length) VALUES (?, ?)
       ON CONFLICT (thread_id) DO UPDATE SET log_length = excluded.log_length`,
      [threadId, length],
    ),
  setPlanVersion: (threadId: string, version: number) =>
    statement(
      `INSERT INTO threads (thread_id, plan_version) VALUES (?, ?)
       ON CONFLICT (thread_id) DO UPDATE SET plan_version = excluded.plan_version`,
      [threadId, version],
    ),
  withMessages: () => statement("SELECT thread_id FROM threads WHERE log_length > 0"),
});

const INSERT = "INSERT INTO messages (thread_id, seq, message_id, body, tokens) VALUES (?, ?, ?, ?, ?)";
const RANGE = "SELECT body, tokens FROM messages WHERE thread_id = ? AND seq >= ? AND seq < ? ORDER BY seq";

/** SQLite's statements on `messages`: one prepared insert per message, one range scan per range. */
export const sqliteLogSql: LogSql = Object.freeze({
  threads: sqliteThreadSql,
  insert: (threadId: string, batch: ReadonlyArray<StoredMessage>) =>
    batch.map(({ message, tokens }) =>
      statement(INSERT, [threadId, message.seq, message.id, JSON.stringify(message), JSON.stringify(tokens)]),
    ),
  ranges: (threadId: string, ranges: ReadonlyArray<{ from: number; to: number }>) =>
    ranges.map((r) => statement(RANGE, [threadId, r.from, r.to])),
  seqsOf: (threadId: string, ids: ReadonlyArray<string>) =>
    statement(
      `SELECT message_id AS id, seq FROM messages
       WHERE thread_id = ? AND message_id IN (SELECT value FROM json_each(?))`,
      [threadId, JSON.stringify(ids)],
    ),
  patchTokens: (threadId: string, seq: number, tokens: string) =>
    statement("UPDATE messages SET tokens = json_patch(tokens, ?) WHERE thread_id = ? AND seq = ?", [
      tokens,
      threadId,
      seq,
    ]),
});
