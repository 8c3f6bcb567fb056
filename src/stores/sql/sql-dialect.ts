import { guarded } from "../store-errors.js";

/**
 * The seam between the SQL stores and a database. A store is written once against `SqlDialect`; a dialect
 * brings the mechanics only: how statements run (synchronously inside for SQLite, over a pool for PostgreSQL),
 * what a write transaction locks, how integer columns arrive, and each store's SQL text. As in kysely, no store
 * logic (argument checks, conflicts, row validation) lives in a dialect.
 */

/** One statement: its text, with placeholders in the dialect's style, and the values bound to them in order. */
export interface SqlStatement {
  readonly text: string;
  readonly values: ReadonlyArray<unknown>;
}

/** A statement from its text and values. */
export const statement = (text: string, values: ReadonlyArray<unknown> = []): SqlStatement => ({
  text,
  values,
});

/** Runs statements on the database itself, outside a transaction. */
export interface SqlExecutor {
  /** The rows a query returns, as the driver hands them out (to be decoded with `column` and `int`). */
  all(statement: SqlStatement): Promise<ReadonlyArray<unknown>>;
  /** Runs a statement; resolves to the number of rows it inserted, updated or deleted. */
  run(statement: SqlStatement): Promise<number>;
}

/** A statement a transaction body hands to its dialect: the rows it returns, or the rows it changed. */
export type SqlRequest =
  | { readonly kind: "all"; readonly statement: SqlStatement }
  | { readonly kind: "run"; readonly statement: SqlStatement };

/**
 * A transaction body: a generator that yields its statements (`yield* all(…)`, `yield* run(…)`) and returns
 * its result. The dialect runs each statement and resumes the body with its outcome: SQLite synchronously from
 * `BEGIN` to `COMMIT`, so the body never gives the event loop away while it holds the database's write lock (a
 * second connection in the same process would otherwise wait on that lock with the loop blocked), PostgreSQL
 * awaiting each statement on the transaction's client.
 */
export type SqlWork<T> = Generator<SqlRequest, T, unknown>;

/** Within a transaction body: the rows a query returns. */
export function* all(statement: SqlStatement): SqlWork<ReadonlyArray<unknown>> {
  return (yield { kind: "all", statement }) as ReadonlyArray<unknown>;
}

/** Within a transaction body: runs a statement, returning the number of rows it changed. */
export function* run(statement: SqlStatement): SqlWork<number> {
  return (yield { kind: "run", statement }) as number;
}

/** Within a transaction body: runs statements in order. */
export function* runAll(statements: ReadonlyArray<SqlStatement>): SqlWork<void> {
  for (const s of statements) yield { kind: "run", statement: s };
}

/**
 * A database as the SQL stores see it: an executor, write transactions and the decoding of integer columns.
 *
 * @example
 * const dialect = sqliteDialect(db); // or postgresDialect(pool)
 * const n = await dialect.transaction(function* () {
 *   return yield* run(statement("DELETE FROM t WHERE k = ?", [k]));
 * });
 */
export interface SqlDialect extends SqlExecutor {
  /** The backend's name in error messages (`SQLite`, `PostgreSQL`). */
  readonly name: string;
  /**
   * Runs `work` in a write transaction and commits, or rolls back on any throw. SQLite takes the database's write
   * lock up front (`BEGIN IMMEDIATE`); PostgreSQL runs READ COMMITTED, so the stores take row or advisory locks
   * with their own statements.
   */
  transaction<T>(work: () => SqlWork<T>): Promise<T>;
  /** A non-negative integer column of a row, or a thrown `ValidationError` naming it (rows come from outside). */
  int(row: unknown, column: string): number;
}

/** A column of a row as `unknown`, for a schema to validate. */
export function column(row: unknown, name: string): unknown {
  return (row as Record<string, unknown> | undefined)?.[name];
}

/** Whether a column is SQL NULL (or absent). */
export function isNull(row: unknown, name: string): boolean {
  return column(row, name) == null;
}

/** Runs store operations through `guarded`, naming the dialect's backend in `StoreUnavailableError`s. */
export function storeOperations(dialect: SqlDialect) {
  return <T>(operation: string, threadId: string | undefined, run: () => Promise<T>): Promise<T> =>
    guarded(dialect.name, operation, threadId, run);
}
