import { type CompactionPlan, emptyPlan } from "../../plan/compaction-plan.js";
import { serializePlan } from "../../plan/plan-schema.js";
import { checkSeq, checkThreadId } from "../log-store.js";
import { checkCommit, type PlanStore, planConflict, planFromRow, planNotFound } from "../plan-store.js";
import { guarded } from "../store-errors.js";
import { type PgPool, pgColumn, pgInt, pgTransaction } from "./postgres-driver.js";
import { lockThread } from "./postgres-log-store.js";

/**
 * A `PlanStore` on PostgreSQL: a commit locks the thread's row, checks the plan version, inserts the new
 * version and bumps the counter in one transaction, so concurrent committers on any machine serialize and the
 * stale ones get `VersionConflictError`. Plans are canonical JSON text, parsed (validated) on every read.
 *
 * @example
 * const plans = createPostgresPlanStore(pool, '"context_ledger"'); // schema already migrated
 * await plans.commit(plan, plan.version - 1);
 */
export function createPostgresPlanStore(pool: PgPool, s: string): PlanStore {
  async function commit(plan: CompactionPlan, expectedVersion: number): Promise<void> {
    checkCommit(plan, expectedVersion);
    const body = serializePlan(plan);
    await pgTransaction(pool, async (client) => {
      const { planVersion } = await lockThread(client, s, plan.threadId);
      if (planVersion !== expectedVersion) throw planConflict(plan.threadId, expectedVersion, planVersion);
      await client.query(`INSERT INTO ${s}.plans (thread_id, version, body) VALUES ($1, $2, $3)`, [
        plan.threadId,
        plan.version,
        body,
      ]);
      await client.query(`UPDATE ${s}.threads SET plan_version = $2 WHERE thread_id = $1`, [
        plan.threadId,
        plan.version,
      ]);
    });
  }

  async function get(threadId: string, version: number): Promise<CompactionPlan> {
    checkThreadId(threadId);
    checkSeq(threadId, version, "version");
    if (version === 0) return emptyPlan(threadId);
    const { rows } = await pool.query(`SELECT body FROM ${s}.plans WHERE thread_id = $1 AND version = $2`, [
      threadId,
      Math.min(version, 2_147_483_647),
    ]);
    if (rows.length === 0) throw planNotFound(threadId, version);
    return planFromRow(threadId, version, pgColumn(rows[0], "body"));
  }

  async function latest(threadId: string): Promise<CompactionPlan> {
    checkThreadId(threadId);
    // One round trip: the newest version's body, or nothing before the first commit.
    const { rows } = await pool.query(
      `SELECT p.version, p.body FROM ${s}.threads t
       JOIN ${s}.plans p ON p.thread_id = t.thread_id AND p.version = t.plan_version
       WHERE t.thread_id = $1`,
      [threadId],
    );
    if (rows.length === 0) return emptyPlan(threadId);
    return planFromRow(threadId, pgInt(rows[0], "version"), pgColumn(rows[0], "body"));
  }

  const op = <T>(name: string, threadId: string | undefined, run: () => Promise<T>) =>
    guarded("PostgreSQL", name, threadId, run);
  return Object.freeze({
    commit: (plan: CompactionPlan, expectedVersion: number) =>
      op("commit", plan?.threadId, () => commit(plan, expectedVersion)),
    latest: (threadId: string) => op("latest", threadId, () => latest(threadId)),
    get: (threadId: string, version: number) => op("get", threadId, () => get(threadId, version)),
    versions: (threadId: string) =>
      op("versions", threadId, async () => {
        checkThreadId(threadId);
        const { rows } = await pool.query(
          `SELECT version FROM ${s}.plans WHERE thread_id = $1 ORDER BY version`,
          [threadId],
        );
        return Object.freeze(rows.map((row) => pgInt(row, "version")));
      }),
  });
}
