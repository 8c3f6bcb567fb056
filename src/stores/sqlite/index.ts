// The SQLite backend (`context-ledger/sqlite`): better-sqlite3 is loaded only by code that imports this entry.

export type { SqliteDatabase, SqliteStatement } from "./sqlite-driver.js";
export type { SqliteMigration } from "./sqlite-migrations.js";
export { migrateSqlite, SQLITE_MIGRATIONS } from "./sqlite-migrations.js";
export type { SqliteStoresOptions } from "./sqlite-stores.js";
export { createSqliteStores, DEFAULT_SQLITE_PATH, openSqliteStores } from "./sqlite-stores.js";
