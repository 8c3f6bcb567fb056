import type { JobCounts } from "../stores/job-queue.js";

/**
 * Where background jobs run (docs/decisions/0020): `in-process` (a promise in the engine that queued them, the
 * default for memory and SQLite stores) or `queue` (the stores' durable queue, the default for PostgreSQL).
 */
export type JobRunnerKind = "in-process" | "queue";

/** Background jobs waiting, running, and given up on after their attempts. */
export type PendingJobs = JobCounts;

/** How one attempt at a job ended: its result committed, left unused (and why), or failed. */
export type JobOutcome =
  | { readonly kind: "committed"; readonly planVersion: number }
  | { readonly kind: "discarded"; readonly reason: string }
  | { readonly kind: "failed"; readonly error: unknown };

/** What a runner tells about the jobs it runs (the engine turns it into events). */
export interface JobObserver {
  started(job: JobNote): void;
  /** An attempt ended; `final` when no attempt follows (always, unless it failed with attempts left). */
  settled(job: JobNote, outcome: JobOutcome, durationMs: number, final: boolean): void;
}

/** Which job, and which of its attempts. */
export interface JobNote {
  readonly key: string;
  readonly threadId: string;
  readonly runner: JobRunnerKind;
  readonly attempt: number;
  readonly attempts: number;
}

/**
 * Runs background jobs of type `J`. Enqueue is keyed: a second job with a key already queued (or, in process, a
 * second job for a thread with one in flight) is not queued again, and the answer is false.
 *
 * @example
 * const queued = await runner.enqueue(job, turnDone); // true the first time
 * await runner.pending("t1"); // { queued: 1, running: 0, failed: 0 }
 * await runner.close(10_000);
 */
export interface JobRunner<J> {
  readonly kind: JobRunnerKind;
  /** Queues a job, to start no earlier than `after` settles. */
  enqueue(job: J, after?: Promise<unknown>): Promise<boolean>;
  /** Starts taking jobs queued by anyone (the queue runner; in process, jobs start as they are queued). */
  start(): Promise<void>;
  /** The jobs of one thread, or of all. */
  pending(threadId?: string): Promise<PendingJobs>;
  /** Resolves when no job this process runs is in flight (including jobs started while waiting). */
  idle(): Promise<void>;
  /**
   * Stops taking jobs, waits up to `timeoutMs` for the running ones, and leaves the rest queued (in process:
   * a job not finished by then goes on, but nothing new starts).
   */
  close(timeoutMs: number): Promise<void>;
}

/** What a runner needs to know of a job: its key and thread, and how to run it. */
export interface JobSpec<J> {
  keyOf(job: J): string;
  threadOf(job: J): string;
  run(job: J): Promise<JobOutcome>;
}

/** Resolves after `ms`, or at once when `ms` is 0; the timer does not keep the process alive. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
