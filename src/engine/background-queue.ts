/** The background runs of one engine: at most one per thread, awaitable with `idle`. */
export class BackgroundRuns {
  readonly #running = new Map<string, Promise<void>>();

  /**
   * Starts `run` for a thread unless one is already running for it; returns whether it started. The run waits
   * for `after` (the rest of the turn that queued it, which may await a store) and then for the event loop's
   * next check phase, so that the turn's caller has its request before the run takes the event loop.
   */
  start(threadId: string, run: () => Promise<void>, after: Promise<unknown> = Promise.resolve()): boolean {
    if (this.#running.has(threadId)) return false;
    const done = after
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(run)
      .finally(() => this.#running.delete(threadId));
    this.#running.set(threadId, done);
    return true;
  }

  /** Resolves when no background run is left (including runs started while waiting). */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running.values()]);
  }

  /** Number of runs in flight. */
  get size(): number {
    return this.#running.size;
  }
}
