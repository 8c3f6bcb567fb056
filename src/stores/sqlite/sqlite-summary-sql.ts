import { statement } from "../sql/sql-dialect.js";
import type { SummarySql } from "../sql/sql-summary-cache.js";

/** SQLite's statements on `summaries`; `created_at` is written as ISO text. */
export const sqliteSummarySql: SummarySql = Object.freeze({
  get: (keyHash: string) => statement("SELECT summary FROM summaries WHERE key_hash = ?", [keyHash]),
  remove: (keyHash: string) => statement("DELETE FROM summaries WHERE key_hash = ?", [keyHash]),
  set: (keyHash: string, summary: string) =>
    statement(
      `INSERT INTO summaries (key_hash, summary, created_at) VALUES (?, ?, ?)
       ON CONFLICT (key_hash) DO UPDATE SET summary = excluded.summary, created_at = excluded.created_at`,
      [keyHash, summary, new Date().toISOString()],
    ),
});
