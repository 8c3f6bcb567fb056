import type { PipelineSuccess } from "../compaction/pipeline-types.js";
import { MessageNotLoadedError, VersionConflictError } from "../errors/ledger-error.js";
import type { ThreadLog } from "../log/thread-log.js";
import { type CompactionPlan, nextPlan } from "../plan/compaction-plan.js";
import { compactionTarget, type TokenBudget } from "../tokens/token-budget.js";
import { withTailRead } from "./checkpoint-tail.js";
import { commitPlan, reportError, reportSteps } from "./compaction-steps.js";
import type { EngineCore } from "./engine-core.js";
import { latestVersion } from "./thread-cache.js";

/** A background compaction with the model strategies, queued by a turn that had to compact. */
export interface BackgroundJob {
  readonly threadId: string;
  /** The log the turn saw. */
  readonly log: ThreadLog;
  /** The plan in force before the turn compacted: the background run starts from it. */
  readonly basePlan: CompactionPlan;
  /** The plan the turn left in force (its deterministic fallback); the result replaces it only if still latest. */
  readonly replaces: CompactionPlan;
  readonly budget: TokenBudget;
  /** History tokens under `replaces`. */
  readonly tokensAfter: number;
  /** The calibration ratio already applied to `budget` (reported in events). */
  readonly calibrationRatio: number;
}

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

/**
 * Queues a background run for a job, to start once `after` settles; returns false when one is already running
 * for the thread.
 */
export function scheduleBackground(core: EngineCore, job: BackgroundJob, after?: Promise<unknown>): boolean {
  const started = core.jobs.start(job.threadId, () => runJob(core, job), after);
  if (started) {
    core.events.emit("background_scheduled", job.threadId, {
      basedOnVersion: job.basePlan.version,
      replacesVersion: job.replaces.version,
    });
  }
  return started;
}

function discard(core: EngineCore, job: BackgroundJob, reason: string): void {
  core.events.emit("background_discarded", job.threadId, { reason });
}

/**
 * Runs the whole pipeline (model strategies included) from the plan in force before the turn compacted, and
 * commits its plan in place of the turn's fallback plan when that is still the latest version. Anything else
 * (a failed run, no model strategy applied, a newer plan meanwhile, a store error) changes nothing.
 */
async function runJob(core: EngineCore, job: BackgroundJob): Promise<void> {
  const t0 = performance.now();
  try {
    core.events.emit("check_started", job.threadId, {
      operation: "background",
      logSeq: job.log.length,
      planVersion: job.basePlan.version,
      target: compactionTarget(job.budget),
      calibrationRatio: job.calibrationRatio,
    });
    const input = { plan: job.basePlan, counter: core.counter, budget: job.budget };
    let ranOn = job.log;
    let result = await core.full.run({ ...input, log: ranOn });
    if (!result.ok && result.error instanceof MessageNotLoadedError && result.error.fetch !== undefined) {
      // The run named messages the turn's projection does not hold (a summary absorbing an earlier one): read
      // the checkpoint's tail, which has their ids, and run again on the projection (the summarizer's answer
      // is in the summary cache by now).
      await result.error.fetch();
      result = await core.full.run({ ...input, log: ranOn });
    }
    if (!result.ok && result.error instanceof MessageNotLoadedError) {
      // The turn's log came from a checkpoint and the run needed more of it: run again on the whole log at the
      // same length and on the stored plan, as a worker that had it all would have (the restored plan keeps
      // parts in the checkpoint's tail, which may be gone or unfit by now).
      ranOn = await core.cache.wholeLog(job.threadId, job.log.length);
      const plan = await core.stores.plans.get(job.threadId, job.basePlan.version);
      result = await core.full.run({ ...input, plan, log: ranOn });
    }
    reportSteps(core, "background", job.threadId, result.report);
    if (!result.ok) return discard(core, job, `the run failed: ${result.error.message}`);
    if (!result.report.steps.some((s) => s.cost === "model" && s.outcome === "applied")) {
      return discard(core, job, "no model strategy applied anything");
    }
    const committed = await core.locks.run(job.threadId, () => commitJob(core, job, result, ranOn));
    if (!committed) return;
    core.events.emit("completed", job.threadId, {
      operation: "background",
      durationMs: performance.now() - t0,
      tokens: result.report.tokensAfter,
      tokensBefore: job.tokensAfter,
      compacted: true,
    });
  } catch (error) {
    reportError(core, "background", job.threadId, error);
  }
}

/**
 * Commits the run's plan if the plan it replaces is still the latest; returns whether it did. `ranOn` is the
 * log the run worked on (the whole log when the turn's projection was not enough): the checkpoint is made of it.
 */
async function commitJob(
  core: EngineCore,
  job: BackgroundJob,
  result: PipelineSuccess,
  ranOn: ThreadLog,
): Promise<boolean> {
  const latest = await latestVersion(core.stores.plans, job.threadId);
  if (latest !== job.replaces.version) {
    discard(core, job, `plan v${job.replaces.version} is no longer the latest (now v${latest})`);
    return false;
  }
  const plan = nextPlan(job.replaces, result.plan.actions, result.plan.basedOnSeq);
  const figures = { tokensBefore: job.tokensAfter, tokensAfter: result.report.tokensAfter };
  try {
    const added = result.plan.actions.slice(job.basePlan.actions.length);
    // A version written whole (every so many deltas) lists every span: a restored plan reads the ids it does
    // not hold from its checkpoint's tail first (the failed attempt wrote nothing).
    await withTailRead(() => commitPlan(core, "background", job.replaces, plan, figures, 1, added));
  } catch (error) {
    if (!(error instanceof VersionConflictError)) throw error;
    discard(core, job, "another writer committed first");
    return false;
  }
  const cached = core.cache.peek(job.threadId);
  if (cached !== undefined && cached.plan === job.replaces)
    core.cache.remember(job.threadId, { ...cached, plan });
  core.checkpoints.schedule(ranOn, plan);
  return true;
}
