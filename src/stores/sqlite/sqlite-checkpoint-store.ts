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
import { column, immediateTransaction, intColumn, type SqliteDatabase } from "./sqlite-driver.js";

// Deletes a thread's checkpoints older than its @kept-th newest (by plan version, then log length); with fewer
// than @kept the subquery finds no row, the comparison is NULL and nothing is deleted.
const TRIM = `DELETE FROM checkpoints
  WHERE thread_id = @thread AND (plan_version, log_length) < (
    SELECT plan_version, log_length FROM checkpoints WHERE thread_id = @thread
    ORDER BY plan_version DESC, log_length DESC LIMIT 1 OFFSET @kept - 1)`;

/**
 * A `CheckpointStore` on SQLite: a put inserts its row (a key already stored is left alone) and trims the
 * thread to `CHECKPOINTS_KEPT` inside one `BEGIN IMMEDIATE` transaction, so writers in other processes never
 * see more or fewer than that. Body and tail are encoded before the lock is taken, since they may be megabytes;
 * the tail is the row's last column, so `latest`, reading the columns before it, never reads its pages.
 *
 * @example
 * const checkpoints = createSqliteCheckpointStore(db); // db already migrated
 * await checkpoints.latest("t1", 3, 120);
 */
export function createSqliteCheckpointStore(db: SqliteDatabase): CheckpointStore {
  const sql = {
    insert: db.prepare(
      `INSERT INTO checkpoints (thread_id, plan_version, log_length, format, body, tail)
       VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id, plan_version, log_length) DO NOTHING`,
    ),
    // The joined tail's column: the base's column less its closing quote, then the continuation's (see
    // `continuationColumn`). SQLite copies the base's tail inside the database; it never reaches JavaScript.
    insertExtending: db.prepare(
      `INSERT INTO checkpoints (thread_id, plan_version, log_length, format, body, tail)
       SELECT ?, ?, ?, ?, ?, substr(tail, 1, length(tail) - 1) || ? FROM checkpoints
       WHERE thread_id = ? AND plan_version = ? AND log_length = ?`,
    ),
    exists: db.prepare(
      "SELECT 1 AS found FROM checkpoints WHERE thread_id = ? AND plan_version = ? AND log_length = ?",
    ),
    trim: db.prepare(TRIM),
    latest: db.prepare(
      `SELECT log_length AS n, format, body FROM checkpoints
       WHERE thread_id = ? AND plan_version = ? AND log_length <= ? ORDER BY log_length DESC LIMIT 1`,
    ),
    tail: db.prepare(
      "SELECT tail FROM checkpoints WHERE thread_id = ? AND plan_version = ? AND log_length = ?",
    ),
  };

  function put(input: ThreadCheckpoint): boolean {
    const { head, tail } = checkCheckpoint(input);
    const { threadId, planVersion, logLength, format } = head;
    const body = checkpointTextColumn(head.body);
    const tailColumn = checkpointTextColumn(tail);
    return immediateTransaction(db, () => {
      const { changes } = sql.insert.run(threadId, planVersion, logLength, format, body, tailColumn);
      if (Number(changes) !== 1) return false;
      sql.trim.run({ thread: threadId, kept: CHECKPOINTS_KEPT });
      return true;
    });
  }

  function putExtending(input: ThreadCheckpoint, base: CheckpointKey): "stored" | "exists" | "missing" {
    const { head, tail } = checkCheckpoint(input);
    const { threadId, planVersion, logLength, format } = head;
    checkBaseKey(threadId, base);
    const body = checkpointTextColumn(head.body);
    const continuation = continuationColumn(tail);
    return immediateTransaction(db, () => {
      if (sql.exists.get(threadId, planVersion, logLength) !== undefined) return "exists";
      const { changes } = sql.insertExtending.run(
        ...[threadId, planVersion, logLength, format, body, continuation],
        ...[threadId, base.planVersion, base.logLength],
      );
      if (Number(changes) !== 1) return "missing";
      sql.trim.run({ thread: threadId, kept: CHECKPOINTS_KEPT });
      return "stored";
    });
  }

  function latest(threadId: string, planVersion: number, maxLogLength: number): ThreadCheckpoint | undefined {
    checkLatestArguments(threadId, planVersion, maxLogLength);
    const row = sql.latest.get(threadId, planVersion, maxLogLength);
    if (row === undefined) return undefined;
    return checkpointFromRow(
      threadId,
      planVersion,
      intColumn(row, "n"),
      column(row, "format"),
      column(row, "body"),
    );
  }

  function tail(threadId: string, planVersion: number, logLength: number): string | undefined {
    checkLatestArguments(threadId, planVersion, logLength, "logLength");
    const row = sql.tail.get(threadId, planVersion, logLength);
    if (row === undefined) return undefined;
    return checkpointTailFromColumn(threadId, planVersion, logLength, column(row, "tail"));
  }

  return Object.freeze({
    put: (checkpoint: ThreadCheckpoint) =>
      guarded("SQLite", "checkpoint put", checkpoint?.threadId, () => put(checkpoint)),
    putExtending: (checkpoint: ThreadCheckpoint, base: CheckpointKey) =>
      guarded("SQLite", "checkpoint put", checkpoint?.threadId, () => putExtending(checkpoint, base)),
    latest: (threadId: string, planVersion: number, maxLogLength: number) =>
      guarded("SQLite", "checkpoint latest", threadId, () => latest(threadId, planVersion, maxLogLength)),
    tail: (threadId: string, planVersion: number, logLength: number) =>
      guarded("SQLite", "checkpoint tail", threadId, () => tail(threadId, planVersion, logLength)),
  });
}
