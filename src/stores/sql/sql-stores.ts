import type { JobQueueFactory } from "../job-queue.js";
import type { Clock, Stores } from "../stores.js";
import { checkTenant, DEFAULT_TENANT, guardThreadStores } from "../thread-tenancy.js";
import { type ArtifactSql, createSqlArtifactStore } from "./sql-artifact-store.js";
import { type CheckpointSql, createSqlCheckpointStore } from "./sql-checkpoint-store.js";
import type { SqlDialect } from "./sql-dialect.js";
import { createSqlLogStore, type LogSql } from "./sql-log-store.js";
import { createSqlModelCallStore, type ModelCallSql } from "./sql-model-call-store.js";
import { createSqlPlanStore, type PlanSql } from "./sql-plan-store.js";
import { createSqlSummaryCache, type SummarySql } from "./sql-summary-cache.js";

/** A dialect's SQL text for every store. */
export interface SqlStatements {
  readonly log: LogSql;
  readonly plans: PlanSql;
  readonly artifacts: ArtifactSql;
  readonly summaries: SummarySql;
  readonly calls: ModelCallSql;
  readonly checkpoints: CheckpointSql;
}

/**
 * Every store on one dialect (one connection or pool, already migrated) and its statements; `close` releases
 * what the backend opened (at most once).
 *
 * @example
 * const stores = createSqlStores(sqliteDialect(db), SQLITE_STATEMENTS, { close: async () => db.close() });
 */
export function createSqlStores(
  dialect: SqlDialect,
  sql: SqlStatements,
  options: {
    readonly now?: Clock;
    readonly close: () => Promise<void>;
    /** The backend's durable job queue of a tenant's jobs (`Stores.jobQueue` of that tenant's stores). */
    readonly jobQueueFor?: (tenant: string) => JobQueueFactory;
  },
): Stores {
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await options.close();
  };
  const inner = {
    plans: createSqlPlanStore(dialect, sql.plans, createSqlLogStore(dialect, sql.log, null)),
    calls: createSqlModelCallStore(dialect, sql.calls),
    checkpoints: createSqlCheckpointStore(dialect, sql.checkpoints),
  };
  const shared = {
    artifacts: createSqlArtifactStore(dialect, sql.artifacts, options.now),
    summaries: createSqlSummaryCache(dialect, sql.summaries),
  };
  // One set of stores per tenant over the same connection: the log filters by tenant in its queries, the
  // thread stores check the thread's tenant first, artifacts are keyed by tenant already.
  const bind = (tenant: string, bound = true): Stores => {
    const log = createSqlLogStore(dialect, sql.log, checkTenant(tenant));
    const access = (threadId: string) => log.access!(threadId);
    return Object.freeze({
      log,
      ...guardThreadStores(inner, access, { unclaimedWrites: bound ? "refuse" : "allow" }),
      ...shared,
      ...(options.jobQueueFor === undefined ? {} : { jobQueue: options.jobQueueFor(tenant) }),
      tenant,
      forTenant: (t: string) => bind(t),
      close,
    });
  };
  // The unbound stores (a single-tenant deployment's) may still write for a thread before its first append.
  return bind(DEFAULT_TENANT, false);
}
