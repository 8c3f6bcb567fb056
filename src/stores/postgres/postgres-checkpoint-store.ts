import {
  CHECKPOINTS_KEPT,
  type CheckpointStore,
  checkCheckpoint,
  checkLatestArguments,
  checkpointBodyColumn,
  checkpointFromRow,
  type ThreadCheckpoint,
} from "../checkpoint-store.js";
import { guarded } from "../store-errors.js";
import { type PgPool, pgColumn, pgInt, pgTransaction } from "./postgres-driver.js";

/**
 * A `CheckpointStore` on PostgreSQL: a put inserts its row (a key already stored is left alone) and trims the
 * thread to `CHECKPOINTS_KEPT` in one transaction. Puts to one thread first take a transaction-scoped advisory
 * lock on it: under READ COMMITTED two concurrent trims would each miss the other's new row and keep one too
 * many. The lock is not the thread's row lock, so a checkpoint of megabytes never holds up appends or commits.
 *
 * @example
 * const checkpoints = createPostgresCheckpointStore(pool, '"context_ledger"'); // schema already migrated
 * await checkpoints.latest("t1", 3, 120);
 */
export function createPostgresCheckpointStore(pool: PgPool, s: string): CheckpointStore {
  const sql = {
    // The two-key form: its keys never meet the one-key lock the migrations take.
    lock: "SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))",
    insert: `INSERT INTO ${s}.checkpoints (thread_id, plan_version, log_length, format, body)
      VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
    // With fewer than $2 checkpoints the subquery finds no row, the comparison is NULL and nothing is deleted.
    trim: `DELETE FROM ${s}.checkpoints
      WHERE thread_id = $1 AND (plan_version, log_length) < (
        SELECT plan_version, log_length FROM ${s}.checkpoints WHERE thread_id = $1
        ORDER BY plan_version DESC, log_length DESC LIMIT 1 OFFSET $2::integer - 1)`,
    latest: `SELECT log_length, format, body FROM ${s}.checkpoints
      WHERE thread_id = $1 AND plan_version = $2 AND log_length <= $3 ORDER BY log_length DESC LIMIT 1`,
  };

  async function put(input: ThreadCheckpoint): Promise<void> {
    const checkpoint = checkCheckpoint(input);
    const { threadId, planVersion, logLength, format } = checkpoint;
    const body = checkpointBodyColumn(checkpoint);
    await pgTransaction(pool, async (client) => {
      await client.query(sql.lock, [`context-ledger:${s}:checkpoints`, threadId]);
      const { rowCount } = await client.query(sql.insert, [threadId, planVersion, logLength, format, body]);
      if (rowCount === 1) await client.query(sql.trim, [threadId, CHECKPOINTS_KEPT]);
    });
  }

  async function latest(
    threadId: string,
    planVersion: number,
    maxLogLength: number,
  ): Promise<ThreadCheckpoint | undefined> {
    checkLatestArguments(threadId, planVersion, maxLogLength);
    const { rows } = await pool.query(sql.latest, [threadId, planVersion, maxLogLength]);
    const row = rows[0];
    if (row === undefined) return undefined;
    const logLength = pgInt(row, "log_length");
    return checkpointFromRow(
      threadId,
      planVersion,
      logLength,
      pgColumn(row, "format"),
      pgColumn(row, "body"),
    );
  }

  return Object.freeze({
    put: (checkpoint: ThreadCheckpoint) =>
      guarded("PostgreSQL", "checkpoint put", checkpoint?.threadId, () => put(checkpoint)),
    latest: (threadId: string, planVersion: number, maxLogLength: number) =>
      guarded("PostgreSQL", "checkpoint latest", threadId, () => latest(threadId, planVersion, maxLogLength)),
  });
}
