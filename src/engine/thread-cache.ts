import type { Message, MessageInput } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import type { RenderedPrompt } from "../render/rendered-prompt.js";
import type { StoredMessage, TokenCountUpdate } from "../stores/log-store.js";
import type { PlanStore } from "../stores/plan-store.js";
import type { Stores } from "../stores/stores.js";
import type { StoredCounter } from "./stored-counter.js";

/** What the engine knows of a thread between turns. */
export interface ThreadState {
  readonly log: ThreadLog;
  readonly plan: CompactionPlan;
  /** The last request rendered for the thread in this process (for the unchanged-prefix figure). */
  readonly previous?: RenderedPrompt;
}

/**
 * A thread as loaded for an operation, and where it came from: the in-process cache (`warm`), a thread checkpoint
 * and the rows that render (`checkpoint`, docs/decisions/0009), or the whole stored log (`cold`).
 */
export interface LoadedThread extends ThreadState {
  readonly source: "warm" | "cold" | "checkpoint";
  /** For `checkpoint`: the log length the checkpoint was written at. */
  readonly checkpointLength?: number;
  /** Milliseconds the load took. */
  readonly loadMs?: number;
  /** Why this load read more than the one before it (an operation that read past a partial log runs again). */
  readonly fallback?: string;
  /**
   * Aborted when the operation read past a partial log: its result will not count, so long work should stop
   * (a pipeline stops at its next step).
   */
  readonly abandon?: AbortSignal;
}

/** A thread state restored from elsewhere than the log store (a thread checkpoint). */
export interface RestoredState {
  readonly log: ThreadLog;
  readonly plan: CompactionPlan;
  /** The log length the state was saved at. */
  readonly checkpointLength: number;
}

/** How `ThreadCache.load` may start a thread it does not hold. */
export interface LoadOptions {
  /** Whether a cached partial log (`log.partial`) may be used; otherwise only a whole one. */
  readonly partial?: boolean;
  /** Restores the thread at plan `version` and log `length` from elsewhere; undefined: read the whole log. */
  readonly restore?: (version: number, length: number) => Promise<RestoredState | undefined>;
}

/** The append input that rebuilds a stored message (seq and hash are derived again). */
export function inputOf(message: Message): MessageInput {
  return { id: message.id, role: message.role, parts: message.parts, meta: message.meta };
}

/**
 * Loads threads for the engine and keeps the latest log value and plan of recently used threads in process.
 * Each load asks the stores two cheap questions (plan versions, then log length — in that order, so a plan is
 * never newer than the log it is paired with); a warm thread then reads only the appended tail, and the plan
 * only when another worker committed a newer version.
 */
export class ThreadCache {
  readonly #entries = new Map<string, ThreadState>();

  constructor(
    private readonly stores: Stores,
    private readonly counter: StoredCounter,
    private readonly capacity: number,
  ) {}

  /**
   * The thread's current log and latest plan: the cached state extended by what was appended since, else what
   * `options.restore` gives, else the whole stored log. A cached partial log is used only with `options.partial`.
   */
  async load(threadId: string, options: LoadOptions = {}): Promise<LoadedThread> {
    const t0 = performance.now();
    const version = await latestVersion(this.stores.plans, threadId);
    const length = await this.stores.log.length(threadId);
    const entry = this.#entries.get(threadId);
    const cached = options.partial === true || entry?.log.partial === false ? entry : undefined;
    const warm = cached !== undefined && cached.log.length <= length;
    if (!warm && options.restore !== undefined) {
      const restored = await options.restore(version, length);
      if (restored !== undefined) {
        // The plan store learns the restored version as if it had read it, so the next commit is a delta.
        await this.stores.plans.adopt?.(restored.plan);
        return { ...restored, source: "checkpoint", loadMs: performance.now() - t0 };
      }
    }
    let log = warm ? cached.log : ThreadLog.empty(threadId);
    if (length > log.length) log = await this.#extend(log, length);
    const plan =
      warm && cached.plan.version === version ? cached.plan : await this.stores.plans.get(threadId, version);
    const previous = warm ? cached.previous : undefined;
    return {
      log,
      plan,
      source: warm ? "warm" : "cold",
      loadMs: performance.now() - t0,
      ...(previous === undefined ? {} : { previous }),
    };
  }

  /**
   * `load` for an audit, which reads every message: a cold load is kept, so the next operation on the thread (the
   * render after an explain, a turn after an audit) reads no row again.
   */
  async loadWhole(threadId: string): Promise<LoadedThread> {
    const loaded = await this.load(threadId);
    if (loaded.source === "cold" && loaded.log.length > 0) {
      this.remember(threadId, { log: loaded.log, plan: loaded.plan });
    }
    return loaded;
  }

  /**
   * The thread's first `length` stored messages as one whole log, their stored token counts seeded (a background
   * run redoing on the whole log what a checkpoint's projection could not).
   */
  wholeLog(threadId: string, length: number): Promise<ThreadLog> {
    return this.#extend(ThreadLog.empty(threadId), length);
  }

  /** Remembers a thread's state after an operation (most recently used last). */
  remember(threadId: string, state: ThreadState): void {
    this.#entries.delete(threadId);
    if (this.capacity <= 0) return;
    this.#entries.set(threadId, state);
    if (this.#entries.size > this.capacity) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }

  /** The remembered state of a thread, if any. */
  peek(threadId: string): ThreadState | undefined {
    return this.#entries.get(threadId);
  }

  /** Forgets a thread (after a conflict, so the next load reads the stores). */
  forget(threadId: string): void {
    this.#entries.delete(threadId);
  }

  /** Reads messages [log.length, length) and appends them, using and completing their stored token counts. */
  async #extend(log: ThreadLog, length: number): Promise<ThreadLog> {
    const entries = await this.stores.log.read(log.threadId, log.length, length);
    const from = log.length;
    for (const entry of entries) {
      const n = entry.tokens[this.counter.id];
      if (n !== undefined) this.counter.seed(entry.message.hash, n);
    }
    // The store validated these rows and holds their hashes: rebuild without checking or hashing them again
    // (replay keeps the checking path, which is what notices a row changed after it was stored).
    const extended = log.appendTrusted(entries.map((e) => e.message));
    await this.#storeMissingCounts(extended, from, entries);
    return extended;
  }

  async #storeMissingCounts(
    log: ThreadLog,
    from: number,
    entries: ReadonlyArray<StoredMessage>,
  ): Promise<void> {
    const updates: TokenCountUpdate[] = [];
    entries.forEach((entry, i) => {
      if (entry.tokens[this.counter.id] !== undefined) return;
      const message = log.at(from + i)!;
      updates.push({
        seq: from + i,
        tokens: { [this.counter.id]: this.counter.countMessage(message, message.hash) },
      });
    });
    if (updates.length === 0) return;
    try {
      await this.stores.log.setTokenCounts(log.threadId, updates);
    } catch {
      // Only an optimisation for the next worker (it would count them itself); a failed write changes nothing.
    }
  }
}

/** The newest committed plan version of a thread (0 when none), in O(1) when the store can tell. */
export async function latestVersion(plans: PlanStore, threadId: string): Promise<number> {
  if (plans.latestVersion !== undefined) return plans.latestVersion(threadId);
  const versions = await plans.versions(threadId);
  return versions[versions.length - 1] ?? 0;
}
