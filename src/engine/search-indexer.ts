import type { LogStore } from "../stores/log-store.js";

/**
 * Brings threads' search indexes up to date in the background after appends (`LogStore.indexForSearch`), so a
 * model's recall rarely waits for indexing, while the append that wrote the messages returns without it. Like
 * the checkpoint writer, one chain per thread: a catch-up never races the one before it, and one that has not
 * started yet covers every append made meanwhile, so a burst of appends queues at most one more. A failure is
 * reported and changes nothing else: the next search indexes whatever is left.
 */
export class SearchIndexer {
  readonly #chains = new Map<string, Promise<void>>();
  /** Threads whose next catch-up is queued but not started. */
  readonly #waiting = new Set<string>();

  constructor(
    private readonly log: LogStore,
    private readonly onError: (threadId: string, error: unknown) => void,
  ) {}

  /** Schedules a catch-up of the thread after the caller's turn has returned (nothing when the store cannot). */
  afterAppend(threadId: string): void {
    if (this.log.indexForSearch === undefined || this.#waiting.has(threadId)) return;
    this.#waiting.add(threadId);
    const before = this.#chains.get(threadId) ?? Promise.resolve();
    const next: Promise<void> = before
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(() => {
        this.#waiting.delete(threadId);
        return this.log.indexForSearch?.(threadId);
      })
      .catch((error: unknown) => this.onError(threadId, error))
      .finally(() => {
        if (this.#chains.get(threadId) === next) this.#chains.delete(threadId);
      });
    this.#chains.set(threadId, next);
  }

  /** Resolves when no catch-up is left (including ones scheduled while waiting). */
  async idle(): Promise<void> {
    while (this.#chains.size > 0) await Promise.allSettled([...this.#chains.values()]);
  }
}
