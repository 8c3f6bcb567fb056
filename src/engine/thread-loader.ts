import type { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import type { Stores } from "../stores/stores.js";
import type { StrategyMemo } from "../strategies/strategy-memo.js";
import type { StoredCounter } from "./stored-counter.js";
import type { LoadedThread, ThreadCache, ThreadState } from "./thread-cache.js";

/**
 * Where the engine's operations get a thread's log and plan from, and whom they tell what they left behind. The
 * default (`CachedLoader`) keeps recent threads in process and loads the whole stored log otherwise. A loader may
 * hand out partial logs (the checkpoint wing does, for stateless workers); it then runs an operation again on more
 * of the thread when the operation read past what it loaded. An operation's body must therefore read everything it
 * needs before it commits anything — every operation of the engine does.
 */
export interface ThreadLoader {
  /** Runs `work` on the thread's current log and plan (more than once when a partial log proved too little). */
  run<T>(threadId: string, work: (thread: LoadedThread) => Promise<T>): Promise<T>;
  /**
   * Runs `work` on a log value and plan an earlier operation loaded (a background run on what its turn saw); when
   * that log proved too little, on the whole stored log at its length and the stored plan of that version.
   */
  runOn<T>(
    log: ThreadLog,
    plan: CompactionPlan,
    work: (log: ThreadLog, plan: CompactionPlan, abandon?: AbortSignal) => Promise<T>,
  ): Promise<T>;
  /** The thread's whole current log and plan, never partial (audits: render, explain, diff). */
  whole(threadId: string): Promise<LoadedThread>;
  /** Checks a batch's ids against what the stores hold before they are appended to `log`. */
  beforeAppend(log: ThreadLog, ids: ReadonlyArray<string>): Promise<void>;
  /** Remembers the state an operation left a thread in, for the next operation in this process. */
  remember(threadId: string, state: ThreadState): void;
  /** The remembered state of a thread, if any. */
  peek(threadId: string): ThreadState | undefined;
  /** Hears that `plan` is in force on `log` after an operation (`committed`: the operation committed it). */
  settled(log: ThreadLog, plan: CompactionPlan, committed: boolean): void;
  /** Resolves when the loader's own background work (e.g. checkpoint writes) is done. */
  idle(): Promise<void>;
}

/** The default loader: the in-process cache, and the whole stored log for a thread it does not hold. */
export class CachedLoader implements ThreadLoader {
  constructor(private readonly cache: ThreadCache) {}

  async run<T>(threadId: string, work: (thread: LoadedThread) => Promise<T>): Promise<T> {
    return work(await this.cache.load(threadId));
  }

  runOn<T>(
    log: ThreadLog,
    plan: CompactionPlan,
    work: (log: ThreadLog, plan: CompactionPlan) => Promise<T>,
  ): Promise<T> {
    return work(log, plan);
  }

  whole(threadId: string): Promise<LoadedThread> {
    return this.cache.loadWhole(threadId);
  }

  async beforeAppend(): Promise<void> {}

  remember(threadId: string, state: ThreadState): void {
    this.cache.remember(threadId, state);
  }

  peek(threadId: string): ThreadState | undefined {
    return this.cache.peek(threadId);
  }

  settled(): void {}

  async idle(): Promise<void> {}
}

/** What the engine gives a loader it creates. */
export interface LoaderParts {
  readonly stores: Stores;
  readonly counter: StoredCounter;
  /** The engine's in-process cache of recently used threads. */
  readonly cache: ThreadCache;
  /** The memos the engine's strategies declare (`Strategy.memo`), once its pipelines are built. */
  readonly memos: () => Promise<ReadonlyArray<StrategyMemo>>;
  /** Reports a failure of the loader's own background work as an engine `error` event. */
  readonly onError: (threadId: string, error: unknown) => void;
}

/** Creates an engine's loader (see `createEngine`). */
export type LoaderFactory = (parts: LoaderParts) => ThreadLoader;

/** The default factory: `CachedLoader`. */
export const cachedLoader: LoaderFactory = (parts) => new CachedLoader(parts.cache);
