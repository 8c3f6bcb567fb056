import type { ArtifactStore } from "./artifact-store.js";
import type { CheckpointStore } from "./checkpoint-store.js";
import type { JobQueueFactory } from "./job-queue.js";
import type { LogStore } from "./log-store.js";
import type { ModelCallStore } from "./model-call-store.js";
import type { PlanStore } from "./plan-store.js";
import type { SummaryCache } from "./summary-cache.js";

/** Every store the engine needs, from one backend, plus a way to release its connections. */
export interface Stores {
  readonly log: LogStore;
  readonly plans: PlanStore;
  readonly artifacts: ArtifactStore;
  readonly summaries: SummaryCache;
  readonly calls: ModelCallStore;
  /**
   * Thread checkpoints, so a worker without a cache starts from a few rows. Optional: stores written before
   * checkpoints (or elsewhere) keep working, but without it every worker without a cache loads the whole log.
   */
  readonly checkpoints?: CheckpointStore;
  /**
   * The tenant these stores act for (`default` unless bound with `forTenant`): the log, plans, model calls and
   * checkpoints of another tenant's thread are refused with `ThreadAccessError`. Absent on stores written
   * before tenancy (they keep none).
   */
  readonly tenant?: string;
  /**
   * The same backend (same database, pool or memory) acting for another tenant; closing either closes both.
   * The engine binds the stores it is given to its `tenant` with it.
   */
  forTenant?(tenant: string): Stores;
  /**
   * A durable queue for background jobs in the same database, when the backend keeps one (PostgreSQL does): the
   * engine then queues summaries there by default, for any worker on the database to run (docs/decisions/0020).
   */
  readonly jobQueue?: JobQueueFactory;
  /** Releases the backend (closes the database or pool it opened); the stores are unusable afterwards. */
  close(): Promise<void>;
}

/** A clock in epoch milliseconds; injectable so TTLs can be tested without waiting. */
export type Clock = () => number;
