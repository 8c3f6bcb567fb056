import { statement } from "../sql/sql-dialect.js";
import type { ModelCallColumns, ModelCallSql } from "../sql/sql-model-call-store.js";

/** PostgreSQL's statements on `model_calls` in schema `s` (quoted), whose serial `ord` is the recording order. */
export function postgresModelCallSql(s: string): ModelCallSql {
  return Object.freeze({
    insert: (c: ModelCallColumns) =>
      statement(
        `INSERT INTO ${s}.model_calls (call_id, thread_id, model, record, usage) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (call_id) DO NOTHING`,
        [c.callId, c.threadId, c.model, c.record, c.usage],
      ),
    get: (callId: string) =>
      statement(`SELECT record, usage FROM ${s}.model_calls WHERE call_id = $1`, [callId]),
    setUsage: (callId: string, usage: string) =>
      statement(`UPDATE ${s}.model_calls SET usage = $2 WHERE call_id = $1`, [callId, usage]),
    list: (threadId: string) =>
      statement(`SELECT record, usage FROM ${s}.model_calls WHERE thread_id = $1 ORDER BY ord`, [threadId]),
    recent: (threadId: string, limit: number) =>
      statement(
        `SELECT record, usage FROM (
           SELECT ord, record, usage FROM ${s}.model_calls WHERE thread_id = $1 ORDER BY ord DESC LIMIT $2
         ) AS last ORDER BY ord`,
        [threadId, limit],
      ),
    listWithUsage: (model: string, limit: number) =>
      statement(
        `SELECT record, usage FROM ${s}.model_calls
         WHERE model = $1 AND usage IS NOT NULL ORDER BY ord DESC LIMIT $2`,
        [model, limit],
      ),
  });
}
