import { ValidationError } from "../../errors/ledger-error.js";

/**
 * The part of a synchronous SQLite driver the SQLite backend uses. better-sqlite3's `Database` fits it, and so
 * does `node:sqlite`'s `DatabaseSync`; nothing else of the driver is touched.
 */

/** A prepared statement. */
export interface SqliteStatement {
  run(...params: ReadonlyArray<unknown>): { readonly changes: number | bigint };
  get(...params: ReadonlyArray<unknown>): unknown;
  all(...params: ReadonlyArray<unknown>): unknown[];
}

/** An open database connection. */
export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): unknown;
  close(): unknown;
}

/**
 * Runs `work` in a `BEGIN IMMEDIATE` transaction: the write lock is taken up front, so concurrent writers (other
 * processes included) queue on `busy_timeout` instead of failing half-way; any throw rolls everything back.
 */
export function immediateTransaction<T>(db: SqliteDatabase, work: () => T): T {
  db.exec("BEGIN IMMEDIATE");
  let result: T;
  try {
    result = work();
  } catch (error) {
    try {
      db.exec("ROLLBACK");
    } catch {
      // SQLite may already have rolled back (e.g. after an I/O error); the original error is the one to report.
    }
    throw error;
  }
  db.exec("COMMIT");
  return result;
}

/** A non-negative integer column of a row, or a thrown error naming it (rows come from outside). */
export function intColumn(row: unknown, column: string): number {
  const value = (row as Record<string, unknown> | undefined)?.[column];
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new ValidationError(
      `row read back from SQLite holds ${String(value)}, not a non-negative integer`,
      {
        field: column,
      },
    );
  }
  return value;
}
