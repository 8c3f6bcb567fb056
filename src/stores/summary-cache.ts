import type { StructuredSummary } from "../plan/compaction-plan.js";

/** A cached summary. */
export interface CachedSummary {
  readonly text: string;
  readonly structured: StructuredSummary;
}

/**
 * Remembers summaries by key (the span's content hash + summarizer id + prompt version, see
 * `summaryCacheKey`), so the same span is never summarized twice. In memory it is an LRU with a TTL; database
 * backends keep it durably.
 *
 * @example
 * const cache = createMemorySummaryCache({ maxEntries: 1_000, ttlMs: 86_400_000 });
 * await cache.set(key, { text, structured });
 * await cache.get(key); // { text, structured }
 */
export interface SummaryCache {
  get(key: string): Promise<CachedSummary | undefined>;
  set(key: string, summary: CachedSummary): Promise<void>;
  /**
   * Forgets the summary under `key` (a summary found wrong, or a summarizer retired): the next run summarizes that
   * span again. Optional for custom caches; the built-in ones have it.
   */
  invalidate?(key: string): Promise<void>;
}
