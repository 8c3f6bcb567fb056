import { ValidationError } from "../errors/ledger-error.js";
import { InProcessRunner } from "../jobs/in-process-runner.js";
import type { JobSettings } from "../jobs/job-options.js";
import type { JobRunner, PendingJobs } from "../jobs/job-runner.js";
import { QueueRunner } from "../jobs/queue-runner.js";
import type { Stores } from "../stores/stores.js";
import {
  type BackgroundJob,
  jobData,
  jobEvents,
  jobKey,
  runBackgroundJob,
  runJobData,
} from "./background-runs.js";
import { reportError } from "./compaction-steps.js";
import type { EngineCore } from "./engine-core.js";

/**
 * The engine's job runner: the durable queue when the stores keep one (PostgreSQL) unless `jobs.runner` says
 * `in-process`, else in process. `core` is read when a job runs (the runner is built with the core).
 */
export function createJobRunner(
  core: () => EngineCore,
  stores: Stores,
  settings: JobSettings,
): JobRunner<BackgroundJob> {
  const factory = stores.jobQueue;
  const kind = settings.runner ?? (factory === undefined ? "in-process" : "queue");
  const observer = jobEvents({ events: { emit: (...args) => core().events.emit(...args) } });
  if (kind === "in-process") {
    return new InProcessRunner<BackgroundJob>(
      { keyOf: jobKey, threadOf: (job) => job.threadId, run: (job) => runBackgroundJob(core(), job) },
      observer,
    );
  }
  if (factory === undefined) {
    throw new ValidationError(
      "engine option jobs.runner is `queue` but these stores keep no durable queue (PostgreSQL stores do)",
      { field: "jobs.runner" },
    );
  }
  const onError = (error: unknown) => reportError(core(), "background", "", error);
  return new QueueRunner<BackgroundJob>(
    () => factory(settings.queue, onError),
    {
      keyOf: jobKey,
      threadOf: (job) => job.threadId,
      toData: jobData,
      runData: (threadId, data) => runJobData(core(), threadId, data),
    },
    observer,
    settings.work,
    onError,
  );
}

/** Counts a thread's (or every thread's) jobs and reports the figures as a `job_queue_depth` event. */
export async function pendingJobs(core: EngineCore, threadId?: string): Promise<PendingJobs> {
  const counts = await core.jobs.pending(threadId);
  core.events.emit("job_queue_depth", threadId ?? "", { runner: core.jobs.kind, ...counts });
  return counts;
}
