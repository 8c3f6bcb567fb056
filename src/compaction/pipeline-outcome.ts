import { BudgetInfeasibleError, LedgerError, RenderValidationError } from "../errors/ledger-error.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import { assertPlanValid } from "../plan/validate-plan.js";
import { type ProviderFormat, toProviderRequest, validateProviderRequest } from "../render/provider-rules.js";
import { renderPrompt } from "../render/render-prompt.js";
import type { RenderedPrompt } from "../render/rendered-prompt.js";
import { availableForPrompt } from "../tokens/token-budget.js";
import { countKinds, type PipelineReport } from "./pipeline-report.js";
import type { Run } from "./pipeline-run-state.js";
import type { PipelineFailure, PipelineInput, PipelineResult, RequestSpec } from "./pipeline-types.js";
import { checkedRequest } from "./provider-request.js";

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
  const broken = brokenFormat(formats, prompt, baseline);
  return broken === undefined ? undefined : `${broken.format}: ${broken.problems[0]}`;
}

/** `providerProblems` as data: the format and every problem; `baseline` is rendered at most once, when needed. */
function brokenFormat(
  formats: ReadonlyArray<ProviderFormat>,
  prompt: RenderedPrompt,
  baseline: () => RenderedPrompt,
): { readonly format: ProviderFormat; readonly problems: ReadonlyArray<string> } | undefined {
  let before: RenderedPrompt | undefined;
  for (const format of formats) {
    const problems = validateProviderRequest(format, toProviderRequest(format, prompt));
    if (problems.length === 0) continue;
    before ??= baseline();
    if (validateProviderRequest(format, toProviderRequest(format, before)).length > 0) continue;
    return { format, problems };
  }
  return undefined;
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

export function failure(run: Run, error: LedgerError): PipelineFailure {
  return {
    ok: false,
    plan: run.input.plan,
    error: withFailedSteps(run, error),
    report: report(run, run.tokens),
  };
}

/**
 * A budget failure after a strategy failed (a summarizer rate-limited, timed out, answered garbage) names that
 * cause first: the budget is the consequence. The first failed step's error becomes the `cause`.
 */
function withFailedSteps(run: Run, error: LedgerError): LedgerError {
  if (!(error instanceof BudgetInfeasibleError)) return error;
  // The step that threw this very error (the hard fallback) is not a cause of it.
  const failed = run.steps.filter((s) => s.outcome === "failed" && s.detail !== error.message);
  if (failed.length === 0) return error;
  const causes = failed.map((s) => `${s.strategy} failed (${s.detail ?? "no detail"})`).join("; ");
  const cause = failed
    .flatMap((s) => s.notes)
    .find((n) => n.level === "error" && n.cause !== undefined)?.cause;
  return new BudgetInfeasibleError(
    `${causes}, so ${error.problem}`,
    error.required,
    error.available,
    error.where,
    { cause: cause ?? error },
  );
}

/**
 * Renders the request the run settled on and checks it: budget, injection reserve, each provider's rules, and
 * builds the request body `spec` asks for, valid for its format.
 */
export function finish(run: Run, spec: RequestSpec | undefined): PipelineResult {
  const { input, settings } = run;
  const plan = run.added.length === 0 ? input.plan : run.plan;
  let prompt: RenderedPrompt;
  const nothingAtTheEnd = (input.injections?.length ?? 0) === 0 && (input.rehydrated?.length ?? 0) === 0;
  try {
    if (nothingAtTheEnd && run.prompt !== undefined && run.prompt.planVersion === plan.version) {
      // The run's own render of this plan is the request: check the plan (the run skipped that for the plan it
      // was given) and reuse it rather than render the history a second time.
      assertPlanValid(plan, input.log);
      prompt = run.prompt;
    } else {
      prompt = renderTurn(run, plan, true);
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
      `injected and rehydrated content overflows its reserve (${turnContent(input, prompt)})`,
      extra,
      reserve,
      where,
    );
    return failure(run, error);
  }
  // A format counts as broken only when the run broke it: its request under the plan the run started from
  // passes. A run that added nothing renders that very plan, so there is nothing to check.
  const broken =
    plan === input.plan
      ? undefined
      : brokenFormat(settings.formats, prompt, () => renderTurn(run, input.plan, false));
  if (broken !== undefined) {
    return failure(run, new RenderValidationError(broken.format, broken.problems, where));
  }
  const changed = plan !== input.plan;
  const success = { ok: true, plan, changed, prompt, report: report(run, prompt.tokenCount) } as const;
  if (spec === undefined) return success;
  try {
    return { ...success, request: checkedRequest(prompt, spec) };
  } catch (error) {
    // A request its own format refuses (e.g. nothing but a system prompt for Anthropic) fails the run like any
    // other check, before the caller commits anything.
    if (error instanceof RenderValidationError) return failure(run, error);
    throw error;
  }
}

/** The turn's request under `plan`: the history plus the turn's injected and rehydrated content at the end. */
function renderTurn(run: Run, plan: CompactionPlan, withPrevious: boolean): RenderedPrompt {
  const { input, settings } = run;
  return renderPrompt(input.log, plan, {
    counter: input.counter,
    pendingCalls: settings.pendingCalls,
    ...(input.injections === undefined ? {} : { injections: input.injections }),
    ...(input.rehydrated === undefined ? {} : { rehydrated: input.rehydrated }),
    ...(withPrevious && input.previous !== undefined ? { previous: input.previous } : {}),
  });
}

/**
 * The turn's own content at the end of the request, each piece named with its tokens, largest first: which
 * injection (its index and label) or which rehydrated artifact overflowed the reserve.
 */
function turnContent(input: PipelineInput, prompt: RenderedPrompt): string {
  const tail = prompt.messages.filter(
    (m) => m.provenance.kind === "injection" || m.provenance.kind === "rehydration",
  );
  const rehydrated = input.rehydrated ?? [];
  const injections = input.injections ?? [];
  const named = tail.map((m, i) => {
    if (i < rehydrated.length)
      return { what: `rehydrated artifact ${rehydrated[i]!.artifactId}`, tokens: m.tokens };
    const at = i - rehydrated.length;
    const label = injections[at]?.label;
    return {
      what: `injection ${at}${label === undefined ? "" : ` (${JSON.stringify(label)})`}`,
      tokens: m.tokens,
    };
  });
  return named
    .sort((a, b) => b.tokens - a.tokens)
    .map((n) => `${n.what}: ${n.tokens} tokens`)
    .join(", ");
}
