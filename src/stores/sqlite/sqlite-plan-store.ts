import { type CompactionPlan, emptyPlan } from "../../plan/compaction-plan.js";
import { serializePlan } from "../../plan/plan-schema.js";
import { checkSeq, checkThreadId } from "../log-store.js";
import { checkCommit, type PlanStore, planConflict, planFromRow, planNotFound } from "../plan-store.js";
import { guarded } from "../store-errors.js";
import { column, immediateTransaction, intColumn, type SqliteDatabase } from "./sqlite-driver.js";

/**
 * A `PlanStore` on SQLite: a commit checks the thread's plan version and inserts the new version inside one
 * `BEGIN IMMEDIATE` transaction, so concurrent committers serialize and the stale ones get
 * `VersionConflictError`. Plans are stored as canonical JSON and parsed (validated) on every read.
 *
 * @example
 * const plans = createSqlitePlanStore(db); // db already migrated
 * await plans.commit(plan, plan.version - 1);
 */
export function createSqlitePlanStore(db: SqliteDatabase): PlanStore {
  const sql = {
    version: db.prepare("SELECT plan_version AS v FROM threads WHERE thread_id = ?"),
    setVersion: db.prepare(
      `INSERT INTO threads (thread_id, plan_version) VALUES (?, ?)
       ON CONFLICT (thread_id) DO UPDATE SET plan_version = excluded.plan_version`,
    ),
    insert: db.prepare("INSERT INTO plans (thread_id, version, body, committed_at) VALUES (?, ?, ?, ?)"),
    get: db.prepare("SELECT body FROM plans WHERE thread_id = ? AND version = ?"),
    versions: db.prepare("SELECT version AS v FROM plans WHERE thread_id = ? ORDER BY version"),
  };
  const versionOf = (threadId: string): number => {
    const row = sql.version.get(threadId);
    return row === undefined ? 0 : intColumn(row, "v");
  };

  function commit(plan: CompactionPlan, expectedVersion: number): void {
    checkCommit(plan, expectedVersion);
    const body = serializePlan(plan);
    immediateTransaction(db, () => {
      const actual = versionOf(plan.threadId);
      if (actual !== expectedVersion) throw planConflict(plan.threadId, expectedVersion, actual);
      sql.insert.run(plan.threadId, plan.version, body, new Date().toISOString());
      sql.setVersion.run(plan.threadId, plan.version);
    });
  }

  function get(threadId: string, version: number): CompactionPlan {
    checkThreadId(threadId);
    checkSeq(threadId, version, "version");
    if (version === 0) return emptyPlan(threadId);
    const row = sql.get.get(threadId, version);
    if (row === undefined) throw planNotFound(threadId, version);
    return planFromRow(threadId, version, column(row, "body"));
  }

  const op = <T>(name: string, threadId: string | undefined, run: () => T) =>
    guarded("SQLite", name, threadId, run);
  return Object.freeze({
    commit: (plan: CompactionPlan, expectedVersion: number) =>
      op("commit", plan?.threadId, () => commit(plan, expectedVersion)),
    latest: (threadId: string) =>
      op("latest", threadId, () => {
        checkThreadId(threadId);
        return get(threadId, versionOf(threadId));
      }),
    get: (threadId: string, version: number) => op("get", threadId, () => get(threadId, version)),
    versions: (threadId: string) =>
      op("versions", threadId, () => {
        checkThreadId(threadId);
        return Object.freeze(sql.versions.all(threadId).map((row) => intColumn(row, "v")));
      }),
  });
}
