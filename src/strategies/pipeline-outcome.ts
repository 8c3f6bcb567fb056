import { BudgetInfeasibleError, LedgerError, RenderValidationError } from "../errors/ledger-error.js";
import { assertPlanValid } from "../plan/validate-plan.js";
import { type ProviderFormat, toProviderRequest, validateProviderRequest } from "../render/provider-rules.js";
import { renderPrompt } from "../render/render-prompt.js";
import type { RenderedPrompt } from "../render/rendered-prompt.js";
import { availableForPrompt } from "../tokens/token-budget.js";
import type { PipelineResult } from "./pipeline.js";
import { countKinds, type PipelineReport } from "./pipeline-report.js";
import type { Run } from "./pipeline-run-state.js";

/** Any thrown value as a `LedgerError` (strategies are user code and may throw anything). */
export function asLedgerError(error: unknown): LedgerError {
  if (error instanceof LedgerError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new LedgerError("VALIDATION", `compaction failed: ${message}`, {}, { cause: error });
}

/**
 * The first provider rule `prompt` breaks that `baseline` (the same turn under the plan compaction started from)
 * keeps, by format, or undefined. Compaction must never make a request invalid for a provider; a thread that no
 * plan can make valid for a provider (e.g. only a system prompt, which Anthropic refuses) is not the pipeline's
 * to fix: that request fails when it is built, in its own format, and the others still work.
 */
export function providerProblems(
  formats: ReadonlyArray<ProviderFormat>,
  prompt: RenderedPrompt,
  baseline: () => RenderedPrompt,
): string | undefined {
  for (const format of formats) {
    const problems = validateProviderRequest(format, toProviderRequest(format, prompt));
    if (problems.length === 0) continue;
    if (validateProviderRequest(format, toProviderRequest(format, baseline())).length > 0) continue;
    return `${format}: ${problems[0]}`;
  }
  return undefined;
}

/** A function computing a value once, on first call. */
export function once<T>(compute: () => T): () => T {
  let done = false;
  let value: T;
  return () => {
    if (!done) {
      value = compute();
      done = true;
    }
    return value;
  };
}

function report(run: Run, requestTokens: number): PipelineReport {
  return {
    threadId: run.input.log.threadId,
    tokensBefore: run.tokensBefore,
    tokensAfter: run.tokens,
    requestTokens,
    target: run.target,
    goal: run.goal,
    triggered: run.triggered,
    steps: run.steps,
    actionsByKind: countKinds(run.added),
    durationMs: performance.now() - run.started,
  };
}

export function failure(run: Run, error: LedgerError): PipelineResult {
  return { ok: false, plan: run.input.plan, error, report: report(run, run.tokens) };
}

/** Renders the request the run settled on and checks it: budget, injection reserve, each provider's rules. */
export function finish(run: Run): PipelineResult {
  const { input, settings } = run;
  const plan = run.added.length === 0 ? input.plan : run.plan;
  let prompt: ReturnType<typeof renderPrompt>;
  const nothingAtTheEnd = (input.injections?.length ?? 0) === 0 && (input.rehydrated?.length ?? 0) === 0;
  try {
    if (nothingAtTheEnd && run.prompt !== undefined && run.prompt.planVersion === plan.version) {
      // The run's own render of this plan is the request: check the plan (the run skipped that for the plan it
      // was given) and reuse it rather than render the history a second time.
      assertPlanValid(plan, input.log);
      prompt = run.prompt;
    } else {
      prompt = renderPrompt(input.log, plan, {
        counter: input.counter,
        pendingCalls: settings.pendingCalls,
        ...(input.injections === undefined ? {} : { injections: input.injections }),
        ...(input.rehydrated === undefined ? {} : { rehydrated: input.rehydrated }),
        ...(input.previous === undefined ? {} : { previous: input.previous }),
      });
    }
  } catch (error) {
    return failure(run, asLedgerError(error));
  }
  const where = { threadId: input.log.threadId };
  if (run.tokens > run.target) {
    const error = new BudgetInfeasibleError(
      "the history is still over the target after every strategy",
      run.tokens,
      run.target,
      where,
    );
    return failure(run, error);
  }
  const extra = prompt.tokenCount - run.tokens;
  const reserve = input.budget.injectionReserve + input.budget.rehydrationReserve;
  if (extra > reserve || prompt.tokenCount > availableForPrompt(input.budget)) {
    const error = new BudgetInfeasibleError(
      "injected and rehydrated content overflows its reserve",
      extra,
      reserve,
      where,
    );
    return failure(run, error);
  }
  const baseline = once(() =>
    plan === input.plan
      ? prompt
      : renderPrompt(input.log, input.plan, {
          counter: input.counter,
          pendingCalls: settings.pendingCalls,
          ...(input.injections === undefined ? {} : { injections: input.injections }),
          ...(input.rehydrated === undefined ? {} : { rehydrated: input.rehydrated }),
        }),
  );
  for (const format of settings.formats) {
    const problems = validateProviderRequest(format, toProviderRequest(format, prompt));
    if (problems.length === 0) continue;
    if (validateProviderRequest(format, toProviderRequest(format, baseline())).length > 0) continue;
    return failure(run, new RenderValidationError(format, problems, where));
  }
  const changed = plan !== input.plan;
  return { ok: true, plan, changed, prompt, report: report(run, prompt.tokenCount) };
}
