import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import { StoreUnavailableError } from "../../errors/ledger-error.js";
import { createSqlStores, type SqlStatements } from "../sql/sql-stores.js";
import type { Clock, Stores } from "../stores.js";
import { sqliteArtifactSql } from "./sqlite-artifact-sql.js";
import { sqliteCheckpointSql } from "./sqlite-checkpoint-sql.js";
import { sqliteDialect } from "./sqlite-dialect.js";
import type { SqliteDatabase } from "./sqlite-driver.js";
import { sqliteLogSql } from "./sqlite-log-sql.js";
import { migrateSqlite } from "./sqlite-migrations.js";
import { sqliteModelCallSql } from "./sqlite-model-call-sql.js";
import { sqlitePlanSql } from "./sqlite-plan-sql.js";
import { sqliteSummarySql } from "./sqlite-summary-sql.js";

const SQLITE_STATEMENTS: SqlStatements = Object.freeze({
  log: sqliteLogSql,
  plans: sqlitePlanSql,
  artifacts: sqliteArtifactSql,
  summaries: sqliteSummarySql,
  calls: sqliteModelCallSql,
  checkpoints: sqliteCheckpointSql,
});

/** Where the CLI and `openSqliteStores` keep the database by default, relative to the working directory. */
export const DEFAULT_SQLITE_PATH = "./.context-ledger/ledger.db";

/** Options of `openSqliteStores`. */
export interface SqliteStoresOptions {
  /** Database file (default `./.context-ledger/ledger.db`, folder created); `:memory:` for a private one. */
  readonly path?: string;
  /** How long a writer waits for another process's lock before failing (default 10,000 ms). */
  readonly busyTimeoutMs?: number;
  /**
   * `full` (default) syncs the WAL on every commit, so an acknowledged write survives power loss too; `normal`
   * survives a killed process but may lose the last commits on power loss, and is faster.
   */
  readonly synchronous?: "full" | "normal";
  /** The clock for artifact TTLs (default `Date.now`). */
  readonly now?: Clock;
}

/**
 * Opens (creating when missing) a SQLite database with better-sqlite3 in WAL mode, migrates its schema and
 * returns every store on it. Several processes may open the same file: writes serialize on SQLite's lock.
 *
 * @example
 * const stores = openSqliteStores(); // ./.context-ledger/ledger.db
 * await stores.log.append("t1", 0, entries);
 * await stores.close();
 */
export function openSqliteStores(options: SqliteStoresOptions = {}): Stores {
  const path = options.path ?? DEFAULT_SQLITE_PATH;
  let db: Database.Database;
  try {
    if (path !== ":memory:") mkdirSync(dirname(resolve(path)), { recursive: true });
    db = new Database(path);
  } catch (cause) {
    throw new StoreUnavailableError(
      `cannot open SQLite database ${path}: ${(cause as Error).message}`,
      {},
      { cause },
    );
  }
  try {
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 10_000))}`);
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${options.synchronous === "normal" ? "NORMAL" : "FULL"}`);
    return createSqliteStores(db, options.now === undefined ? {} : { now: options.now });
  } catch (cause) {
    db.close();
    if (cause instanceof StoreUnavailableError) throw cause;
    throw new StoreUnavailableError(
      `cannot prepare SQLite database ${path}: ${(cause as Error).message}`,
      {},
      { cause },
    );
  }
}

/**
 * Builds every store on an already open connection (any driver with the `SqliteDatabase` shape), migrating its
 * schema first; `close` closes the connection.
 */
export function createSqliteStores(db: SqliteDatabase, options: { readonly now?: Clock } = {}): Stores {
  migrateSqlite(db);
  return createSqlStores(sqliteDialect(db), SQLITE_STATEMENTS, {
    ...(options.now === undefined ? {} : { now: options.now }),
    close: async () => {
      db.close();
    },
  });
}
