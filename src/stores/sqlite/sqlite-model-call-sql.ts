import { statement } from "../sql/sql-dialect.js";
import type { ModelCallColumns, ModelCallSql } from "../sql/sql-model-call-store.js";

/** SQLite's statements on `model_calls`, whose `ord` (AUTOINCREMENT) is the recording order. */
export const sqliteModelCallSql: ModelCallSql = Object.freeze({
  insert: (c: ModelCallColumns) =>
    statement(
      `INSERT INTO model_calls (call_id, thread_id, model, record, usage) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (call_id) DO NOTHING`,
      [c.callId, c.threadId, c.model, c.record, c.usage],
    ),
  get: (callId: string) => statement("SELECT record, usage FROM model_calls WHERE call_id = ?", [callId]),
  setUsage: (callId: string, usage: string) =>
    statement("UPDATE model_calls SET usage = ? WHERE call_id = ?", [usage, callId]),
  list: (threadId: string) =>
    statement("SELECT record, usage FROM model_calls WHERE thread_id = ? ORDER BY ord", [threadId]),
  recent: (threadId: string, limit: number) =>
    statement(
      `SELECT record, usage FROM (SELECT ord, record, usage FROM model_calls WHERE thread_id = ? ORDER BY ord DESC LIMIT ?)
       ORDER BY ord`,
      [threadId, limit],
    ),
  listWithUsage: (model: string, limit: number) =>
    statement(
      "SELECT record, usage FROM model_calls WHERE model = ? AND usage IS NOT NULL ORDER BY ord DESC LIMIT ?",
      [model, limit],
    ),
});
