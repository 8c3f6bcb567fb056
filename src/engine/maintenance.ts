import type { PipelineReport } from "../compaction/pipeline-report.js";
import type { LedgerError } from "../errors/ledger-error.js";
import { compactionTarget, type TokenBudget } from "../tokens/token-budget.js";
import {
  commitPlan,
  observed,
  onThread,
  reportError,
  reportSteps,
  requireMessages,
} from "./compaction-steps.js";
import type { EngineCore } from "./engine-core.js";
import type { LoadedThread } from "./thread-cache.js";
import { type BudgetInput, budgetOf } from "./turn-options.js";

/** Options of `compact`. */
export interface CompactOptions {
  /** Overrides the engine's budget; a number means "the rendered history has at most this many tokens". */
  readonly budget?: BudgetInput;
  readonly signal?: AbortSignal;
}

/** What a maintenance compaction did; a plan that cannot fit comes back as `ok: false` with the error. */
export interface CompactResult {
  readonly threadId: string;
  readonly ok: boolean;
  /** True when a new plan version was committed. */
  readonly changed: boolean;
  /** The plan version in force afterwards. */
  readonly planVersion: number;
  readonly previousVersion: number;
  readonly logSeq: number;
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  readonly report: PipelineReport;
  readonly error?: LedgerError;
}

/**
 * Compacts a thread's stored history outside any turn (a cron job, the CLI's `compact`): the whole pipeline,
 * model strategies included, runs inline on the stored log and its plan is committed (retrying on version
 * conflicts). A budget nothing can meet is returned as data.
 */
export function compactThread(
  core: EngineCore,
  threadId: string,
  options: CompactOptions = {},
): Promise<CompactResult> {
  return observed(core, "compact", threadId, async () => {
    const t0 = performance.now();
    const budget = budgetOf(options.budget) ?? core.budget;
    const result = await onThread(core, "compact", threadId, (state, attempt) =>
      compactOnce(core, state, budget, options.signal, attempt),
    );
    if (result.error !== undefined) reportError(core, "compact", threadId, result.error);
    core.events.emit("completed", threadId, {
      operation: "compact",
      durationMs: performance.now() - t0,
      tokens: result.tokensAfter,
      tokensBefore: result.tokensBefore,
      compacted: result.changed,
    });
    return result;
  });
}

async function compactOnce(
  core: EngineCore,
  state: LoadedThread,
  budget: TokenBudget,
  signal: AbortSignal | undefined,
  attempt: number,
): Promise<CompactResult> {
  const threadId = state.log.threadId;
  requireMessages(state, threadId);
  core.events.emit("check_started", threadId, {
    operation: "compact",
    logSeq: state.log.length,
    planVersion: state.plan.version,
    target: compactionTarget(budget),
    calibrationRatio: 1,
  });
  const { log, plan } = state;
  const run = await (await core.pipelines()).full.run({
    log,
    plan,
    counter: core.counter,
    budget,
    ...(signal === undefined ? {} : { signal }),
    ...(state.abandon === undefined ? {} : { abandon: state.abandon }),
  });
  reportSteps(core, "compact", threadId, run.report);
  const changed = run.ok && run.changed;
  const figures = { tokensBefore: run.report.tokensBefore, tokensAfter: run.report.tokensAfter };
  if (changed) await commitPlan(core, "compact", plan, run.plan, figures, attempt, log);
  core.loader.remember(threadId, { log, plan: run.plan });
  if (changed) core.loader.settled(log, run.plan, true);
  return {
    threadId,
    ok: run.ok,
    changed,
    planVersion: run.plan.version,
    previousVersion: plan.version,
    logSeq: log.length,
    ...figures,
    report: run.report,
    ...(run.ok ? {} : { error: run.error }),
  };
}

/** Compacts every stored thread one after the other; one thread's failure does not stop the others. */
export async function compactAllThreads(
  core: EngineCore,
  options: CompactOptions = {},
): Promise<
  ReadonlyArray<CompactResult | { readonly threadId: string; readonly ok: false; readonly error: unknown }>
> {
  const out: Array<CompactResult | { threadId: string; ok: false; error: unknown }> = [];
  for (const threadId of await core.stores.log.threads()) {
    try {
      out.push(await compactThread(core, threadId, options));
    } catch (error) {
      out.push({ threadId, ok: false, error });
    }
  }
  return out;
}
