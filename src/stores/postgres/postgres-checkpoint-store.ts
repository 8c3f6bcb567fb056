import {
  CHECKPOINTS_KEPT,
  type CheckpointKey,
  type CheckpointStore,
  checkBaseKey,
  checkCheckpoint,
  checkLatestArguments,
  checkpointFromRow,
  checkpointTailFromColumn,
  checkpointTextColumn,
  continuationColumn,
  type ThreadCheckpoint,
} from "../checkpoint-store.js";
import { guarded } from "../store-errors.js";
import { type PgPool, pgColumn, pgInt, pgTransaction } from "./postgres-driver.js";

/**
 * A `CheckpointStore` on PostgreSQL: a put inserts its row (a key already stored is left alone) and trims the
 * thread to `CHECKPOINTS_KEPT` in one transaction. Puts to one thread first take a transaction-scoped advisory
 * lock on it: under READ COMMITTED two concurrent trims would each miss the other's new row and keep one too
 * many. The lock is not the thread's row lock, so a checkpoint of megabytes never holds up appends or commits.
 * Body and tail are separate columns (TOAST keeps large ones aside), so `latest` never reads a tail.
 *
 * @example
 * const checkpoints = createPostgresCheckpointStore(pool, '"context_ledger"'); // schema already migrated
 * await checkpoints.latest("t1", 3, 120);
 */
export function createPostgresCheckpointStore(pool: PgPool, s: string): CheckpointStore {
  const sql = {
    // The two-key form: its keys never meet the one-key lock the migrations take.
    lock: "SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))",
    insert: `INSERT INTO ${s}.checkpoints (thread_id, plan_version, log_length, format, body, tail)
      VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
    // The joined tail's column: the base's column less its closing quote, then the continuation's (see
    // `continuationColumn`); the base's tail is copied inside the server and never crosses the connection.
    insertExtending: `INSERT INTO ${s}.checkpoints (thread_id, plan_version, log_length, format, body, tail)
      SELECT $1, $2, $3, $4, $5, left(tail, -1) || $6 FROM ${s}.checkpoints
      WHERE thread_id = $1 AND plan_version = $7 AND log_length = $8
      ON CONFLICT DO NOTHING`,
    exists: `SELECT 1 FROM ${s}.checkpoints WHERE thread_id = $1 AND plan_version = $2 AND log_length = $3`,
    // With fewer than $2 checkpoints the subquery finds no row, the comparison is NULL and nothing is deleted.
    trim: `DELETE FROM ${s}.checkpoints
      WHERE thread_id = $1 AND (plan_version, log_length) < (
        SELECT plan_version, log_length FROM ${s}.checkpoints WHERE thread_id = $1
        ORDER BY plan_version DESC, log_length DESC LIMIT 1 OFFSET $2::integer - 1)`,
    latest: `SELECT log_length, format, body FROM ${s}.checkpoints
      WHERE thread_id = $1 AND plan_version = $2 AND log_length <= $3 ORDER BY log_length DESC LIMIT 1`,
    tail: `SELECT tail FROM ${s}.checkpoints WHERE thread_id = $1 AND plan_version = $2 AND log_length = $3`,
  };

  async function put(input: ThreadCheckpoint): Promise<boolean> {
    const { head, tail } = checkCheckpoint(input);
    const { threadId, planVersion, logLength, format } = head;
    const body = checkpointTextColumn(head.body);
    const tailColumn = checkpointTextColumn(tail);
    return pgTransaction(pool, async (client) => {
      await client.query(sql.lock, [`context-ledger:${s}:checkpoints`, threadId]);
      const values = [threadId, planVersion, logLength, format, body, tailColumn];
      const { rowCount } = await client.query(sql.insert, values);
      if (rowCount !== 1) return false;
      await client.query(sql.trim, [threadId, CHECKPOINTS_KEPT]);
      return true;
    });
  }

  async function putExtending(
    input: ThreadCheckpoint,
    base: CheckpointKey,
  ): Promise<"stored" | "exists" | "missing"> {
    const { head, tail } = checkCheckpoint(input);
    const { threadId, planVersion, logLength, format } = head;
    checkBaseKey(threadId, base);
    const body = checkpointTextColumn(head.body);
    const continuation = continuationColumn(tail);
    return pgTransaction(pool, async (client) => {
      // Puts to the thread wait for this lock, so neither the key nor the base changes under this transaction.
      await client.query(sql.lock, [`context-ledger:${s}:checkpoints`, threadId]);
      const existing = await client.query(sql.exists, [threadId, planVersion, logLength]);
      if ((existing.rowCount ?? 0) > 0) return "exists";
      const values = [threadId, planVersion, logLength, format, body, continuation];
      const { rowCount } = await client.query(sql.insertExtending, [
        ...values,
        base.planVersion,
        base.logLength,
      ]);
      if (rowCount !== 1) return "missing";
      await client.query(sql.trim, [threadId, CHECKPOINTS_KEPT]);
      return "stored";
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

  async function tail(threadId: string, planVersion: number, logLength: number): Promise<string | undefined> {
    checkLatestArguments(threadId, planVersion, logLength, "logLength");
    const { rows } = await pool.query(sql.tail, [threadId, planVersion, logLength]);
    const row = rows[0];
    if (row === undefined) return undefined;
    return checkpointTailFromColumn(threadId, planVersion, logLength, pgColumn(row, "tail"));
  }

  return Object.freeze({
    put: (checkpoint: ThreadCheckpoint) =>
      guarded("PostgreSQL", "checkpoint put", checkpoint?.threadId, () => put(checkpoint)),
    putExtending: (checkpoint: ThreadCheckpoint, base: CheckpointKey) =>
      guarded("PostgreSQL", "checkpoint put", checkpoint?.threadId, () => putExtending(checkpoint, base)),
    latest: (threadId: string, planVersion: number, maxLogLength: number) =>
      guarded("PostgreSQL", "checkpoint latest", threadId, () => latest(threadId, planVersion, maxLogLength)),
    tail: (threadId: string, planVersion: number, logLength: number) =>
      guarded("PostgreSQL", "checkpoint tail", threadId, () => tail(threadId, planVersion, logLength)),
  });
}
