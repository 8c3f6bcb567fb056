import * as z from "zod";
import type { JobQueueSettings } from "../stores/job-queue.js";
import type { JobRunnerKind } from "./job-runner.js";

/**
 * The engine's `jobs` option: where background summaries run and, on a durable queue, how they are retried and
 * taken (docs/decisions/0020).
 */
export interface JobOptions {
  /** `in-process` or `queue` (default: `queue` when the stores keep a durable queue, as PostgreSQL's do). */
  readonly runner?: JobRunnerKind;
  /** Whether this engine takes jobs from the queue (default true; false: it only queues them, for dedicated workers). */
  readonly work?: boolean;
  /** Jobs this engine runs at once from the queue (default 1). */
  readonly concurrency?: number;
  /** A running job not finished after this long is taken as lost and retried (default 300,000: 5 minutes). */
  readonly visibilityTimeoutMs?: number;
  /** Attempts a job may have before it is failed and reported (default 3). */
  readonly attempts?: number;
  /** Pause before a failed attempt is retried (default 5,000; counted in whole seconds). */
  readonly retryDelayMs?: number;
  /** How often an idle engine looks for jobs (default 2,000; at least 500). */
  readonly pollIntervalMs?: number;
  /** How often lost jobs are looked for (default 30,000; at least 1,000). */
  readonly maintenanceIntervalMs?: number;
  /** How long `close()` waits for running jobs by default (default 10,000). */
  readonly closeTimeoutMs?: number;
}

/** The zod schema of {@link JobOptions}. */
export const jobOptionsSchema = z.strictObject({
  runner: z.enum(["in-process", "queue"]).exactOptional(),
  work: z.boolean().exactOptional(),
  concurrency: z.number().int().min(1).max(64).exactOptional(),
  visibilityTimeoutMs: z.number().int().min(1_000).max(86_400_000).exactOptional(),
  attempts: z.number().int().min(1).max(100).exactOptional(),
  retryDelayMs: z.number().int().nonnegative().max(3_600_000).exactOptional(),
  pollIntervalMs: z.number().int().min(500).max(600_000).exactOptional(),
  maintenanceIntervalMs: z.number().int().min(1_000).max(3_600_000).exactOptional(),
  closeTimeoutMs: z.number().int().nonnegative().max(3_600_000).exactOptional(),
});

/** The validated `jobs` option with defaults filled in. */
export interface JobSettings {
  /** Undefined: chosen by the stores (the queue when they keep one). */
  readonly runner: JobRunnerKind | undefined;
  readonly work: boolean;
  readonly closeTimeoutMs: number;
  readonly queue: JobQueueSettings;
}

/** Fills in the defaults of a parsed `jobs` option. */
export function jobSettings(o: z.output<typeof jobOptionsSchema> | undefined): JobSettings {
  return {
    runner: o?.runner,
    work: o?.work ?? true,
    closeTimeoutMs: o?.closeTimeoutMs ?? 10_000,
    queue: {
      visibilityTimeoutMs: o?.visibilityTimeoutMs ?? 300_000,
      attempts: o?.attempts ?? 3,
      retryDelayMs: o?.retryDelayMs ?? 5_000,
      concurrency: o?.concurrency ?? 1,
      pollIntervalMs: o?.pollIntervalMs ?? 2_000,
      maintenanceIntervalMs: o?.maintenanceIntervalMs ?? 30_000,
    },
  };
}
