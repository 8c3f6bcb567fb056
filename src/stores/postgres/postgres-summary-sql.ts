import { statement } from "../sql/sql-dialect.js";
import type { SummarySql } from "../sql/sql-summary-cache.js";

/** PostgreSQL's statements on `summaries` in schema `s` (quoted); `created_at` takes the server's clock. */
export function postgresSummarySql(s: string): SummarySql {
  return Object.freeze({
    get: (keyHash: string) => statement(`SELECT summary FROM ${s}.summaries WHERE key_hash = $1`, [keyHash]),
    remove: (keyHash: string) => statement(`DELETE FROM ${s}.summaries WHERE key_hash = $1`, [keyHash]),
    set: (keyHash: string, summary: string) =>
      statement(
        `INSERT INTO ${s}.summaries (key_hash, summary) VALUES ($1, $2)
         ON CONFLICT (key_hash) DO UPDATE SET summary = excluded.summary, created_at = now()`,
        [keyHash, summary],
      ),
  });
}
