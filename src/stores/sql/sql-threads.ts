import { all, column, runAll, type SqlDialect, type SqlStatement, type SqlWork } from "./sql-dialect.js";

/**
 * A dialect's statements on the `threads` table, which holds each thread's log length and plan version (the
 * log store's and the plan store's versions) and its tenant (NULL until its first append claims it). Rows read
 * carry `log_length`, `plan_version` and `tenant`.
 */
export interface ThreadSql {
  /**
   * Statements that lock the thread for the rest of a write transaction, run before `locked` reads its row:
   * none where the transaction already holds the database's write lock (SQLite), else the row's lock.
   */
  lock(threadId: string): ReadonlyArray<SqlStatement>;
  /** The thread's row inside a write transaction, after `lock`. */
  locked(threadId: string): SqlStatement;
  /** The thread's row outside a transaction. */
  row(threadId: string): SqlStatement;
  /** Sets the log length of a thread locked in this transaction, and its tenant when it has none yet. */
  setLogLength(threadId: string, length: number, tenant: string): SqlStatement;
  /** Sets the plan version of a thread locked in this transaction. */
  setPlanVersion(threadId: string, version: number): SqlStatement;
  /** Ids (`thread_id`) of the tenant's threads with at least one message. */
  withMessages(tenant: string): SqlStatement;
}

/**
 * A thread's versions: its log length and its plan version (0 and 0 for a thread without a row), and its tenant
 * (undefined until its first append).
 */
export interface ThreadVersions {
  readonly logLength: number;
  readonly planVersion: number;
  readonly tenant: string | undefined;
}

function versionsOf(dialect: SqlDialect, row: unknown): ThreadVersions {
  if (row === undefined) return { logLength: 0, planVersion: 0, tenant: undefined };
  const tenant = column(row, "tenant");
  return {
    logLength: dialect.int(row, "log_length"),
    planVersion: dialect.int(row, "plan_version"),
    tenant: tenant === null || tenant === undefined ? undefined : String(tenant),
  };
}

/**
 * Locks a thread inside a write transaction and returns its versions, so writers to one thread queue and each
 * sees the length and version its predecessor committed.
 */
export function* lockThread(dialect: SqlDialect, sql: ThreadSql, threadId: string): SqlWork<ThreadVersions> {
  yield* runAll(sql.lock(threadId));
  const [row] = yield* all(sql.locked(threadId));
  return versionsOf(dialect, row);
}

/** A thread's versions, read outside a transaction. */
export async function threadVersions(dialect: SqlDialect, sql: ThreadSql, threadId: string) {
  const [row] = await dialect.all(sql.row(threadId));
  return versionsOf(dialect, row);
}
