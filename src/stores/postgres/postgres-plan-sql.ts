import { statement } from "../sql/sql-dialect.js";
import type { PlanSql } from "../sql/sql-plan-store.js";
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

/** PostgreSQL's statements on `plans` in schema `s` (quoted); `committed_at` takes the server's clock. */
export function postgresPlanSql(s: string): PlanSql {
  const chain = chainSql(s, "$2::integer");
  const latestChain = chainSql(s, `(SELECT plan_version FROM ${s}.threads WHERE thread_id = $1)`);
  return Object.freeze({
    threads: postgresThreadSql(s),
    insert: (threadId: string, version: number, kind: string, body: string) =>
      statement(`INSERT INTO ${s}.plans (thread_id, version, kind, body) VALUES ($1, $2, $3, $4)`, [
        threadId,
        version,
        kind,
        body,
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
