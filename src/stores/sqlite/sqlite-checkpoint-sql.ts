import type { CheckpointKey } from "../checkpoint-store.js";
import type { CheckpointColumns, CheckpointSql } from "../sql/sql-checkpoint-store.js";
import { statement } from "../sql/sql-dialect.js";

// Deletes a thread's checkpoints older than its ?-th newest (by plan version, then log length); with fewer than
// that the subquery finds no row, the comparison is NULL and nothing is deleted.
const TRIM = `DELETE FROM checkpoints
  WHERE thread_id = ? AND (plan_version, log_length) < (
    SELECT plan_version, log_length FROM checkpoints WHERE thread_id = ?
    ORDER BY plan_version DESC, log_length DESC LIMIT 1 OFFSET ? - 1)`;

const KEY = "thread_id = ? AND plan_version = ? AND log_length = ?";
const keyValues = (threadId: string, key: CheckpointKey) => [threadId, key.planVersion, key.logLength];
const rowValues = (r: CheckpointColumns) => [r.threadId, r.planVersion, r.logLength, r.format, r.body];

/**
 * SQLite's statements on `checkpoints`. `BEGIN IMMEDIATE` already serializes puts, so no lock statement. The
 * tail is the row's last column, so `latest`, reading the columns before it, never reads its pages; a joined
 * tail is copied inside the database and never reaches JavaScript.
 */
export const sqliteCheckpointSql: CheckpointSql = Object.freeze({
  lock: () => [],
  insert: (row: CheckpointColumns, tail: string) =>
    statement(
      `INSERT INTO checkpoints (thread_id, plan_version, log_length, format, body, tail)
       VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id, plan_version, log_length) DO NOTHING`,
      [...rowValues(row), tail],
    ),
  insertExtending: (row: CheckpointColumns, continuation: string, base: CheckpointKey) =>
    statement(
      `INSERT INTO checkpoints (thread_id, plan_version, log_length, format, body, tail)
       SELECT ?, ?, ?, ?, ?, substr(tail, 1, length(tail) - 1) || ? FROM checkpoints WHERE ${KEY}`,
      [...rowValues(row), continuation, ...keyValues(row.threadId, base)],
    ),
  exists: (threadId: string, key: CheckpointKey) =>
    statement(`SELECT 1 AS found FROM checkpoints WHERE ${KEY}`, keyValues(threadId, key)),
  trim: (threadId: string, kept: number) => statement(TRIM, [threadId, threadId, kept]),
  latest: (threadId: string, planVersion: number, maxLogLength: number) =>
    statement(
      `SELECT log_length, format, body FROM checkpoints
       WHERE thread_id = ? AND plan_version = ? AND log_length <= ? ORDER BY log_length DESC LIMIT 1`,
      [threadId, planVersion, maxLogLength],
    ),
  tail: (threadId: string, key: CheckpointKey) =>
    statement(`SELECT tail FROM checkpoints WHERE ${KEY}`, keyValues(threadId, key)),
});
