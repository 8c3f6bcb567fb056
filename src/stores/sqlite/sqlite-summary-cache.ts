import { deepFreeze } from "../../log/deep-freeze.js";
import { guarded } from "../store-errors.js";
import { cachedSummarySchema, checkValue, parseRow } from "../store-row-schemas.js";
import type { CachedSummary, SummaryCache } from "../summary-cache.js";
import { summaryKeyHash } from "../summary-key-hash.js";
import { column, type SqliteDatabase } from "./sqlite-driver.js";

/**
 * A durable `SummaryCache` on SQLite: summaries are keyed by content hash and prompt version, so they stay valid
 * forever and are kept without TTL or eviction; a later `set` for a key replaces the entry.
 *
 * @example
 * const cache = createSqliteSummaryCache(db); // db already migrated
 * await cache.set(key, { text, structured });
 */
export function createSqliteSummaryCache(db: SqliteDatabase): SummaryCache {
  const sql = {
    get: db.prepare("SELECT summary FROM summaries WHERE key_hash = ?"),
    set: db.prepare(
      `INSERT INTO summaries (key_hash, summary, created_at) VALUES (?, ?, ?)
       ON CONFLICT (key_hash) DO UPDATE SET summary = excluded.summary, created_at = excluded.created_at`,
    ),
  };
  return Object.freeze({
    get: (key: string) =>
      guarded("SQLite", "summary get", undefined, () => {
        const row = sql.get.get(summaryKeyHash(key));
        if (row === undefined) return undefined;
        const summary = parseRow(cachedSummarySchema, column(row, "summary"), { what: "cached summary row" });
        return deepFreeze(summary) as CachedSummary;
      }),
    set: (key: string, summary: CachedSummary) =>
      guarded("SQLite", "summary set", undefined, () => {
        const checked = checkValue(cachedSummarySchema, summary, { what: "summary" });
        sql.set.run(summaryKeyHash(key), JSON.stringify(checked), new Date().toISOString());
      }),
  });
}
