import { statement } from "../sql/sql-dialect.js";
import type { ChainedPlanRow, PlanSql } from "../sql/sql-plan-store.js";
import { sqliteThreadSql } from "./sqlite-log-sql.js";

// The newest full version at or below ? of thread ?, found in the partial index of snapshots without reading
// bodies.
const SNAPSHOT = `SELECT version FROM plans INDEXED BY plans_snapshots
  WHERE thread_id = ? AND version <= ? AND kind = 'full' ORDER BY version DESC LIMIT 1`;

// The rows that rebuild a version: the newest full row at or below it (see SNAPSHOT), then every delta after it,
// in version order.
const CHAIN = `SELECT version, kind, body FROM plans
  WHERE thread_id = ? AND version <= ? AND version >= coalesce((${SNAPSHOT}), 0)
  ORDER BY version`;

/** SQLite's statements on `plans`; `committed_at` is ISO text, written by the store. */
export const sqlitePlanSql: PlanSql = Object.freeze({
  threads: sqliteThreadSql,
  insert: (threadId: string, r: ChainedPlanRow) =>
    statement(
      "INSERT INTO plans (thread_id, version, kind, body, committed_at, chain_hash) VALUES (?, ?, ?, ?, ?, ?)",
      [threadId, r.version, r.kind, r.body, r.committedAt, r.chainHash],
    ),
  chainHead: (threadId: string, version: number) =>
    statement("SELECT chain_hash FROM plans WHERE thread_id = ? AND version = ?", [threadId, version]),
  chainRows: (threadId: string, toVersion: number) =>
    statement(
      `SELECT version, kind, body, committed_at, chain_hash FROM plans
       WHERE thread_id = ? AND version <= ? ORDER BY version`,
      [threadId, toVersion],
    ),
  setChain: (threadId: string, version: number, chainHash: string) =>
    statement("UPDATE plans SET chain_hash = ? WHERE thread_id = ? AND version = ?", [
      chainHash,
      threadId,
      version,
    ]),
  chain: (threadId: string, version: number) => statement(CHAIN, [threadId, version, threadId, version]),
  versions: (threadId: string) =>
    statement("SELECT version FROM plans WHERE thread_id = ? ORDER BY version", [threadId]),
  adoption: (threadId: string, version: number) =>
    statement(
      `SELECT (SELECT plan_version FROM threads WHERE thread_id = ?) AS latest, (${SNAPSHOT}) AS snapshot`,
      [threadId, threadId, version],
    ),
});
