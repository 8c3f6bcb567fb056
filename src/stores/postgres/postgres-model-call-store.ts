import {
  callFromRow,
  callNotFound,
  checkCallRecord,
  checkLimit,
  checkUsage,
  duplicateCallError,
  type ModelCallRecord,
  type ModelCallStore,
  type ModelUsage,
} from "../model-call-store.js";
import { guarded } from "../store-errors.js";
import { type PgPool, pgColumn } from "./postgres-driver.js";

/**
 * A `ModelCallStore` on PostgreSQL: one row per call id (a unique column decides races between workers),
 * usage in its own column so it can be attached later, and a serial column that `list` orders by.
 *
 * @example
 * const calls = createPostgresModelCallStore(pool, '"context_ledger"'); // schema already migrated
 * await calls.record(record);
 */
export function createPostgresModelCallStore(pool: PgPool, s: string): ModelCallStore {
  const fromRow = (row: unknown): ModelCallRecord =>
    callFromRow(pgColumn(row, "record"), pgColumn(row, "usage"));

  async function record(input: ModelCallRecord): Promise<void> {
    const checked = checkCallRecord(input);
    const { usage, ...rest } = checked;
    const { rowCount } = await pool.query(
      `INSERT INTO ${s}.model_calls (call_id, thread_id, model, record, usage) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (call_id) DO NOTHING`,
      [
        checked.callId,
        checked.threadId,
        checked.model ?? null,
        JSON.stringify(rest),
        usage === undefined ? null : JSON.stringify(usage),
      ],
    );
    if (rowCount === 0) throw duplicateCallError(checked);
  }

  async function setUsage(callId: string, usage: ModelUsage): Promise<void> {
    const checked = checkUsage(callId, usage);
    const { rowCount } = await pool.query(`UPDATE ${s}.model_calls SET usage = $2 WHERE call_id = $1`, [
      callId,
      JSON.stringify(checked),
    ]);
    if (rowCount === 0) throw callNotFound(callId);
  }

  return Object.freeze({
    record: (input: ModelCallRecord) =>
      guarded("PostgreSQL", "model call record", input?.threadId, () => record(input)),
    get: (callId: string) =>
      guarded("PostgreSQL", "model call get", undefined, async () => {
        const { rows } = await pool.query(`SELECT record, usage FROM ${s}.model_calls WHERE call_id = $1`, [
          callId,
        ]);
        return rows.length === 0 ? undefined : fromRow(rows[0]);
      }),
    setUsage: (callId: string, usage: ModelUsage) =>
      guarded("PostgreSQL", "model call setUsage", undefined, () => setUsage(callId, usage)),
    list: (threadId: string) =>
      guarded("PostgreSQL", "model call list", threadId, async () => {
        const { rows } = await pool.query(
          `SELECT record, usage FROM ${s}.model_calls WHERE thread_id = $1 ORDER BY ord`,
          [threadId],
        );
        return Object.freeze(rows.map(fromRow));
      }),
    listWithUsage: (model: string, limit: number) =>
      guarded("PostgreSQL", "model call listWithUsage", undefined, async () => {
        checkLimit(limit);
        const { rows } = await pool.query(
          `SELECT record, usage FROM ${s}.model_calls
           WHERE model = $1 AND usage IS NOT NULL ORDER BY ord DESC LIMIT $2`,
          [model, limit],
        );
        return Object.freeze(rows.map(fromRow));
      }),
  });
}
