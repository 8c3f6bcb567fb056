import { statement } from "../sql/sql-dialect.js";
import type { ChainedPlanRow, PlanSql } from "../sql/sql-plan-store.js";
import { postgresThreadSql } from "./postgres-log-sql.js";

// version is an integer column; a larger requested version is clamped (and then not found).
const INT_MAX = 2_147_483_647;
const clamp = (n: number): number => Math.min(n, INT_MAX);

/**
 * The rows that rebuild version `target` of thread $1 in schema `s`, in one statement (one snapshot of the
 * data): the newest full row at or below it (found in the partial index of snapshots, without reading bodies),
 * then every delta after it, in version order; each row also carries `target`.
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
 * PostgreSQL's statements on `plans` in schema `s` (quoted); `committed_at` is written by the store with
 * millisecond precision, so reading it back as a date gives the ISO text the chain covers.
 */
export function postgresPlanSql(s: string): PlanSql {
  const chain = chainSql(s, "$2::integer");
  const latestChain = chainSql(s, `(SELECT plan_version FROM ${s}.threads WHERE thread_id = $1)`);
  return Object.freeze({
    threads: postgresThreadSql(s),
    insert: (threadId: string, r: ChainedPlanRow) =>
      statement(
        `INSERT INTO ${s}.plans (thread_id, version, kind, body, committed_at, chain_hash)
         VALUES ($1, $2, $3, $4, $5::timestamptz, $6)`,
        [threadId, r.version, r.kind, r.body, r.committedAt, r.chainHash],
      ),
    chainHead: (threadId: string, version: number) =>
      statement(`SELECT chain_hash FROM ${s}.plans WHERE thread_id = $1 AND version = $2`, [
        threadId,
        clamp(version),
      ]),
    chainRows: (threadId: string, toVersion: number) =>
      statement(
        `SELECT version, kind, body, committed_at, chain_hash FROM ${s}.plans
         WHERE thread_id = $1 AND version <= $2 ORDER BY version`,
        [threadId, clamp(toVersion)],
      ),
    setChain: (threadId: string, version: number, chainHash: string) =>
      statement(`UPDATE ${s}.plans SET chain_hash = $3 WHERE thread_id = $1 AND version = $2`, [
        threadId,
        version,
        chainHash,
      ]),
    chain: (threadId: string, version: number) => statement(chain, [threadId, clamp(version)]),
    latestChain: (threadId: string) => statement(latestChain, [threadId]),
    versions: (threadId: string) =>
      statement(`SELECT version FROM ${s}.plans WHERE thread_id = $1 ORDER BY version`, [threadId]),
    adoption: (threadId: string, version: number) =>
      statement(
        `SELECT (SELECT plan_version FROM ${s}.threads WHERE thread_id = $1) AS latest,
          (SELECT max(f.version) FROM ${s}.plans f
            WHERE f.thread_id = $1 AND f.kind = 'full' AND f.version <= $2) AS snapshot`,
        [threadId, clamp(version)],
      ),
  });
}
