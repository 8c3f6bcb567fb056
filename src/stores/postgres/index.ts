// The PostgreSQL backend (`context-ledger/postgres`): `pg` is loaded only by code that imports this entry.

export type { PgClient, PgPool, PgQueryable, PgResult } from "./postgres-driver.js";
export type { PostgresMigration } from "./postgres-migrations.js";
export { migratePostgres, POSTGRES_MIGRATIONS } from "./postgres-migrations.js";
export type { PostgresStoresOptions } from "./postgres-stores.js";
export { DEFAULT_POSTGRES_SCHEMA, openPostgresStores } from "./postgres-stores.js";
