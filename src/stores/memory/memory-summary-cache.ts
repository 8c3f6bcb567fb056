import { ValidationError } from "../../errors/ledger-error.js";
import { deepFreeze } from "../../log/deep-freeze.js";
import type { CachedSummary, SummaryCache } from "../summary-cache.js";

/** Options of `createMemorySummaryCache`. */
export interface MemorySummaryCacheOptions {
  /** Most entries held; the least recently used one is evicted beyond it (default 1,000). */
  readonly maxEntries?: number;
  /** Lifetime of an entry from its `set`, in milliseconds; absent means entries never expire. */
  readonly ttlMs?: number;
  /** The clock, in epoch milliseconds (default `Date.now`); tests pass a fake one. */
  readonly now?: () => number;
}

/** The in-memory summary cache, with its size for tests and metrics. */
export interface MemorySummaryCache extends SummaryCache {
  /** Entries currently held, expired ones not yet noticed included. */
  readonly size: number;
  clear(): void;
}

interface Entry {
  readonly value: CachedSummary;
  readonly expiresAt: number;
}

/**
 * An in-memory `SummaryCache`: LRU (a `get` makes an entry the most recent) with an optional TTL (an expired
 * entry reads as `undefined` and is removed). Stored values are frozen copies, so no caller can change them.
 *
 * @example
 * const cache = createMemorySummaryCache({ maxEntries: 1_000, ttlMs: 86_400_000 });
 * await cache.set(summaryCacheKey(spanHash, summarizer.id, summarizer.promptVersion), { text, structured });
 */
export function createMemorySummaryCache(options: MemorySummaryCacheOptions = {}): MemorySummaryCache {
  const maxEntries = options.maxEntries ?? 1_000;
  const ttlMs = options.ttlMs ?? Number.POSITIVE_INFINITY;
  const now = options.now ?? Date.now;
  if (!Number.isInteger(maxEntries) || maxEntries < 1) {
    throw new ValidationError(`maxEntries must be a positive integer (got ${maxEntries})`, {
      field: "maxEntries",
    });
  }
  if (!(ttlMs > 0)) {
    throw new ValidationError(`ttlMs must be a positive number of milliseconds (got ${ttlMs})`, {
      field: "ttlMs",
    });
  }
  // A Map iterates in insertion order, so deleting and re-inserting a key makes it the most recent.
  const entries = new Map<string, Entry>();

  function read(key: string): CachedSummary | undefined {
    const entry = entries.get(key);
    if (entry === undefined) return undefined;
    entries.delete(key);
    if (now() >= entry.expiresAt) return undefined;
    entries.set(key, entry);
    return entry.value;
  }

  function write(key: string, summary: CachedSummary): void {
    const value = deepFreeze(structuredClone({ text: summary.text, structured: summary.structured }));
    entries.delete(key);
    entries.set(key, { value, expiresAt: now() + ttlMs });
    while (entries.size > maxEntries) {
      const oldest = entries.keys().next().value;
      if (oldest === undefined) break;
      entries.delete(oldest);
    }
  }

  return Object.freeze({
    get: (key: string) => Promise.resolve(read(key)),
    set: (key: string, summary: CachedSummary) => Promise.resolve(write(key, summary)),
    invalidate: async (key: string) => {
      entries.delete(key);
    },
    get size() {
      return entries.size;
    },
    clear: () => entries.clear(),
  });
}
