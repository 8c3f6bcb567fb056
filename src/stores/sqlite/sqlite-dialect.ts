import type { SqlDialect, SqlRequest, SqlStatement, SqlWork } from "../sql/sql-dialect.js";
import {
  immediateTransaction,
  intColumn,
  type SqliteDatabase,
  type SqliteStatement,
} from "./sqlite-driver.js";

/**
 * The SQLite `SqlDialect` on a synchronous connection: every statement runs synchronously inside (prepared once
 * per text and reused), so its promise is settled when it is returned. A transaction is `BEGIN IMMEDIATE`,
 * taking the write lock up front, and its body runs synchronously to `COMMIT`: writers in other processes queue
 * on `busy_timeout`, and nothing else in this process runs while the lock is held (a second connection to the
 * file waiting on the lock would block the event loop that the holder needs to finish).
 *
 * @example
 * const dialect = sqliteDialect(db); // db already migrated
 * await dialect.all(statement("SELECT log_length FROM threads WHERE thread_id = ?", ["t1"]));
 */
export function sqliteDialect(db: SqliteDatabase): SqlDialect {
  const statements = sqliteStatements(db);
  return Object.freeze({
    name: "SQLite",
    all: async (s: SqlStatement) => statements.all(s),
    run: async (s: SqlStatement) => statements.run(s),
    transaction: async <T>(work: () => SqlWork<T>) =>
      immediateTransaction(db, () => statements.drive(work())),
    int: intColumn,
  });
}

/** Statements on a synchronous connection, each text prepared once and reused. */
export interface SqliteStatements {
  all(statement: SqlStatement): unknown[];
  run(statement: SqlStatement): number;
  /** Drives a transaction body to its end, running each statement it yields (in the caller's transaction). */
  drive<T>(work: SqlWork<T>): T;
}

/** Runs statements and transaction bodies on `db` synchronously (for the dialect). */
export function sqliteStatements(db: SqliteDatabase): SqliteStatements {
  const prepared = new Map<string, SqliteStatement>();
  const prepare = (text: string): SqliteStatement => {
    let found = prepared.get(text);
    if (found === undefined) {
      found = db.prepare(text);
      prepared.set(text, found);
    }
    return found;
  };
  const all = (s: SqlStatement): unknown[] => prepare(s.text).all(...s.values);
  const run = (s: SqlStatement): number => Number(prepare(s.text).run(...s.values).changes);
  const perform = (request: SqlRequest): unknown =>
    request.kind === "all" ? all(request.statement) : run(request.statement);
  return {
    all,
    run,
    drive<T>(work: SqlWork<T>): T {
      let step = work.next();
      while (!step.done) step = work.next(perform(step.value));
      return step.value;
    },
  };
}
