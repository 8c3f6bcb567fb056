/**
 * A durable job queue: background jobs kept in the database beside the stores, so that any worker on that
 * database may run them and a job outlives the worker that queued it (docs/decisions/0020). A backend that can
 * keep one offers it as `Stores.jobQueue`; the PostgreSQL stores do (on pg-boss). The engine's queue runner
 * (`src/jobs/queue-runner.ts`) is its only user: the queue knows nothing of what a job does.
 */

/** A job as queued: a key naming it for good, the thread it belongs to and JSON data. */
export interface QueuedJob {
  /** Names the job: adding a second job with the same key adds nothing. */
  readonly key: string;
  readonly threadId: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/** A job as a worker takes it: which attempt this is (1 for the first) of how many it may have. */
export interface TakenJob extends QueuedJob {
  readonly attempt: number;
  readonly attempts: number;
}

/** Jobs waiting (`queued`, retries included), being run (`running`) and given up on after their attempts (`failed`). */
export interface JobCounts {
  readonly queued: number;
  readonly running: number;
  readonly failed: number;
}

/** How a durable queue retries and how a worker takes jobs. */
export interface JobQueueSettings {
  /** A running job not finished after this long is taken as lost (its worker died) and retried. */
  readonly visibilityTimeoutMs: number;
  /** Attempts a job may have, the first included; after the last it is failed. */
  readonly attempts: number;
  /** Pause before a failed attempt is retried. */
  readonly retryDelayMs: number;
  /** Jobs one worker runs at once. */
  readonly concurrency: number;
  /** How often an idle worker looks for jobs. */
  readonly pollIntervalMs: number;
  /** How often lost jobs are looked for (expired ones retried, old ones archived). */
  readonly maintenanceIntervalMs: number;
}

/**
 * The queue. `add` is idempotent by key; `work` runs jobs of one thread one at a time across every worker on the
 * database (so two workers never compute one thread's background work at once), and a handler that throws fails
 * that attempt, to be retried after `retryDelayMs` until `attempts` are spent.
 *
 * @example
 * const queue = stores.jobQueue?.(settings);
 * await queue?.add({ key: "t1/v4", threadId: "t1", data: { planVersion: 4 } }); // true; again: false
 * await queue?.work(async (job) => summarize(job.data));
 * await queue?.stop(10_000);
 */
export interface DurableJobQueue {
  /** Queues a job; false when a job with its key exists already (queued, running or done). */
  add(job: QueuedJob): Promise<boolean>;
  /** Starts taking jobs in this process, calling `handle` for each. */
  work(handle: (job: TakenJob) => Promise<void>): Promise<void>;
  /** The jobs of one thread, or of all. */
  counts(threadId?: string): Promise<JobCounts>;
  /**
   * Stops taking jobs and waits up to `timeoutMs` for the running ones; one still running then is given back (its
   * attempt failed, to be retried elsewhere). Jobs not started stay queued.
   */
  stop(timeoutMs: number): Promise<void>;
}

/** Opens a stores bundle's durable queue with the given settings. */
export type JobQueueFactory = (
  settings: JobQueueSettings,
  /** Hears failures of the queue's own background work (polling, maintenance); they are retried, never thrown. */
  onError?: (error: unknown) => void,
) => DurableJobQueue;
