import type { Clock, Stores } from "../stores.js";
import { checkTenant, DEFAULT_TENANT, guardThreadStores } from "../thread-tenancy.js";
import { createMemoryArtifactStore } from "./memory-artifact-store.js";
import { createMemoryCheckpointStore } from "./memory-checkpoint-store.js";
import { createMemoryLogState, createMemoryLogStore, MEMORY_ROWS } from "./memory-log-store.js";
import { createMemoryModelCallStore } from "./memory-model-call-store.js";
import { createMemoryPlanStore } from "./memory-plan-store.js";
import { createMemorySummaryCache } from "./memory-summary-cache.js";

/** Options of `createMemoryStores`. */
export interface MemoryStoresOptions {
  /** The clock for artifact and summary TTLs (default `Date.now`). */
  readonly now?: Clock;
  /** Most summaries the cache holds (default 1,000). */
  readonly summaryMaxEntries?: number;
  /** Lifetime of a cached summary in milliseconds (default: no expiry). */
  readonly summaryTtlMs?: number;
}

/**
 * Every store in memory: the reference backend for tests and single-process tools; nothing survives the process.
 *
 * @example
 * const stores = createMemoryStores();
 * await stores.log.append("t1", 0, entries);
 */
export function createMemoryStores(options: MemoryStoresOptions = {}): Stores {
  const clock = options.now === undefined ? {} : { now: options.now };
  const state = createMemoryLogState();
  const inner = {
    plans: createMemoryPlanStore(createMemoryLogStore(null, state)),
    calls: createMemoryModelCallStore(),
    checkpoints: createMemoryCheckpointStore(),
  };
  const shared = {
    artifacts: createMemoryArtifactStore(clock),
    summaries: createMemorySummaryCache({
      ...clock,
      ...(options.summaryMaxEntries === undefined ? {} : { maxEntries: options.summaryMaxEntries }),
      ...(options.summaryTtlMs === undefined ? {} : { ttlMs: options.summaryTtlMs }),
    }),
  };
  const bind = (tenant: string, bound = true): Stores => {
    // Checked before anything is built, so a bad tenant is a ValidationError naming the field.
    const log = createMemoryLogStore(checkTenant(tenant), state);
    const access = (threadId: string) => log.access!(threadId);
    return Object.freeze({
      log,
      ...guardThreadStores(inner, access, { unclaimedWrites: bound ? "refuse" : "allow" }),
      ...shared,
      tenant,
      forTenant: (t: string) => bind(t),
      close: async () => {},
      // The raw plan rows behind every tenant's guarded plan store (tests tamper with them as with a database).
      [MEMORY_ROWS]: Reflect.get(inner.plans, MEMORY_ROWS),
    });
  };
  // The unbound stores (a single-tenant deployment's) may still write for a thread before its first append.
  return bind(DEFAULT_TENANT, false);
}
