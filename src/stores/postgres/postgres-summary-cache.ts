import { deepFreeze } from "../../log/deep-freeze.js";
import { guarded } from "../store-errors.js";
import { cachedSummarySchema, checkValue, parseRow } from "../store-row-schemas.js";
import type { CachedSummary, SummaryCache } from "../summary-cache.js";
import { summaryKeyHash } from "../summary-key-hash.js";
import { type PgPool, pgColumn } from "./postgres-driver.js";

/**
 * A durable `SummaryCache` on PostgreSQL, shared by every worker: summaries are keyed by content hash and
 * prompt version, so they stay valid forever and are kept without TTL or eviction.
 *
 * @example
 * const cache = createPostgresSummaryCache(pool, '"context_ledger"'); // schema already migrated
 * await cache.set(key, { text, structured });
 */
export function createPostgresSummaryCache(pool: PgPool, s: string): SummaryCache {
  return Object.freeze({
    get: (key: string) =>
      guarded("PostgreSQL", "summary get", undefined, async () => {
        const { rows } = await pool.query(`SELECT summary FROM ${s}.summaries WHERE key_hash = $1`, [
          summaryKeyHash(key),
        ]);
        if (rows.length === 0) return undefined;
        const summary = parseRow(cachedSummarySchema, pgColumn(rows[0], "summary"), {
          what: "cached summary row",
        });
        return deepFreeze(summary) as CachedSummary;
      }),
    set: (key: string, summary: CachedSummary) =>
      guarded("PostgreSQL", "summary set", undefined, async () => {
        const checked = checkValue(cachedSummarySchema, summary, { what: "summary" });
        await pool.query(
          `INSERT INTO ${s}.summaries (key_hash, summary) VALUES ($1, $2)
           ON CONFLICT (key_hash) DO UPDATE SET summary = excluded.summary, created_at = now()`,
          [summaryKeyHash(key), JSON.stringify(checked)],
        );
      }),
  });
}
