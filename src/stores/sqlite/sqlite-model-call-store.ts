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
import { column, immediateTransaction, type SqliteDatabase } from "./sqlite-driver.js";

/**
 * A `ModelCallStore` on SQLite: one row per call id (a unique column), usage in its own column so it can be
 * attached later, and an insertion counter that `list` and `listWithUsage` order by.
 *
 * @example
 * const calls = createSqliteModelCallStore(db); // db already migrated
 * await calls.record(record);
 */
export function createSqliteModelCallStore(db: SqliteDatabase): ModelCallStore {
  const sql = {
    exists: db.prepare("SELECT 1 AS one FROM model_calls WHERE call_id = ?"),
    insert: db.prepare(
      "INSERT INTO model_calls (call_id, thread_id, model, record, usage) VALUES (?, ?, ?, ?, ?)",
    ),
    get: db.prepare("SELECT record, usage FROM model_calls WHERE call_id = ?"),
    setUsage: db.prepare("UPDATE model_calls SET usage = ? WHERE call_id = ?"),
    list: db.prepare("SELECT record, usage FROM model_calls WHERE thread_id = ? ORDER BY ord"),
    withUsage: db.prepare(
      "SELECT record, usage FROM model_calls WHERE model = ? AND usage IS NOT NULL ORDER BY ord DESC LIMIT ?",
    ),
  };
  const fromRow = (row: unknown): ModelCallRecord => callFromRow(column(row, "record"), column(row, "usage"));

  function record(input: ModelCallRecord): void {
    const checked = checkCallRecord(input);
    const { usage, ...rest } = checked;
    immediateTransaction(db, () => {
      if (sql.exists.get(checked.callId) !== undefined) throw duplicateCallError(checked);
      const usageJson = usage === undefined ? null : JSON.stringify(usage);
      sql.insert.run(
        checked.callId,
        checked.threadId,
        checked.model ?? null,
        JSON.stringify(rest),
        usageJson,
      );
    });
  }

  function setUsage(callId: string, usage: ModelUsage): void {
    const checked = checkUsage(callId, usage);
    const { changes } = sql.setUsage.run(JSON.stringify(checked), callId);
    if (Number(changes) === 0) throw callNotFound(callId);
  }

  return Object.freeze({
    record: (input: ModelCallRecord) =>
      guarded("SQLite", "model call record", input?.threadId, () => record(input)),
    get: (callId: string) =>
      guarded("SQLite", "model call get", undefined, () => {
        const row = sql.get.get(callId);
        return row === undefined ? undefined : fromRow(row);
      }),
    setUsage: (callId: string, usage: ModelUsage) =>
      guarded("SQLite", "model call setUsage", undefined, () => setUsage(callId, usage)),
    list: (threadId: string) =>
      guarded("SQLite", "model call list", threadId, () =>
        Object.freeze(sql.list.all(threadId).map(fromRow)),
      ),
    listWithUsage: (model: string, limit: number) =>
      guarded("SQLite", "model call listWithUsage", undefined, () => {
        checkLimit(limit);
        return Object.freeze(sql.withUsage.all(model, limit).map(fromRow));
      }),
  });
}
