import type { JobRunner } from "../jobs/job-runner.js";
import type { PendingCallMode } from "../render/render-prompt.js";
import type { Stores } from "../stores/stores.js";
import type { TokenBudget } from "../tokens/token-budget.js";
import type { BackgroundJob } from "./background-runs.js";
import type { CalibrationCache } from "./calibration.js";
import type { EventSink } from "./engine-events.js";
import type { EngineSettings } from "./engine-options.js";
import type { EnginePipelines } from "./engine-pipelines.js";
import type { RetryEnvironment } from "./retry-policy.js";
import type { SearchIndexer } from "./search-indexer.js";
import type { StoredCounter } from "./stored-counter.js";
import type { ThreadLoader } from "./thread-loader.js";

/**
 * Runs operations on one thread one at a time within this process (other processes are held off by versions).
 * The engine queues its operations on one; the framework wings queue theirs on another (`extend` exports it).
 *
 * @example
 * const locks = new ThreadLocks();
 * await locks.run("t1", async () => engine.append("t1", messages));
 */
export class ThreadLocks {
  readonly #tails = new Map<string, Promise<unknown>>();

  /** Runs `work` after every earlier operation on the thread has settled. */
  run<T>(threadId: string, work: () => Promise<T>): Promise<T> {
    const before = this.#tails.get(threadId) ?? Promise.resolve();
    const result = before.then(work, work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(threadId, tail);
    void tail.then(() => {
      if (this.#tails.get(threadId) === tail) this.#tails.delete(threadId);
    });
    return result;
  }
}

/** Everything the engine's operations share: stores, counter, budget, pipelines, cache, events, clock. */
export interface EngineCore {
  readonly stores: Stores;
  readonly settings: EngineSettings;
  readonly counter: StoredCounter;
  readonly budget: TokenBudget;
  /**
   * The pipelines the engine runs (turns, background runs, maintenance), built on first use unless the engine was
   * created with them; a read never asks for them.
   */
  readonly pipelines: () => Promise<EnginePipelines>;
  readonly pendingCalls: PendingCallMode;
  readonly events: EventSink;
  /** Where operations get threads from (the in-process cache, thread checkpoints, the stores). */
  readonly loader: ThreadLoader;
  readonly calibration: CalibrationCache;
  readonly locks: ThreadLocks;
  /** Where background summaries run: in this process, or on the stores' durable queue. */
  readonly jobs: JobRunner<BackgroundJob>;
  /** Indexes threads for search in the background after appends. */
  readonly indexer: SearchIndexer;
  readonly now: () => number;
  readonly newCallId: () => string;
  /** The clock, chance and sleep of conflict retries (the system's; tests of the policy inject their own). */
  readonly retryEnvironment: RetryEnvironment;
}
