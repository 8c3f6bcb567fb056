/**
 * The pipeline's public types: what a run takes and returns, and the pipeline itself. They live apart from the
 * code that builds and runs pipelines, so that code (pipeline.ts, pipeline-run.ts, pipeline-outcome.ts) depends on
 * them without depending on each other in a circle.
 */
import type { LedgerError } from "../errors/ledger-error.js";
import type { LogView } from "../log/log-view.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import type { ProviderFormat, ProviderRequestMap } from "../render/provider-rules.js";
import type { Injection, PendingCallMode, RehydratedArtifact } from "../render/render-prompt.js";
import type { RenderedPrompt } from "../render/rendered-prompt.js";
import type { ToolDefinition } from "../render/tool-definitions.js";
import type { Strategy, StrategyContext } from "../strategies/strategy.js";
import type { TokenBudget } from "../tokens/token-budget.js";
import type { MessageCounter } from "../tokens/tokenizer.js";
import type { PipelineReport } from "./pipeline-report.js";

/** A strategy that can also say it is due by its own rule (e.g. a count threshold) while under the target. */
export type PipelineStrategy = Strategy & { due?(context: StrategyContext): boolean };

/** The provider request a run builds from its prompt and checks against the format's rules. */
export interface RequestSpec {
  readonly format: ProviderFormat;
  /** The tools the model is offered, written into the request's `tools` in the format's shape. */
  readonly tools?: ReadonlyArray<ToolDefinition>;
  /** Anthropic: mark prompt-cache breakpoints (`suggestCacheBreakpoints`); the OpenAI formats ignore it. */
  readonly cacheBreakpoints?: boolean;
}

/** One run's input: the log, the last committed plan and the accounting. */
export interface PipelineInput {
  readonly log: LogView;
  readonly plan: CompactionPlan;
  readonly counter: MessageCounter;
  readonly budget: TokenBudget;
  readonly injections?: ReadonlyArray<Injection>;
  readonly rehydrated?: ReadonlyArray<RehydratedArtifact>;
  /** The previous request of this thread, for the unchanged-leading-tokens figure. */
  readonly previous?: RenderedPrompt;
  readonly signal?: AbortSignal;
  /**
   * Aborted by whoever handed out `log` when the run read past what it holds (a partial log, see `LogView`): the
   * run's result will not count, so it stops at its next step and leaves no trace in the failure counters.
   */
  readonly abandon?: AbortSignal;
  /** The request body to return with a success, built from its prompt; absent: the prompt alone. */
  readonly request?: RequestSpec;
}

/** A run that produced a request which fits and is valid; `plan` is the input plan (`toBe`) when unchanged. */
export interface PipelineSuccess {
  readonly ok: true;
  readonly plan: CompactionPlan;
  readonly changed: boolean;
  readonly prompt: RenderedPrompt;
  readonly report: PipelineReport;
  /** The request body the input asked for (`PipelineInput.request`), in its format and valid for it. */
  readonly request?: ProviderRequestMap[ProviderFormat];
}

/** A run that failed: the previous plan stays in force, and the error says why. */
export interface PipelineFailure {
  readonly ok: false;
  readonly plan: CompactionPlan;
  readonly error: LedgerError;
  readonly report: PipelineReport;
}

/** What a run returns; failures are data, not exceptions. */
export type PipelineResult = PipelineSuccess | PipelineFailure;

/** The compaction pipeline: strategies in order, one run per model call. */
export interface Pipeline {
  readonly strategies: ReadonlyArray<PipelineStrategy>;
  /** How this pipeline renders calls without a result: callers that render the same plan must use the same. */
  readonly pendingCalls: PendingCallMode;
  run(input: PipelineInput): Promise<PipelineResult>;
  /**
   * A pipeline with the same settings (fallback, goal, classes, …) running only `strategies`: how the engine
   * makes the lighter pipelines of turns that leave model work to the background or bring content back.
   * Optional for pipelines built by hand; without it those get the default settings.
   */
  readonly withStrategies?: (strategies: ReadonlyArray<PipelineStrategy>) => Pipeline;
}
