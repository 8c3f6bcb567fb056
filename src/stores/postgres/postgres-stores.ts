import type pg from "pg";
import { ValidationError } from "../../errors/ledger-error.js";
import { requirePeer } from "../../errors/optional-peer.js";
import type { JobQueueSettings } from "../job-queue.js";
import { createSqlStores, type SqlStatements } from "../sql/sql-stores.js";
import { guarded } from "../store-errors.js";
import type { Clock, Stores } from "../stores.js";
import { postgresArtifactSql } from "./postgres-artifact-sql.js";
import { postgresCheckpointSql } from "./postgres-checkpoint-sql.js";
import { postgresDialect } from "./postgres-dialect.js";
import { type PgPool, quoteSchema } from "./postgres-driver.js";
import { createPostgresJobQueue, jobQueueNameFor } from "./postgres-job-queue.js";
import { postgresLogSql } from "./postgres-log-sql.js";
import { migratePostgres } from "./postgres-migrations.js";
import { postgresModelCallSql } from "./postgres-model-call-sql.js";
import { postgresPlanSql } from "./postgres-plan-sql.js";
import { postgresSummarySql } from "./postgres-summary-sql.js";

/** Options of `openPostgresStores`: a connection string (the stores own their pool) or your own pool. */
export type PostgresStoresOptions = (
  | { readonly connectionString: string; readonly maxConnections?: number }
  | { readonly pool: PgPool }
) & {
  /** The schema holding the tables (default `context_ledger`), created when missing. */
  readonly schema?: string;
  /**
   * The schema of the durable job queue (pg-boss's tables; default: the stores' schema with `_jobs` appended),
   * created when an engine first queues a job (docs/decisions/0020).
   */
  readonly jobSchema?: string;
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
  const jobs = options.jobSchema ?? `${schema}_jobs`;
  quoteSchema(jobs);
  return createSqlStores(postgresDialect(pool), postgresStatements(s), {
    ...(options.now === undefined ? {} : { now: options.now }),
    close: async () => {
      await owned?.end();
    },
    // A queue per tenant: a worker acts for one tenant and takes only its threads' jobs.
    jobQueueFor: (tenant: string) => (settings: JobQueueSettings, onError?: (error: unknown) => void) =>
      createPostgresJobQueue(pool, jobs, settings, onError, jobQueueNameFor(tenant)),
  });
}

/** PostgreSQL's statements for every store, on the tables of schema `s` (quoted). */
function postgresStatements(s: string): SqlStatements {
  return Object.freeze({
    log: postgresLogSql(s),
    plans: postgresPlanSql(s),
    artifacts: postgresArtifactSql(s),
    summaries: postgresSummarySql(s),
    calls: postgresModelCallSql(s),
    checkpoints: postgresCheckpointSql(s),
  });
}

function ownPool(connectionString: string, max: number | undefined): pg.Pool {
  if (typeof connectionString !== "string" || connectionString.length === 0) {
    throw new ValidationError("connectionString must be a non-empty string", { field: "connectionString" });
  }
  // No JIT: these are short index lookups, and the planner's cost estimate for one over a long thread (a turn
  // reading a few hundred scattered rows) can pass jit_above_cost; compiling then costs more than the query.
  const { Pool } = requirePeer<typeof pg>("pg", "context-ledger/postgres");
  const pool = new Pool({ connectionString, max: max ?? 10, options: "-c jit=off" });
  // An idle client losing its connection must not crash the process; the next query reports the failure.
  pool.on("error", () => {});
  return pool;
}
