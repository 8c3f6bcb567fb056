import type { JobObserver, JobOutcome, JobRunner, JobSpec, PendingJobs } from "./job-runner.js";
import { pause } from "./job-runner.js";

/**
 * Runs jobs as promises of this process, at most one per thread (a second job for a thread with one in flight is
 * not queued): the engine's behaviour before durable queues, and the default for memory and SQLite stores. A job
 * waits for `after` (the rest of the turn that queued it) and then for the event loop's next check phase, so the
 * turn's caller has its request before the job takes the event loop. A failed job is not retried.
 */
export class InProcessRunner<J> implements JobRunner<J> {
  readonly kind = "in-process" as const;
  readonly #inFlight = new Map<string, { started: boolean; done: Promise<void> }>();
  readonly #failed = new Map<string, number>();
  #closed = false;

  constructor(
    private readonly spec: JobSpec<J>,
    private readonly observer: JobObserver,
  ) {}

  async enqueue(job: J, after: Promise<unknown> = Promise.resolve()): Promise<boolean> {
    const threadId = this.spec.threadOf(job);
    if (this.#closed || this.#inFlight.has(threadId)) return false;
    const entry: { started: boolean; done: Promise<void> } = { started: false, done: Promise.resolve() };
    entry.done = after
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(async () => {
        entry.started = true;
        await this.#run(job, threadId);
      })
      .finally(() => this.#inFlight.delete(threadId));
    this.#inFlight.set(threadId, entry);
    return true;
  }

  async #run(job: J, threadId: string): Promise<void> {
    const note = { key: this.spec.keyOf(job), threadId, runner: this.kind, attempt: 1, attempts: 1 };
    this.observer.started(note);
    const t0 = performance.now();
    let outcome: JobOutcome;
    try {
      outcome = await this.spec.run(job);
    } catch (error) {
      outcome = { kind: "failed", error };
    }
    if (outcome.kind === "failed") this.#failed.set(threadId, (this.#failed.get(threadId) ?? 0) + 1);
    this.observer.settled(note, outcome, performance.now() - t0, true);
  }

  async start(): Promise<void> {}

  async pending(threadId?: string): Promise<PendingJobs> {
    const entries = [...this.#inFlight.entries()].filter(([t]) => threadId === undefined || t === threadId);
    const running = entries.filter(([, e]) => e.started).length;
    const failed =
      threadId === undefined
        ? [...this.#failed.values()].reduce((a, b) => a + b, 0)
        : (this.#failed.get(threadId) ?? 0);
    return { queued: entries.length - running, running, failed };
  }

  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight.values()].map((e) => e.done));
  }

  async close(timeoutMs: number): Promise<void> {
    this.#closed = true;
    await Promise.race([this.idle(), pause(timeoutMs)]);
  }

  /** Jobs in flight (queued or running). */
  get size(): number {
    return this.#inFlight.size;
  }
}
