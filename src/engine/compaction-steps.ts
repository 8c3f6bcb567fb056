import type { PipelineReport } from "../compaction/pipeline-report.js";
import { LedgerError, NotFoundError, VersionConflictError } from "../errors/ledger-error.js";
import type { LogView } from "../log/log-view.js";
import type { CompactionPlan, PlanAction } from "../plan/compaction-plan.js";
import type { EngineCore } from "./engine-core.js";
import { ACTION_EVENT, type EngineOperation } from "./engine-events.js";
import { retryOnConflict } from "./retry-policy.js";
import type { LoadedThread } from "./thread-cache.js";

/**
 * The one path of every operation on a thread (`append`, `prepareTurn`, `compact`): take the thread's lock (one
 * operation per thread at a time in this process), load the thread through the loader and run `body` on it, and
 * when another writer won a race (`VersionConflictError`) start over on fresh state. `body` commits last: the
 * loader may run it again on more of the thread when it read past a partial log, and a conflict reruns it whole.
 */
export function onThread<T>(
  core: EngineCore,
  operation: EngineOperation,
  threadId: string,
  body: (thread: LoadedThread, attempt: number) => Promise<T>,
): Promise<T> {
  return core.locks.run(threadId, () =>
    withConflictRetries(core, operation, threadId, (attempt) =>
      core.loader.run(threadId, (thread) => {
        announceLoad(core, threadId, thread);
        return body(thread, attempt);
      }),
    ),
  );
}

/** Emits the `loaded` event of one load. */
function announceLoad(core: EngineCore, threadId: string, thread: LoadedThread): void {
  core.events.emit("loaded", threadId, {
    source: thread.source,
    messages: thread.log.length,
    planVersion: thread.plan.version,
    durationMs: thread.loadMs ?? 0,
    ...(thread.fallback === undefined ? {} : { fallback: thread.fallback }),
  });
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
  log: LogView,
  added?: ReadonlyArray<PlanAction>,
): Promise<void> {
  try {
    // The plan was validated against `log`, read from these stores: the store checks it against that log.
    const key = core.settings.ledgerKey;
    await core.stores.plans.commit(plan, previous.version, {
      checkedAgainst: log,
      ...(key === undefined ? {} : { ledgerKey: key }),
    });
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
 * Runs `attempt` and, when another writer won a race (`VersionConflictError`), runs it again on fresh state as the
 * engine's conflict retry policy allows (see `retry-policy.ts`: full jitter under a doubling ceiling, a retry count
 * and a deadline), emitting `conflict_retry` before each pause; the last conflict surfaces with the number of
 * attempts. Loads always ask the stores for the newest length and plan version, so a retry sees what the other
 * writer did.
 */
export function withConflictRetries<T>(
  core: EngineCore,
  operation: EngineOperation,
  threadId: string,
  attempt: (n: number) => Promise<T>,
): Promise<T> {
  return retryOnConflict(core.settings.conflictRetry, core.retryEnvironment, attempt, (notice) =>
    core.events.emit("conflict_retry", threadId, {
      operation,
      attempt: notice.attempt,
      delayMs: notice.delayMs,
    }),
  );
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
