import { type CompactionPlan, emptyPlan } from "../../plan/compaction-plan.js";
import { checkSeq, checkThreadId } from "../log-store.js";
import { KnownPlans, type PlanRow, prepareCommit } from "../plan-deltas.js";
import { type PlanStore, planConflict, planNotFound } from "../plan-store.js";
import { guarded } from "../store-errors.js";
import { type PgPool, pgColumn, pgInt, pgTransaction } from "./postgres-driver.js";
import { lockThread } from "./postgres-log-store.js";

// version is an integer column; a larger requested version is clamped (and then not found).
const INT_MAX = 2_147_483_647;

/**
 * The rows that rebuild version `target` of thread $1, in one statement (one snapshot of the data): the newest
 * full row at or below it (found in the partial index of snapshots, without reading bodies), then every delta
 * after it, in version order; each row also carries `target`.
 */
function chainSql(s: string, target: string): string {
  return `WITH t AS (SELECT ${target} AS target),
    base AS (
      SELECT coalesce(max(f.version), 0) AS from_version FROM ${s}.plans f, t
      WHERE f.thread_id = $1 AND f.kind = 'full' AND f.version <= t.target
    )
    SELECT p.version, p.kind, p.body, t.target FROM t, base, ${s}.plans p
    WHERE p.thread_id = $1 AND p.version >= base.from_version AND p.version <= t.target
    ORDER BY p.version`;
}

/**
 * A `PlanStore` on PostgreSQL: a commit locks the thread's row, checks the plan version, inserts the new
 * version and bumps the counter in one transaction, so concurrent committers on any machine serialize and the
 * stale ones get `VersionConflictError`. A version that extends the one this instance last committed or read is
 * stored as the actions it adds (a delta), others whole, as canonical JSON text; a read parses (validates) a
 * snapshot and the deltas after it.
 *
 * @example
 * const plans = createPostgresPlanStore(pool, '"context_ledger"'); // schema already migrated
 * await plans.commit(plan, plan.version - 1);
 */
export function createPostgresPlanStore(pool: PgPool, s: string): PlanStore {
  const known = new KnownPlans();
  const sql = {
    get: chainSql(s, "$2::integer"),
    latest: chainSql(s, `(SELECT plan_version FROM ${s}.threads WHERE thread_id = $1)`),
  };

  async function commit(plan: CompactionPlan, expectedVersion: number): Promise<void> {
    const prepared = prepareCommit(known, plan, expectedVersion);
    await pgTransaction(pool, async (client) => {
      const { planVersion } = await lockThread(client, s, plan.threadId);
      if (planVersion !== expectedVersion) throw planConflict(plan.threadId, expectedVersion, planVersion);
      await client.query(`INSERT INTO ${s}.plans (thread_id, version, kind, body) VALUES ($1, $2, $3, $4)`, [
        plan.threadId,
        plan.version,
        prepared.kind,
        prepared.body,
      ]);
      await client.query(`UPDATE ${s}.threads SET plan_version = $2 WHERE thread_id = $1`, [
        plan.threadId,
        plan.version,
      ]);
    });
    if (prepared.known !== undefined) known.offer(prepared.known);
  }

  /** Rebuilds the version the rows end at, checking it is the one asked for (`target`). */
  function fromRows(threadId: string, rows: ReadonlyArray<unknown>): CompactionPlan {
    const target = pgInt(rows[0], "target");
    const chain: PlanRow[] = rows.map((row) => ({
      version: pgInt(row, "version"),
      kind: pgColumn(row, "kind"),
      body: pgColumn(row, "body"),
    }));
    return known.read(threadId, target, chain);
  }

  async function get(threadId: string, version: number): Promise<CompactionPlan> {
    checkThreadId(threadId);
    checkSeq(threadId, version, "version");
    if (version === 0) return emptyPlan(threadId);
    const { rows } = await pool.query(sql.get, [threadId, Math.min(version, INT_MAX)]);
    if (rows.length === 0 || version > INT_MAX) throw planNotFound(threadId, version);
    return fromRows(threadId, rows);
  }

  async function latest(threadId: string): Promise<CompactionPlan> {
    checkThreadId(threadId);
    // No rows: no thread row, or plan version 0 (nothing committed yet).
    const { rows } = await pool.query(sql.latest, [threadId]);
    return rows.length === 0 ? emptyPlan(threadId) : fromRows(threadId, rows);
  }

  async function adopt(plan: CompactionPlan): Promise<void> {
    checkThreadId(plan?.threadId);
    checkSeq(plan.threadId, plan.version, "version");
    if (plan.version === 0) return;
    const { rows } = await pool.query(
      // Versions are 1, 2, … and never removed: the deltas since the snapshot are the versions' difference.
      `SELECT (SELECT plan_version FROM ${s}.threads WHERE thread_id = $1) AS latest,
        $2::bigint - coalesce((SELECT max(f.version) FROM ${s}.plans f
          WHERE f.thread_id = $1 AND f.kind = 'full' AND f.version <= $2), 0) AS deltas`,
      [plan.threadId, Math.min(plan.version, INT_MAX)],
    );
    const latest =
      (rows[0] as { latest?: unknown } | undefined)?.latest == null ? 0 : pgInt(rows[0], "latest");
    if (plan.version > latest) throw planNotFound(plan.threadId, plan.version);
    known.offer({ plan, deltas: pgInt(rows[0], "deltas") });
  }

  const op = <T>(name: string, threadId: string | undefined, run: () => Promise<T>) =>
    guarded("PostgreSQL", name, threadId, run);
  return Object.freeze({
    commit: (plan: CompactionPlan, expectedVersion: number) =>
      op("commit", plan?.threadId, () => commit(plan, expectedVersion)),
    latest: (threadId: string) => op("latest", threadId, () => latest(threadId)),
    get: (threadId: string, version: number) => op("get", threadId, () => get(threadId, version)),
    adopt: (plan: CompactionPlan) => op("adopt", plan?.threadId, () => adopt(plan)),
    versions: (threadId: string) =>
      op("versions", threadId, async () => {
        checkThreadId(threadId);
        const { rows } = await pool.query(
          `SELECT version FROM ${s}.plans WHERE thread_id = $1 ORDER BY version`,
          [threadId],
        );
        return Object.freeze(rows.map((row) => pgInt(row, "version")));
      }),
    latestVersion: (threadId: string) =>
      op("latestVersion", threadId, async () => {
        checkThreadId(threadId);
        const { rows } = await pool.query(`SELECT plan_version FROM ${s}.threads WHERE thread_id = $1`, [
          threadId,
        ]);
        return rows.length === 0 ? 0 : pgInt(rows[0]!, "plan_version");
      }),
  });
}
