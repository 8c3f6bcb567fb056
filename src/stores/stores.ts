import type { ArtifactStore } from "./artifact-store.js";
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
  /** Releases the backend (closes the database or pool it opened); the stores are unusable afterwards. */
  close(): Promise<void>;
}

/** A clock in epoch milliseconds; injectable so TTLs can be tested without waiting. */
export type Clock = () => number;
