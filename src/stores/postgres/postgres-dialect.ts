import type { SqlDialect, SqlStatement, SqlWork } from "../sql/sql-dialect.js";
import { type PgPool, type PgQueryable, pgInt, pgTransaction } from "./postgres-driver.js";

/** Drives a transaction body on one client, awaiting each statement it yields (the dialect's transactions). */
export async function drivePg<T>(client: PgQueryable, work: SqlWork<T>): Promise<T> {
  let step = work.next();
  while (!step.done) {
    const { kind, statement } = step.value;
    const result = await client.query(statement.text, statement.values);
    step = work.next(kind === "all" ? result.rows : (result.rowCount ?? 0));
  }
  return step.value;
}

/**
 * The PostgreSQL `SqlDialect` on a pool: statements outside a transaction run on any pooled connection, and a
 * transaction runs on one checked-out client at READ COMMITTED (`pgTransaction`), a client whose rollback failed
 * being discarded. Locks are the stores' own statements (a thread's row, an advisory lock). `bigint` columns
 * arrive as strings and are decoded by `int`.
 *
 * @example
 * const dialect = postgresDialect(pool); // schema already migrated
 * await dialect.all(statement('SELECT log_length FROM "context_ledger".threads WHERE thread_id = $1', ["t1"]));
 */
export function postgresDialect(pool: PgPool): SqlDialect {
  return Object.freeze({
    name: "PostgreSQL",
    all: async (s: SqlStatement) => (await pool.query(s.text, s.values)).rows,
    run: async (s: SqlStatement) => (await pool.query(s.text, s.values)).rowCount ?? 0,
    transaction: <T>(work: () => SqlWork<T>) => pgTransaction(pool, (client) => drivePg(client, work())),
    int: pgInt,
  });
}
