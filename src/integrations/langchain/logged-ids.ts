import type { ContextEngine } from "../../engine/context-engine.js";
import { BoundedCache } from "../../tokens/bounded-cache.js";

/** What the middleware reads of the engine to learn which messages a thread's log already holds. */
export type LocatePort = Pick<ContextEngine, "locateMessages">;

/**
 * The ids of the messages each thread's log holds, as far as one middleware needs to know: an id it has not seen
 * yet is looked up in the log (`engine.locateMessages`, an index lookup per id, not a read of the whole log),
 * and what the middleware appends is added as it goes. So a call asks the log only about the messages that are
 * new to this process; a message another process appended is found there and not appended twice. Recently used
 * threads are remembered (about `maxThreads`, `BoundedCache`); a forgotten thread is asked about again.
 */
export class LoggedIds {
  readonly #threads: BoundedCache<string, Set<string>>;
  readonly #engine: LocatePort;

  constructor(engine: LocatePort, maxThreads = 1_000) {
    this.#engine = engine;
    // A BoundedCache holds up to two generations of `capacity` entries.
    this.#threads = new BoundedCache(maxThreads <= 0 ? 0 : Math.max(1, Math.ceil(maxThreads / 2)));
  }

  /** Which of `ids` the thread's log holds. */
  async held(threadId: string, ids: ReadonlyArray<string>): Promise<ReadonlySet<string>> {
    let known = this.#threads.get(threadId);
    if (known === undefined) {
      known = new Set();
      this.#threads.set(threadId, known);
    }
    const unseen = ids.filter((id) => !known.has(id));
    if (unseen.length > 0) {
      const { seqs } = await this.#engine.locateMessages(threadId, unseen);
      for (const id of seqs.keys()) known.add(id);
    }
    return known;
  }

  /** Records ids just appended to the thread's log. */
  add(threadId: string, ids: ReadonlyArray<string>): void {
    const known = this.#threads.get(threadId);
    if (known === undefined) return; // forgotten meanwhile: the next call asks the log again
    for (const id of ids) known.add(id);
  }
}
