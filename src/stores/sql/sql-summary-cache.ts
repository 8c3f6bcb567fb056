import { deepFreeze } from "../../log/deep-freeze.js";
import { cachedSummarySchema, checkValue, parseRow } from "../store-row-schemas.js";
import type { CachedSummary, SummaryCache } from "../summary-cache.js";
import { summaryKeyHash } from "../summary-key-hash.js";
import { column, type SqlDialect, type SqlStatement, storeOperations } from "./sql-dialect.js";

/** A dialect's statements on `summaries`, keyed by the key's hash; rows read carry `summary`. */
export interface SummarySql {
  get(keyHash: string): SqlStatement;
  /** Stores a summary (JSON) under a key hash, replacing an entry already there. */
  set(keyHash: string, summary: string): SqlStatement;
  /** Deletes the entry under a key hash. */
  remove(keyHash: string): SqlStatement;
}

/**
 * A durable `SummaryCache` on a SQL database, shared by every worker: summaries are keyed by content hash and
 * prompt version, so they stay valid forever and are kept without TTL or eviction; a later `set` for a key
 * replaces the entry.
 *
 * @example
 * const cache = createSqlSummaryCache(sqliteDialect(db), sqliteSummarySql); // db already migrated
 * await cache.set(key, { text, structured });
 */
export function createSqlSummaryCache(dialect: SqlDialect, sql: SummarySql): SummaryCache {
  const op = storeOperations(dialect);
  return Object.freeze({
    get: (key: string) =>
      op("summary get", undefined, async () => {
        const [row] = await dialect.all(sql.get(summaryKeyHash(key)));
        if (row === undefined) return undefined;
        const summary = parseRow(cachedSummarySchema, column(row, "summary"), { what: "cached summary row" });
        return deepFreeze(summary) as CachedSummary;
      }),
    set: (key: string, summary: CachedSummary) =>
      op("summary set", undefined, async () => {
        const checked = checkValue(cachedSummarySchema, summary, { what: "summary" });
        await dialect.run(sql.set(summaryKeyHash(key), JSON.stringify(checked)));
      }),
    invalidate: (key: string) =>
      op("summary invalidate", undefined, async () => {
        await dialect.run(sql.remove(summaryKeyHash(key)));
      }),
  });
}
