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
import {
  all,
  column,
  run,
  runAll,
  type SqlDialect,
  type SqlStatement,
  storeOperations,
} from "./sql-dialect.js";

/** A checkpoint's key and columns as the statements bind them (body and tail already JSON columns). */
export interface CheckpointColumns {
  readonly threadId: string;
  readonly planVersion: number;
  readonly logLength: number;
  readonly format: string;
  readonly body: string;
}

/** A dialect's statements on the `checkpoints` table. */
export interface CheckpointSql {
  /**
   * Statements that serialize puts to one thread for the rest of a write transaction: none where the
   * transaction holds the database's write lock (SQLite), else a lock that is not the thread's row lock, so a
   * checkpoint of megabytes never holds up appends or commits.
   */
  lock(threadId: string): ReadonlyArray<SqlStatement>;
  /** Inserts a checkpoint; a key already stored is left alone (no row changed). */
  insert(row: CheckpointColumns, tail: string): SqlStatement;
  /**
   * Inserts a checkpoint whose tail column is the base's column less its closing quote, then `continuation`
   * (see `continuationColumn`), copied inside the database; no row changed when the base is missing.
   */
  insertExtending(row: CheckpointColumns, continuation: string, base: CheckpointKey): SqlStatement;
  /** A row when the key is stored. */
  exists(threadId: string, key: CheckpointKey): SqlStatement;
  /** Deletes the thread's checkpoints older than its `kept`-th newest (by plan version, then log length). */
  trim(threadId: string, kept: number): SqlStatement;
  /** The newest checkpoint (`log_length`, `format`, `body`) at a plan version and at most a log length. */
  latest(threadId: string, planVersion: number, maxLogLength: number): SqlStatement;
  /** The `tail` column of a key. */
  tail(threadId: string, key: CheckpointKey): SqlStatement;
}

/**
 * The `CheckpointStore` on a SQL database: a put inserts its row (a key already stored is left alone) and trims
 * the thread to `CHECKPOINTS_KEPT` in one write transaction, after the dialect's lock on the thread's puts, so
 * other writers never see more or fewer than that. Body and tail are encoded before the transaction begins,
 * since they may be megabytes; `latest` never reads a tail.
 *
 * @example
 * const checkpoints = createSqlCheckpointStore(sqliteDialect(db), sqliteCheckpointSql); // db already migrated
 * await checkpoints.latest("t1", 3, 120);
 */
export function createSqlCheckpointStore(dialect: SqlDialect, sql: CheckpointSql): CheckpointStore {
  const op = storeOperations(dialect);
  const columnsOf = (head: ThreadCheckpoint): CheckpointColumns => ({
    threadId: head.threadId,
    planVersion: head.planVersion,
    logLength: head.logLength,
    format: head.format,
    body: checkpointTextColumn(head.body),
  });

  async function put(input: ThreadCheckpoint): Promise<boolean> {
    const { head, tail } = checkCheckpoint(input);
    const row = columnsOf(head);
    const tailColumn = checkpointTextColumn(tail);
    return dialect.transaction(function* () {
      yield* runAll(sql.lock(row.threadId));
      if ((yield* run(sql.insert(row, tailColumn))) !== 1) return false;
      yield* run(sql.trim(row.threadId, CHECKPOINTS_KEPT));
      return true;
    });
  }

  async function putExtending(
    input: ThreadCheckpoint,
    base: CheckpointKey,
  ): Promise<"stored" | "exists" | "missing"> {
    const { head, tail } = checkCheckpoint(input);
    checkBaseKey(head.threadId, base);
    const row = columnsOf(head);
    const continuation = continuationColumn(tail);
    return dialect.transaction(function* () {
      // Puts to the thread wait for this lock, so neither the key nor the base changes under this transaction.
      yield* runAll(sql.lock(row.threadId));
      if ((yield* all(sql.exists(row.threadId, head))).length > 0) return "exists" as const;
      if ((yield* run(sql.insertExtending(row, continuation, base))) !== 1) return "missing" as const;
      yield* run(sql.trim(row.threadId, CHECKPOINTS_KEPT));
      return "stored" as const;
    });
  }

  async function latest(threadId: string, planVersion: number, maxLogLength: number) {
    checkLatestArguments(threadId, planVersion, maxLogLength);
    const [row] = await dialect.all(sql.latest(threadId, planVersion, maxLogLength));
    if (row === undefined) return undefined;
    const logLength = dialect.int(row, "log_length");
    return checkpointFromRow(threadId, planVersion, logLength, column(row, "format"), column(row, "body"));
  }

  async function tail(threadId: string, planVersion: number, logLength: number) {
    checkLatestArguments(threadId, planVersion, logLength, "logLength");
    const [row] = await dialect.all(sql.tail(threadId, { planVersion, logLength }));
    if (row === undefined) return undefined;
    return checkpointTailFromColumn(threadId, planVersion, logLength, column(row, "tail"));
  }

  return Object.freeze({
    put: (checkpoint: ThreadCheckpoint) => op("checkpoint put", checkpoint?.threadId, () => put(checkpoint)),
    putExtending: (checkpoint: ThreadCheckpoint, base: CheckpointKey) =>
      op("checkpoint put", checkpoint?.threadId, () => putExtending(checkpoint, base)),
    latest: (threadId: string, planVersion: number, maxLogLength: number) =>
      op("checkpoint latest", threadId, () => latest(threadId, planVersion, maxLogLength)),
    tail: (threadId: string, planVersion: number, logLength: number) =>
      op("checkpoint tail", threadId, () => tail(threadId, planVersion, logLength)),
  });
}
