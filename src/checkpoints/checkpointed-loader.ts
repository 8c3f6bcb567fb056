import type { LoadedThread, ThreadState } from "../engine/thread-cache.js";
import {
  cachedLoader,
  type LoaderFactory,
  type LoaderParts,
  type ThreadLoader,
} from "../engine/thread-loader.js";
import type { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import { runAttempt, settle, withTailRead } from "./checkpoint-misses.js";
import { CheckpointWriter } from "./checkpoint-writer.js";
import { noteStoredIds } from "./log-checkpoint.js";
import { loadCheckpointed } from "./restore-checkpoint.js";

/** What the checkpointed loader needs from the engine (checkpoint write failures go to `onError`). */
export type CheckpointedLoaderOptions = LoaderParts;

/** The loader factory of the wing: checkpointed loading when the stores keep checkpoints, the default otherwise. */
export const checkpointedLoader: LoaderFactory = (parts) =>
  parts.stores.checkpoints === undefined ? cachedLoader(parts) : new CheckpointedLoader(parts);

/**
 * The loader for stateless workers (docs/ARCHITECTURE.md, "Stateless workers"): a thread this process does not
 * hold starts from its newest thread checkpoint — a partial log holding what the plan renders — instead of the
 * whole stored log, and a checkpoint is written after the operations that make one due. This is the one place
 * that runs work on a partial log and falls back: an operation that read past it runs again on the checkpoint read
 * with its tail (when the tail was all it lacked), then on the whole log.
 */
export class CheckpointedLoader implements ThreadLoader {
  readonly #options: CheckpointedLoaderOptions;
  readonly #writer: CheckpointWriter;

  constructor(options: CheckpointedLoaderOptions) {
    this.#options = options;
    this.#writer = new CheckpointWriter(
      options.stores,
      (threadId) => options.cache.peek(threadId),
      options.onError,
      options.memos,
    );
  }

  async run<T>(threadId: string, work: (thread: LoadedThread) => Promise<T>): Promise<T> {
    let from: "checkpoint" | "checkpoint+tail" | "whole" = "checkpoint";
    let fallback: string | undefined;
    for (;;) {
      const thread = await this.#load(threadId, from);
      const loaded = fallback === undefined ? thread : { ...thread, fallback };
      const outcome = await runAttempt((abandon) => work({ ...loaded, abandon }));
      // A whole log holds everything: nothing it reads can miss.
      if (outcome.missed === undefined || from === "whole") return settle(outcome);
      this.#options.cache.forget(threadId);
      // A second miss (even one the tail would answer: it has been read once) means the whole log.
      from = from === "checkpoint" && outcome.missed.fetch !== undefined ? "checkpoint+tail" : "whole";
      fallback = outcome.missed.message;
    }
  }

  async runOn<T>(
    log: ThreadLog,
    plan: CompactionPlan,
    work: (log: ThreadLog, plan: CompactionPlan, abandon?: AbortSignal) => Promise<T>,
  ): Promise<T> {
    // The tail answers most of what a partial log lacks (e.g. the ids of messages a summary absorbs).
    const outcome = await withTailRead((abandon) => work(log, plan, abandon));
    if (outcome.missed === undefined) return settle(outcome);
    // Run again on the whole log at the same length and on the stored plan, as a worker that had it all would
    // have (a restored plan keeps parts in its checkpoint's tail, which may be gone or unfit by now).
    const { stores, cache } = this.#options;
    const whole = await cache.wholeLog(log.threadId, log.length);
    return work(whole, await stores.plans.get(log.threadId, plan.version));
  }

  whole(threadId: string): Promise<LoadedThread> {
    return this.#options.cache.loadWhole(threadId);
  }

  /**
   * A partial log knows the ids of the messages it does not hold only from its checkpoint's tail: ask the store
   * about the batch's ids instead, so that an append reads no tail.
   */
  async beforeAppend(log: ThreadLog, ids: ReadonlyArray<string>): Promise<void> {
    if (!log.partial) return;
    noteStoredIds(log, ids, await this.#options.stores.log.seqsOf(log.threadId, ids));
  }

  remember(threadId: string, state: ThreadState): void {
    this.#options.cache.remember(threadId, state);
  }

  peek(threadId: string): ThreadState | undefined {
    return this.#options.cache.peek(threadId);
  }

  settled(log: ThreadLog, plan: CompactionPlan, committed: boolean): void {
    this.#writer.afterTurn(log, plan, committed);
  }

  idle(): Promise<void> {
    return this.#writer.idle();
  }

  async #load(threadId: string, from: "checkpoint" | "checkpoint+tail" | "whole"): Promise<LoadedThread> {
    const { stores, counter, cache, memos } = this.#options;
    if (from === "whole") return cache.load(threadId);
    const thread = await cache.load(threadId, {
      partial: true,
      restore: async (version, length) =>
        loadCheckpointed(
          stores,
          counter,
          await memos(),
          threadId,
          version,
          length,
          from === "checkpoint+tail",
        ),
    });
    if (thread.checkpointLength !== undefined) {
      this.#writer.loaded(threadId, thread.plan.version, thread.checkpointLength);
    }
    return thread;
  }
}
