import type { PipelineReport } from "../compaction/pipeline-report.js";
import {
  LedgerError,
  MessageNotLoadedError,
  NotFoundError,
  VersionConflictError,
} from "../errors/ledger-error.js";
import type { CompactionPlan, PlanAction } from "../plan/compaction-plan.js";
import type { EngineCore } from "./engine-core.js";
import { ACTION_EVENT, type EngineOperation } from "./engine-events.js";
import type { LoadedThread } from "./thread-cache.js";

/** Why an operation runs again and what it loads: the checkpoint with its tail, or the whole log. */
export interface LoadFallback {
  readonly from: "checkpoint+tail" | "whole";
  /** The message of the `MessageNotLoadedError` the run before threw. */
  readonly reason: string;
}

/** Loads a thread through the cache and reports where it came from. */
export async function loadThread(
  core: EngineCore,
  threadId: string,
  fallback?: LoadFallback,
): Promise<LoadedThread> {
  const t0 = performance.now();
  const state = await core.cache.load(threadId, fallback?.from ?? "checkpoint");
  if (state.checkpointLength !== undefined) {
    core.checkpoints.loaded(threadId, state.plan.version, state.checkpointLength);
  }
  core.events.emit("loaded", threadId, {
    source: state.source,
    messages: state.log.length,
    planVersion: state.plan.version,
    durationMs: performance.now() - t0,
    ...(fallback === undefined ? {} : { fallback: fallback.reason }),
  });
  return state;
}

/**
 * Runs an operation on the thread as loaded (possibly from a checkpoint) and, when it needs what the
 * checkpoint did not hold, again: on the checkpoint read with its tail when that was all it lacked (the error
 * carries `fetch`), and on the whole stored log when that is not enough either or a message was missing. Nothing
 * was committed by a run that threw: every read of the log happens before a commit.
 */
export async function withFullLoadFallback<T>(
  core: EngineCore,
  threadId: string,
  run: (fallback?: LoadFallback) => Promise<T>,
): Promise<T> {
  let fallback: LoadFallback | undefined;
  for (;;) {
    try {
      return await run(fallback);
    } catch (error) {
      if (!(error instanceof MessageNotLoadedError) || fallback?.from === "whole") throw error;
      core.cache.forget(threadId);
      // A second miss (even one the tail would answer: it has been read once) means the whole log.
      const from = fallback === undefined && error.fetch !== undefined ? "checkpoint+tail" : "whole";
      fallback = { from, reason: error.message };
    }
  }
}

/** Throws `NotFoundError` for a thread without messages: there is nothing to compact, render or explain. */
export function requireMessages(state: LoadedThread, threadId: string): void {
  if (state.log.length === 0) {
    throw new NotFoundError(
      `thread ${JSON.stringify(threadId)} has no messages: append (or ingest) them first`,
      {
        threadId,
      },
    );
  }
}

/** Emits one `proposal` event per strategy step of a pipeline run. */
export function reportSteps(
  core: EngineCore,
  operation: EngineOperation,
  threadId: string,
  report: PipelineReport,
): void {
  for (const step of report.steps) {
    core.events.emit("proposal", threadId, {
      operation,
      strategy: step.strategy,
      cost: step.cost,
      outcome: step.outcome,
      actions: step.actions,
      tokensBefore: step.tokensBefore,
      tokensAfter: step.tokensAfter,
      durationMs: step.durationMs,
      ...(step.detail === undefined ? {} : { detail: step.detail }),
    });
  }
}

/** Emits cleared / summarized / externalized / dropped for each newly committed action. */
export function announceActions(
  core: EngineCore,
  operation: EngineOperation,
  threadId: string,
  actions: ReadonlyArray<PlanAction>,
): void {
  for (const action of actions) {
    const type = ACTION_EVENT[action.kind];
    if (type === undefined || action.span.length === 0) continue;
    core.events.emit(type, threadId, {
      operation,
      strategy: action.strategy,
      reason: action.reason,
      messages: action.span.length,
      firstId: action.span[0]!,
    });
  }
}

/** Tokens before and after a run, for the `committed` event. */
export interface CommitFigures {
  readonly tokensBefore: number;
  readonly tokensAfter: number;
}

/**
 * Commits `plan` on top of `previous` (optimistic: a `VersionConflictError` is reported as an event and
 * rethrown for the caller to reload and retry), then announces the actions it added (by default the ones
 * after `previous`'s, which is what a pipeline run appends).
 */
export async function commitPlan(
  core: EngineCore,
  operation: EngineOperation,
  previous: CompactionPlan,
  plan: CompactionPlan,
  figures: CommitFigures,
  attempt: number,
  added?: ReadonlyArray<PlanAction>,
): Promise<void> {
  try {
    await core.stores.plans.commit(plan, previous.version);
  } catch (error) {
    if (error instanceof VersionConflictError) {
      core.events.emit("version_conflict", plan.threadId, {
        operation,
        store: "plan",
        expected: error.expected,
        actual: error.actual,
        attempt,
      });
    }
    throw error;
  }
  core.events.emit("committed", plan.threadId, {
    operation,
    planVersion: plan.version,
    basedOnSeq: plan.basedOnSeq,
    ...figures,
    tokensFreed: figures.tokensBefore - figures.tokensAfter,
  });
  announceActions(core, operation, plan.threadId, added ?? plan.actions.slice(previous.actions.length));
}

/**
 * Runs `attempt` and, when another writer won a race (`VersionConflictError`), runs it again on fresh state up
 * to `maxConflictRetries` times, after a pause drawn at random below an exponentially growing ceiling (full
 * jitter), so writers that collided do not collide again in step; the last conflict is rethrown. Loads always
 * ask the stores for the newest length and plan version, so a retry sees what the other writer did.
 */
export async function withConflictRetries<T>(
  core: EngineCore,
  attempt: (n: number) => Promise<T>,
): Promise<T> {
  const { maxConflictRetries, conflictBackoff } = core.settings;
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      if (!(error instanceof VersionConflictError) || n > maxConflictRetries) throw error;
    }
    const ceiling = Math.min(conflictBackoff.maxMs, conflictBackoff.initialMs * 2 ** (n - 1));
    if (ceiling > 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * ceiling));
  }
}

/** Reports a failed operation as an `error` event and returns the error for rethrowing. */
export function reportError(
  core: EngineCore,
  operation: EngineOperation,
  threadId: string,
  error: unknown,
): unknown {
  const code = error instanceof LedgerError ? error.code : "UNEXPECTED";
  const message = error instanceof Error ? error.message : String(error);
  core.events.emit("error", threadId, { operation, code, message });
  return error;
}

/** Runs an operation, timing it and reporting failures as events. */
export async function observed<T>(
  core: EngineCore,
  operation: EngineOperation,
  threadId: string,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw reportError(core, operation, threadId, error);
  }
}
