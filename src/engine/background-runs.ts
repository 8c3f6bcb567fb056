import * as z from "zod";
import type { PipelineSuccess } from "../compaction/pipeline-types.js";
import { ValidationError, VersionConflictError } from "../errors/ledger-error.js";
import type { JobObserver, JobOutcome } from "../jobs/job-runner.js";
import type { ThreadLog } from "../log/thread-log.js";
import { type CompactionPlan, nextPlan } from "../plan/compaction-plan.js";
import { compactionTarget, createTokenBudget, type TokenBudget } from "../tokens/token-budget.js";
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

/** A job's key: its thread and the plan version it is computed for (which fixes the spans it summarizes). */
export function jobKey(job: {
  readonly threadId: string;
  readonly replaces: { readonly version: number };
}): string {
  return `${job.threadId}/v${job.replaces.version}`;
}

/**
 * Queues a background run for a job (in process: to start once `after` settles; on a durable queue: written
 * before this resolves); false when the same job is queued already (or, in process, one runs for the thread),
 * or when it could not be queued (reported as an `error` event: the turn goes on with its deterministic plan).
 */
export async function scheduleBackground(
  core: EngineCore,
  job: BackgroundJob,
  after?: Promise<unknown>,
): Promise<boolean> {
  let queued: boolean;
  try {
    // The job outlives the turn that queues it (and a queue's worker loop, started here, every later job): none
    // of their events are that call's.
    queued = await outsideCall(() => core.jobs.enqueue(job, after));
  } catch (error) {
    reportError(core, "background", job.threadId, error);
    return false;
  }
  if (queued) {
    const versions = { basedOnVersion: job.basePlan.version, replacesVersion: job.replaces.version };
    core.events.emit("background_scheduled", job.threadId, versions);
    core.events.emit("job_queued", job.threadId, { key: jobKey(job), runner: core.jobs.kind, ...versions });
  }
  return queued;
}

/** Runs a job in this process, outside the turn that queued it (its events are not that call's). */
export function runBackgroundJob(core: EngineCore, job: BackgroundJob): Promise<JobOutcome> {
  return outsideCall(() => runJob(core, job));
}

/** What a queued job carries in the database: the versions and figures that rebuild it in any worker. */
const jobDataSchema = z.strictObject({
  basePlanVersion: z.number().int().nonnegative(),
  replacesVersion: z.number().int().nonnegative(),
  logSeq: z.number().int().nonnegative(),
  budget: z.record(z.string(), z.unknown()),
  tokensAfter: z.number().nonnegative(),
  calibrationRatio: z.number().positive(),
});

/** A job as JSON for a durable queue. */
export function jobData(job: BackgroundJob): Readonly<Record<string, unknown>> {
  return {
    basePlanVersion: job.basePlan.version,
    replacesVersion: job.replaces.version,
    logSeq: job.log.length,
    budget: { ...job.budget },
    tokensAfter: job.tokensAfter,
    calibrationRatio: job.calibrationRatio,
  };
}

/**
 * Runs a job a durable queue handed this worker: when the plan it was computed for is no longer in force it is
 * discarded at once (nothing to compute); otherwise it runs on the thread's current log as a turn's job would.
 */
export async function runJobData(
  core: EngineCore,
  threadId: string,
  raw: Readonly<Record<string, unknown>>,
): Promise<JobOutcome> {
  const parsed = jobDataSchema.safeParse(raw);
  if (!parsed.success) {
    const error = new ValidationError(
      `queued job of thread ${threadId} holds bad data: ${parsed.error.message}`,
      {
        threadId,
        field: "data",
      },
    );
    return { kind: "failed", error };
  }
  const data = parsed.data;
  return outsideCall(async () => {
    const latest = await latestVersion(core.stores.plans, threadId);
    if (latest !== data.replacesVersion) {
      const reason = `plan v${data.replacesVersion} is no longer the latest (now v${latest})`;
      core.events.emit("background_discarded", threadId, { reason });
      return { kind: "discarded", reason };
    }
    const state = await core.loader.whole(threadId);
    if (state.plan.version !== data.replacesVersion || state.log.length < data.logSeq) {
      const reason = `plan v${data.replacesVersion} is no longer the latest (now v${state.plan.version})`;
      core.events.emit("background_discarded", threadId, { reason });
      return { kind: "discarded", reason };
    }
    const basePlan =
      data.basePlanVersion === state.plan.version
        ? state.plan
        : await core.stores.plans.get(threadId, data.basePlanVersion);
    return runJob(core, {
      threadId,
      log: state.log,
      basePlan,
      replaces: state.plan,
      budget: createTokenBudget(data.budget as Parameters<typeof createTokenBudget>[0]),
      tokensAfter: data.tokensAfter,
      calibrationRatio: data.calibrationRatio,
    });
  });
}

