import type { Clock, Stores } from "../stores.js";
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
  options: { readonly now?: Clock; readonly close: () => Promise<void> },
): Stores {
  let closed = false;
  const log = createSqlLogStore(dialect, sql.log);
  return Object.freeze({
    log,
    plans: createSqlPlanStore(dialect, sql.plans, log),
    artifacts: createSqlArtifactStore(dialect, sql.artifacts, options.now),
    summaries: createSqlSummaryCache(dialect, sql.summaries),
    calls: createSqlModelCallStore(dialect, sql.calls),
    checkpoints: createSqlCheckpointStore(dialect, sql.checkpoints),
    close: async () => {
      if (closed) return;
      closed = true;
      await options.close();
    },
  });
}
