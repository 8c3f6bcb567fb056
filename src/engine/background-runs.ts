import type { PipelineSuccess } from "../compaction/pipeline-types.js";
import { VersionConflictError } from "../errors/ledger-error.js";
import type { ThreadLog } from "../log/thread-log.js";
import { type CompactionPlan, nextPlan } from "../plan/compaction-plan.js";
import { compactionTarget, type TokenBudget } from "../tokens/token-budget.js";
import { commitPlan, reportError, reportSteps } from "./compaction-steps.js";
import type { EngineCore } from "./engine-core.js";
import { outsideCall } from "./engine-events.js";
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

/**
 * Queues a background run for a job, to start once `after` settles; returns false when one is already running
 * for the thread.
 */
export function scheduleBackground(core: EngineCore, job: BackgroundJob, after?: Promise<unknown>): boolean {
  // The run outlives the turn that scheduled it: its events are not that call's.
  const started = core.jobs.start(job.threadId, () => outsideCall(() => runJob(core, job)), after);
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
    // On the log the turn saw; the loader runs it again on more of the thread when that log was partial and the
    // run read past it (the summarizer's answer is in the summary cache by then).
    const { run, log } = await core.loader.runOn(job.log, job.basePlan, async (log, plan, abandon) => ({
      log,
      run: await core.full.run({
        log,
        plan,
        counter: core.counter,
        budget: job.budget,
        ...(abandon === undefined ? {} : { abandon }),
      }),
    }));
    reportSteps(core, "background", job.threadId, run.report);
    if (!run.ok) return discard(core, job, `the run failed: ${run.error.message}`);
    if (!run.report.steps.some((s) => s.cost === "model" && s.outcome === "applied")) {
      return discard(core, job, "no model strategy applied anything");
    }
    // A version written whole (every so many deltas) lists every span, which a restored plan may keep in its
    // checkpoint's tail: the loader reads the tail and commits again (the failed attempt wrote nothing).
    const committed = await core.loader.runOn(log, job.replaces, () =>
      core.locks.run(job.threadId, () => commitJob(core, job, run, log)),
    );
    if (!committed) return;
    core.events.emit("completed", job.threadId, {
      operation: "background",
      durationMs: performance.now() - t0,
      tokens: run.report.tokensAfter,
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
    await commitPlan(core, "background", job.replaces, plan, figures, 1, ranOn, added);
  } catch (error) {
    if (!(error instanceof VersionConflictError)) throw error;
    discard(core, job, "another writer committed first");
    return false;
  }
  const cached = core.loader.peek(job.threadId);
  if (cached !== undefined && cached.plan === job.replaces)
    core.loader.remember(job.threadId, { ...cached, plan });
  core.loader.settled(ranOn, plan, true);
  return true;
}
