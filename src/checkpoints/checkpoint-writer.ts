import type { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import type { Stores } from "../stores/stores.js";
import type { StrategyMemo } from "../strategies/strategy-memo.js";
import { type CheckpointBase, checkpointBase, setCheckpointBase } from "./checkpoint-format.js";
import { settle, withTailRead } from "./checkpoint-misses.js";
import { type MadeCheckpoint, makeCheckpoint } from "./make-checkpoint.js";
/** A worker writes a checkpoint without a commit once the log grew this much past the last one it knows. */
export const CHECKPOINT_INTERVAL = 256;

/**
 * Writes checkpoints in the background, one chain per thread (a write never races the one before it), each
 * after the turn that scheduled it has returned. A write uses the newest cached log value still paired with the
 * plan it was scheduled for (turns may have run meanwhile); a plan no longer in force is not written. A write
 * continues the tail of the last checkpoint stored from the same history when it can (only what changed is made
 * and sent), and is whole otherwise. A checkpoint that cannot be made from the log at hand (its tail is gone) is
 * not written; a failed write is reported and changes nothing else: checkpoints only save work.
 */
export class CheckpointWriter {
  readonly #chains = new Map<string, Promise<void>>();
  /** Per thread: the plan version and log length of the newest checkpoint written or loaded here. */
  readonly #known = new Map<string, { readonly version: number; readonly length: number }>();

  constructor(
    private readonly stores: Stores,
    private readonly current: (threadId: string) => { log: ThreadLog; plan: CompactionPlan } | undefined,
    private readonly onError: (threadId: string, error: unknown) => void,
    /** The memos the engine's strategies declare (what a checkpoint carries of them). */
    private readonly kinds: () => Promise<ReadonlyArray<StrategyMemo>> = async () => [],
  ) {}

  /** Notes a checkpoint a worker loaded (the next write is only due after a commit or enough growth). */
  loaded(threadId: string, version: number, length: number): void {
    this.#known.set(threadId, { version, length });
  }

  /** Schedules a checkpoint after a turn: always after a commit, otherwise once the log grew enough. */
  afterTurn(log: ThreadLog, plan: CompactionPlan, committed: boolean): void {
    if (this.stores.checkpoints === undefined || plan.version < 1) return;
    const known = this.#known.get(log.threadId);
    const due =
      committed ||
      known === undefined ||
      known.version !== plan.version ||
      log.length - known.length >= CHECKPOINT_INTERVAL;
    if (due) this.schedule(log, plan);
  }

  /** Schedules a checkpoint of `plan` on `log` (or the newest cached log still paired with `plan`). */
  schedule(log: ThreadLog, plan: CompactionPlan): void {
    const threadId = log.threadId;
    this.#known.set(threadId, { version: plan.version, length: log.length });
    const before = this.#chains.get(threadId) ?? Promise.resolve();
    const next: Promise<void> = before
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(() => this.#write(log, plan))
      .catch((error: unknown) => this.onError(threadId, error))
      .finally(() => {
        if (this.#chains.get(threadId) === next) this.#chains.delete(threadId);
      });
    this.#chains.set(threadId, next);
  }

  async #write(log: ThreadLog, plan: CompactionPlan): Promise<void> {
    const current = this.current(log.threadId);
    if (current !== undefined && current.plan.version > plan.version) return;
    const source = current?.plan === plan && current.log.extends(log) ? current.log : log;
    const checkpoints = this.stores.checkpoints!;
    const base = checkpointBase(source);
    if (base !== undefined) {
      // Continue the tail of the last checkpoint stored from this history: only what changed is made and sent.
      const made = await makeFetching(source, plan, await this.kinds(), base);
      if (made?.extending !== undefined) {
        const outcome = await checkpoints.putExtending(made.checkpoint, made.extending);
        if (outcome === "stored") setCheckpointBase(source, made.next);
        // "exists": another worker stored this key first (its tail is its own); the base stays as it was.
        if (outcome !== "missing") return;
        // The base was trimmed meanwhile: make a whole one.
        setCheckpointBase(source, undefined);
      }
    }
    const made = await makeFetching(source, plan, await this.kinds(), undefined);
    if (made !== undefined && (await checkpoints.put(made.checkpoint))) setCheckpointBase(source, made.next);
  }

  /** Resolves when no write is left (including writes scheduled while waiting). */
  async idle(): Promise<void> {
    while (this.#chains.size > 0) await Promise.allSettled([...this.#chains.values()]);
  }
}

/**
 * `makeCheckpoint`, reading the restored checkpoint's tail first when it asks for it (it asks before any other
 * work, or before anything is kept). Undefined when no checkpoint can be made from this log: it needs what
 * neither it nor the store has any more.
 */
async function makeFetching(
  log: ThreadLog,
  plan: CompactionPlan,
  kinds: ReadonlyArray<StrategyMemo>,
  base: CheckpointBase | undefined,
): Promise<MadeCheckpoint | undefined> {
  const outcome = await withTailRead(async () => makeCheckpoint(log, plan, kinds, base));
  return outcome.missed === undefined ? settle(outcome) : undefined;
}
