import { NotFoundError } from "../../errors/ledger-error.js";

/** What the middleware reads of the engine to learn which messages a thread's log already holds. */
export interface ExplainPort {
  explain(threadId: string): Promise<{ readonly rows: ReadonlyArray<{ readonly id: string }> }>;
}

/**
 * The ids of the messages each thread's log holds, as far as one middleware knows: read from the engine the
 * first time a thread is seen in this process (one read of its log), then kept up to date with what the
 * middleware appends. At most `maxThreads` threads are remembered, the least recently used forgotten first (a
 * forgotten thread is read again when it comes back).
 */
export class LoggedIds {
  readonly #threads = new Map<string, Set<string>>();
  readonly #engine: ExplainPort;
  readonly #maxThreads: number;

  constructor(engine: ExplainPort, maxThreads = 1_000) {
    this.#engine = engine;
    this.#maxThreads = maxThreads;
  }

  /** The ids the thread's log holds (a thread the stores do not know holds none). */
  async of(threadId: string): Promise<ReadonlySet<string>> {
    const known = this.#threads.get(threadId);
    if (known !== undefined) {
      // Most recently used last, so that the first key is the one to forget.
      this.#threads.delete(threadId);
      this.#threads.set(threadId, known);
      return known;
    }
    let ids: Set<string>;
    try {
      ids = new Set((await this.#engine.explain(threadId)).rows.map((row) => row.id));
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      ids = new Set();
    }
    this.#threads.set(threadId, ids);
    while (this.#threads.size > this.#maxThreads) {
      this.#threads.delete(this.#threads.keys().next().value as string);
    }
    return ids;
  }

  /** Records ids just appended to the thread's log. */
  add(threadId: string, ids: ReadonlyArray<string>): void {
    const known = this.#threads.get(threadId);
    if (known === undefined) return; // forgotten meanwhile: the next `of` reads the log again
    for (const id of ids) known.add(id);
  }
}
