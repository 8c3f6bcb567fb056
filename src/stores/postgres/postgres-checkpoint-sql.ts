import type { CheckpointKey } from "../checkpoint-store.js";
import type { CheckpointColumns, CheckpointSql } from "../sql/sql-checkpoint-store.js";
import { statement } from "../sql/sql-dialect.js";

const rowValues = (r: CheckpointColumns) => [r.threadId, r.planVersion, r.logLength, r.format, r.body];

/**
 * PostgreSQL's statements on `checkpoints` in schema `s` (quoted). Puts to one thread first take a
 * transaction-scoped advisory lock on it: under READ COMMITTED two concurrent trims would each miss the other's
 * new row and keep one too many. Body and tail are separate columns (TOAST keeps large ones aside).
 */
export function postgresCheckpointSql(s: string): CheckpointSql {
  const key = "thread_id = $1 AND plan_version = $2 AND log_length = $3";
  return Object.freeze({
    // The two-key form: its keys never meet the one-key lock the migrations take.
    lock: (threadId: string) => [
      statement("SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))", [
        `context-ledger:${s}:checkpoints`,
        threadId,
      ]),
    ],
    insert: (row: CheckpointColumns, tail: string) =>
      statement(
        `INSERT INTO ${s}.checkpoints (thread_id, plan_version, log_length, format, body, tail)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
        [...rowValues(row), tail],
      ),
    // The base's tail is copied inside the server and never crosses the connection.
    insertExtending: (row: CheckpointColumns, continuation: string, base: CheckpointKey) =>
      statement(
        `INSERT INTO ${s}.checkpoints (thread_id, plan_version, log_length, format, body, tail)
         SELECT $1, $2, $3, $4, $5, left(tail, -1) || $6 FROM ${s}.checkpoints
         WHERE thread_id = $1 AND plan_version = $7 AND log_length = $8
         ON CONFLICT DO NOTHING`,
        [...rowValues(row), continuation, base.planVersion, base.logLength],
      ),
    exists: (threadId: string, k: CheckpointKey) =>
      statement(`SELECT 1 FROM ${s}.checkpoints WHERE ${key}`, [threadId, k.planVersion, k.logLength]),
    // With fewer than $2 checkpoints the subquery finds no row, the comparison is NULL and nothing is deleted.
    trim: (threadId: string, kept: number) =>
      statement(
        `DELETE FROM ${s}.checkpoints
         WHERE thread_id = $1 AND (plan_version, log_length) < (
           SELECT plan_version, log_length FROM ${s}.checkpoints WHERE thread_id = $1
           ORDER BY plan_version DESC, log_length DESC LIMIT 1 OFFSET $2::integer - 1)`,
        [threadId, kept],
      ),
    latest: (threadId: string, planVersion: number, maxLogLength: number) =>
      statement(
        `SELECT log_length, format, body FROM ${s}.checkpoints
         WHERE thread_id = $1 AND plan_version = $2 AND log_length <= $3 ORDER BY log_length DESC LIMIT 1`,
        [threadId, planVersion, maxLogLength],
      ),
    tail: (threadId: string, k: CheckpointKey) =>
      statement(`SELECT tail FROM ${s}.checkpoints WHERE ${key}`, [threadId, k.planVersion, k.logLength]),
  });
}