/** Turns what a job runner tells into `job_*` events. */
export function jobEvents(core: Pick<EngineCore, "events">): JobObserver {
  return {
    started: (job) =>
      core.events.emit("job_started", job.threadId, {
        key: job.key,
        runner: job.runner,
        attempt: job.attempt,
        attempts: job.attempts,
      }),
    settled: (job, outcome, durationMs, final) => {
      const base = { key: job.key, runner: job.runner, attempt: job.attempt, durationMs };
      if (outcome.kind === "committed") {
        core.events.emit("job_committed", job.threadId, { ...base, planVersion: outcome.planVersion });
      } else if (outcome.kind === "discarded") {
        core.events.emit("job_discarded", job.threadId, { ...base, reason: outcome.reason });
      } else {
        const message = outcome.error instanceof Error ? outcome.error.message : String(outcome.error);
        core.events.emit("job_failed", job.threadId, { ...base, attempts: job.attempts, final, message });
      }
    },
  };
}

function discard(core: EngineCore, job: BackgroundJob, reason: string): JobOutcome {
  core.events.emit("background_discarded", job.threadId, { reason });
  return { kind: "discarded", reason };
}

/**
 * Runs the whole pipeline (model strategies included) from the plan in force before the turn compacted, and
 * commits its plan in place of the turn's fallback plan when that is still the latest version. Anything else
 * (a failed run, no model strategy applied, a newer plan meanwhile, a store error) changes nothing.
 */
async function runJob(core: EngineCore, job: BackgroundJob): Promise<JobOutcome> {
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
      run: await (await core.pipelines()).full.run({
        log,
        plan,
        counter: core.counter,
        budget: job.budget,
        ...(abandon === undefined ? {} : { abandon }),
      }),
    }));
    reportSteps(core, "background", job.threadId, run.report);
    // A failed run or summarizer is worth another attempt (a queue retries it); nothing to summarize is not.
    if (!run.ok) {
      discard(core, job, `the run failed: ${run.error.message}`);
      return { kind: "failed", error: run.error };
    }
    if (!run.report.steps.some((s) => s.cost === "model" && s.outcome === "applied")) {
      const outcome = discard(core, job, "no model strategy applied anything");
      // A model strategy cooling down after failures is a failure too: a queue retries the job after its delay.
      const failed = run.report.steps.find(
        (s) =>
          s.cost === "model" &&
          (s.outcome === "failed" || (s.outcome === "skipped" && /^cooling down/.test(s.detail ?? ""))),
      );
      if (failed === undefined) return outcome;
      const detail = failed.detail === undefined ? "" : `: ${failed.detail}`;
      return { kind: "failed", error: new Error(`strategy ${failed.strategy} failed${detail}`) };
    }
    // A version written whole (every so many deltas) lists every span, which a restored plan may keep in its
    // checkpoint's tail: the loader reads the tail and commits again (the failed attempt wrote nothing).
    const committed = await core.loader.runOn(log, job.replaces, () =>
      core.locks.run(job.threadId, () => commitJob(core, job, run, log)),
    );
    if (committed.kind !== "committed") return committed;
    core.events.emit("completed", job.threadId, {
      operation: "background",
      durationMs: performance.now() - t0,
      tokens: run.report.tokensAfter,
      tokensBefore: job.tokensAfter,
      compacted: true,
    });
    return committed;
  } catch (error) {
    reportError(core, "background", job.threadId, error);
    return { kind: "failed", error };
  }
}

/**
 * Commits the run's plan if the plan it replaces is still the latest; says whether it did. `ranOn` is the
 * log the run worked on (the whole log when the turn's projection was not enough): the checkpoint is made of it.
 */
async function commitJob(
  core: EngineCore,
  job: BackgroundJob,
  result: PipelineSuccess,
  ranOn: ThreadLog,
): Promise<JobOutcome> {
  const latest = await latestVersion(core.stores.plans, job.threadId);
  if (latest !== job.replaces.version) {
    return discard(core, job, `plan v${job.replaces.version} is no longer the latest (now v${latest})`);
  }
  const plan = nextPlan(job.replaces, result.plan.actions, result.plan.basedOnSeq);
  const figures = { tokensBefore: job.tokensAfter, tokensAfter: result.report.tokensAfter };
  try {
    const added = result.plan.actions.slice(job.basePlan.actions.length);
    await commitPlan(core, "background", job.replaces, plan, figures, 1, ranOn, added);
  } catch (error) {
    if (!(error instanceof VersionConflictError)) throw error;
    return discard(core, job, "another writer committed first");
  }
  const cached = core.loader.peek(job.threadId);
  if (cached !== undefined && cached.plan === job.replaces)
    core.loader.remember(job.threadId, { ...cached, plan });
  core.loader.settled(ranOn, plan, true);
  return { kind: "committed", planVersion: plan.version };
}
