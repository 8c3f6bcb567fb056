import type { DurableJobQueue, TakenJob } from "../stores/job-queue.js";
import type { JobObserver, JobOutcome, JobRunner, PendingJobs } from "./job-runner.js";

/** What the queue runner needs of a job: its key and thread, its JSON data, and how to run a job from that data. */
export interface QueuedJobSpec<J> {
  keyOf(job: J): string;
  threadOf(job: J): string;
  toData(job: J): Readonly<Record<string, unknown>>;
  /** Runs a job from its data, in whichever worker took it. */
  runData(threadId: string, data: Readonly<Record<string, unknown>>): Promise<JobOutcome>;
}

/** Thrown back to the queue so that it retries (or, after the last attempt, fails) a job whose attempt failed. */
export class JobAttemptError extends Error {
  constructor(
    readonly key: string,
    cause: unknown,
  ) {
    super(`background job ${key} failed: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
    this.name = "JobAttemptError";
  }
}

/**
 * Runs jobs through a durable queue: `enqueue` adds the job to the database (idempotent by key) before it returns,
 * so the job outlives this process; any worker on the database that started taking jobs (`start`, or its first
 * enqueue when `work` is on) may run it. A failed attempt is thrown back to the queue, which retries it until its
 * attempts are spent.
 */
export class QueueRunner<J> implements JobRunner<J> {
  readonly kind = "queue" as const;
  #queue: DurableJobQueue | undefined;
  readonly #running = new Set<Promise<unknown>>();
  #started: Promise<void> | undefined;
  #closed = false;

  constructor(
    private readonly open: () => DurableJobQueue,
    private readonly spec: QueuedJobSpec<J>,
    private readonly observer: JobObserver,
    private readonly work: boolean,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  get #q(): DurableJobQueue {
    this.#queue ??= this.open();
    return this.#queue;
  }

  async enqueue(job: J): Promise<boolean> {
    if (this.#closed) return false;
    const added = await this.#q.add({
      key: this.spec.keyOf(job),
      threadId: this.spec.threadOf(job),
      data: this.spec.toData(job),
    });
    // A worker that cannot start taking jobs still queued this one: another worker will run it.
    if (this.work) await this.start().catch(this.onError);
    return added;
  }

  start(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#started ??= this.#q
      .work((job) => this.#handle(job))
      .catch((error: unknown) => {
        this.#started = undefined;
        throw error;
      });
    return this.#started;
  }

  async #handle(job: TakenJob): Promise<void> {
    const note = {
      key: job.key,
      threadId: job.threadId,
      runner: this.kind,
      attempt: job.attempt,
      attempts: job.attempts,
    };
    this.observer.started(note);
    const t0 = performance.now();
    const run = this.spec
      .runData(job.threadId, job.data)
      .catch((error: unknown): JobOutcome => ({ kind: "failed", error }));
    this.#running.add(run);
    let outcome: JobOutcome;
    try {
      outcome = await run;
    } finally {
      this.#running.delete(run);
    }
    const final = outcome.kind !== "failed" || job.attempt >= job.attempts;
    this.observer.settled(note, outcome, performance.now() - t0, final);
    if (outcome.kind === "failed") throw new JobAttemptError(job.key, outcome.error);
  }

  pending(threadId?: string): Promise<PendingJobs> {
    return this.#q.counts(threadId);
  }

  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  async close(timeoutMs: number): Promise<void> {
    this.#closed = true;
    await this.#queue?.stop(timeoutMs);
  }
}
