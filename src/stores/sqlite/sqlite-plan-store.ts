import { type CompactionPlan, emptyPlan } from "../../plan/compaction-plan.js";
import { checkSeq, checkThreadId } from "../log-store.js";
import { KnownPlans, type PlanRow, prepareCommit } from "../plan-deltas.js";
import { type PlanStore, planConflict, planNotFound } from "../plan-store.js";
import { guarded } from "../store-errors.js";
import { column, immediateTransaction, intColumn, type SqliteDatabase } from "./sqlite-driver.js";

// The rows that rebuild version @version: the newest full row at or below it (found in the partial index of
// snapshots, without reading bodies), then every delta after it, in version order.
const CHAIN = `SELECT version AS v, kind, body FROM plans
  WHERE thread_id = @thread AND version <= @version AND version >= coalesce(
    (SELECT version FROM plans INDEXED BY plans_snapshots
     WHERE thread_id = @thread AND version <= @version AND kind = 'full' ORDER BY version DESC LIMIT 1), 0)
  ORDER BY version`;

/**
 * A `PlanStore` on SQLite: a commit checks the thread's plan version and inserts the new version inside one
 * `BEGIN IMMEDIATE` transaction, so concurrent committers serialize and the stale ones get
 * `VersionConflictError`. A version that extends the one this instance last committed or read is stored as the
 * actions it adds (a delta), others whole, as canonical JSON; a read parses (validates) a snapshot and the deltas
 * after it.
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
    insert: db.prepare(
      "INSERT INTO plans (thread_id, version, kind, body, committed_at) VALUES (?, ?, ?, ?, ?)",
    ),
    chain: db.prepare(CHAIN),
    versions: db.prepare("SELECT version AS v FROM plans WHERE thread_id = ? ORDER BY version"),
    // A thread's versions are 1, 2, … with none ever removed, so the deltas since the snapshot are the
    // difference of the versions: no count over rows (a seek past a snapshot of megabytes reads all of it).
    snapshot: db.prepare(`SELECT version AS v FROM plans INDEXED BY plans_snapshots
      WHERE thread_id = @thread AND version <= @version AND kind = 'full' ORDER BY version DESC LIMIT 1`),
  };
  const known = new KnownPlans();
  const versionOf = (threadId: string): number => {
    const row = sql.version.get(threadId);
    return row === undefined ? 0 : intColumn(row, "v");
  };

  function commit(plan: CompactionPlan, expectedVersion: number): void {
    const prepared = prepareCommit(known, plan, expectedVersion);
    immediateTransaction(db, () => {
      const actual = versionOf(plan.threadId);
      if (actual !== expectedVersion) throw planConflict(plan.threadId, expectedVersion, actual);
      sql.insert.run(plan.threadId, plan.version, prepared.kind, prepared.body, new Date().toISOString());
      sql.setVersion.run(plan.threadId, plan.version);
    });
    if (prepared.known !== undefined) known.offer(prepared.known);
  }

  function get(threadId: string, version: number): CompactionPlan {
    checkThreadId(threadId);
    checkSeq(threadId, version, "version");
    if (version === 0) return emptyPlan(threadId);
    const rows: PlanRow[] = sql.chain.all({ thread: threadId, version }).map((row) => ({
      version: intColumn(row, "v"),
      kind: column(row, "kind"),
      body: column(row, "body"),
    }));
    return known.read(threadId, version, rows);
  }

  function adopt(plan: CompactionPlan): void {
    checkThreadId(plan?.threadId);
    checkSeq(plan.threadId, plan.version, "version");
    if (plan.version === 0) return;
    if (plan.version > versionOf(plan.threadId)) throw planNotFound(plan.threadId, plan.version);
    const row = sql.snapshot.get({ thread: plan.threadId, version: plan.version });
    known.offer({ plan, deltas: plan.version - (row === undefined ? 0 : intColumn(row, "v")) });
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
    adopt: (plan: CompactionPlan) => op("adopt", plan?.threadId, () => adopt(plan)),
    versions: (threadId: string) =>
      op("versions", threadId, () => {
        checkThreadId(threadId);
        return Object.freeze(sql.versions.all(threadId).map((row) => intColumn(row, "v")));
      }),
    latestVersion: (threadId: string) =>
      op("latestVersion", threadId, () => {
        checkThreadId(threadId);
        return versionOf(threadId);
      }),
  });
}
