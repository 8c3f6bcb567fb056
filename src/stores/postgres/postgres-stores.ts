import pg from "pg";
import { ValidationError } from "../../errors/ledger-error.js";
import { guarded } from "../store-errors.js";
import type { Clock, Stores } from "../stores.js";
import { createPostgresArtifactStore } from "./postgres-artifact-store.js";
import { createPostgresCheckpointStore } from "./postgres-checkpoint-store.js";
import { type PgPool, quoteSchema } from "./postgres-driver.js";
import { createPostgresLogStore } from "./postgres-log-store.js";
import { migratePostgres } from "./postgres-migrations.js";
import { createPostgresModelCallStore } from "./postgres-model-call-store.js";
import { createPostgresPlanStore } from "./postgres-plan-store.js";
import { createPostgresSummaryCache } from "./postgres-summary-cache.js";

/** Options of `openPostgresStores`: a connection string (the stores own their pool) or your own pool. */
export type PostgresStoresOptions = (
  | { readonly connectionString: string; readonly maxConnections?: number }
  | { readonly pool: PgPool }
) & {
  /** The schema holding the tables (default `context_ledger`), created when missing. */
  readonly schema?: string;
  /** The clock for artifact TTLs (default `Date.now`). */
  readonly now?: Clock;
};

/** The schema the tables live in unless told otherwise. */
export const DEFAULT_POSTGRES_SCHEMA = "context_ledger";

/**
 * Connects to PostgreSQL, migrates the schema (safely when many workers start at once) and returns every store.
 * With a connection string the stores own their pool and `close` ends it; a pool you pass stays yours.
 *
 * @example
 * const stores = await openPostgresStores({ connectionString: process.env.DATABASE_URL! });
 * await stores.plans.commit(plan, plan.version - 1);
 * await stores.close();
 */
export async function openPostgresStores(options: PostgresStoresOptions): Promise<Stores> {
  const schema = options.schema ?? DEFAULT_POSTGRES_SCHEMA;
  const s = quoteSchema(schema);
  const owned = "pool" in options ? undefined : ownPool(options.connectionString, options.maxConnections);
  const pool = "pool" in options ? options.pool : owned!;
  try {
    await guarded("PostgreSQL", "schema migration", undefined, () => migratePostgres(pool, schema));
  } catch (error) {
    await owned?.end().catch(() => {});
    throw error;
  }
  let closed = false;
  return Object.freeze({
    log: createPostgresLogStore(pool, s),
    plans: createPostgresPlanStore(pool, s),
    artifacts: createPostgresArtifactStore(pool, s, options.now),
    summaries: createPostgresSummaryCache(pool, s),
    calls: createPostgresModelCallStore(pool, s),
    checkpoints: createPostgresCheckpointStore(pool, s),
    close: async () => {
      if (closed || owned === undefined) return;
      closed = true;
      await owned.end();
    },
  });
}

function ownPool(connectionString: string, max: number | undefined): pg.Pool {
  if (typeof connectionString !== "string" || connectionString.length === 0) {
    throw new ValidationError("connectionString must be a non-empty string", { field: "connectionString" });
  }
  // No JIT: these are short index lookups, and the planner's cost estimate for one over a long thread (a turn
  // reading a few hundred scattered rows) can pass jit_above_cost; compiling then costs more than the query.
  const pool = new pg.Pool({ connectionString, max: max ?? 10, options: "-c jit=off" });
  // An idle client losing its connection must not crash the process; the next query reports the failure.
  pool.on("error", () => {});
  return pool;
}
