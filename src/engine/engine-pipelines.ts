import { DEFAULT_PIPELINE_CONFIG } from "../compaction/default-pipeline.js";
import { createPipeline } from "../compaction/pipeline.js";
import {
  type PipelineConfig,
  type PipelineDependencies,
  pipelineFromConfig,
  withStrategies,
} from "../compaction/pipeline-config.js";
import type { Pipeline } from "../compaction/pipeline-types.js";
import { ValidationError } from "../errors/ledger-error.js";
import { memosOf, type StrategyMemo } from "../strategies/strategy-memo.js";
import type { TokenBudget } from "../tokens/token-budget.js";
import type { ContextEngineOptions, EngineSettings } from "./engine-options.js";

/**
 * The pipelines an engine runs, built from its options (`pipeline`, `inlinePipeline`, `summarizer`,
 * `summarization`, `pendingCalls`). This module holds everything that knows about strategies: an engine that only
 * reads (render, explain, replay) never loads it (see `createEngineCore`).
 */
export interface EnginePipelines {
  /** The pipeline a turn runs (without model strategies when summarization is in the background). */
  readonly inline: Pipeline;
  /** The whole pipeline: background runs and maintenance compactions. */
  readonly full: Pipeline;
  /** The free reducers of `full` that neither summarize nor externalize: a turn that brings content back runs these. */
  readonly calm: Pipeline;
  /** True when turns leave model strategies to background runs. */
  readonly background: boolean;
  /** What a thread checkpoint carries of the strategies' memos, as the strategies declare them. */
  readonly memos: ReadonlyArray<StrategyMemo>;
}

/** {@link EnginePipelines} with what the options' pipeline config itself said about the engine. */
export interface BuiltPipelines extends EnginePipelines {
  /** The config's own budget, when it has one. */
  readonly budget?: TokenBudget;
}

export function isPipeline(value: unknown): value is Pipeline {
  return typeof (value as Pipeline | undefined)?.run === "function";
}

/** Whether a strategy may run on a turn that brings content back: free, and neither summarizing nor externalizing. */
function calmStrategy(s: { readonly cost: string; readonly kinds: ReadonlyArray<string> }): boolean {
  return s.cost === "free" && !s.kinds.includes("summarize") && !s.kinds.includes("externalize");
}

/** `full` without the strategies a rehydrating turn must not run (see `calmStrategy`). */
function calmOnly(full: Pipeline): Pipeline {
  if (full.strategies.every(calmStrategy)) return full;
  const calm = full.strategies.filter(calmStrategy);
  return full.withStrategies?.(calm) ?? createPipeline({ strategies: calm, pendingCalls: full.pendingCalls });
}

/** A pipeline with only the free strategies of `full`, for turns that leave model strategies to the background. */
function freeOnly(full: Pipeline): Pipeline {
  if (!full.strategies.some((s) => s.cost === "model")) return full;
  const free = full.strategies.filter((s) => s.cost === "free");
  return full.withStrategies?.(free) ?? createPipeline({ strategies: free, pendingCalls: full.pendingCalls });
}

interface Pipelines {
  readonly full: Pipeline;
  readonly inline: Pipeline;
  readonly calm: Pipeline;
  readonly budget?: TokenBudget;
  /** True when the engine built the pipeline and its summarizer runs in process (no model call). */
  readonly localSummaries: boolean;
}

function fromPipeline(full: Pipeline, options: ContextEngineOptions, settings: EngineSettings): Pipelines {
  const mode = full.pendingCalls;
  if (settings.pendingCalls !== undefined && settings.pendingCalls !== mode) {
    throw new ValidationError(
      `option pendingCalls is ${JSON.stringify(settings.pendingCalls)} but the given pipeline renders pending calls as ${JSON.stringify(mode)}: the request and its replay must render them the same way`,
      { field: "pendingCalls" },
    );
  }
  const inline = options.inlinePipeline ?? freeOnly(full);
  if (inline.pendingCalls !== mode) {
    throw new ValidationError("inlinePipeline must render pending calls like pipeline", {
      field: "inlinePipeline",
    });
  }
  return { full, inline, calm: calmOnly(full), localSummaries: false };
}

function fromConfig(options: ContextEngineOptions, settings: EngineSettings): Pipelines {
  const deps: PipelineDependencies = {
    summaryCache: options.stores.summaries,
    artifacts: options.stores.artifacts,
    tenant: settings.tenant,
    ...(options.summarizer === undefined ? {} : { summarizer: options.summarizer }),
  };
  // The engine's pendingCalls option wins over the config's: the pipeline renders the request with it, and
  // replay and render must use the very same mode.
  const base = (options.pipeline as PipelineConfig | undefined) ?? DEFAULT_PIPELINE_CONFIG;
  const config =
    settings.pendingCalls === undefined ? base : { ...base, pendingCalls: settings.pendingCalls };
  const configured = pipelineFromConfig(config, deps);
  const summarizer = options.summarizer;
  const kind = configured.config.summarizer?.kind ?? "extractive";
  const full = configured.pipeline;
  const free = (config: PipelineConfig): PipelineConfig =>
    withStrategies(
      config,
      config.strategies.filter((_, i) => full.strategies[i]?.cost !== "model"),
    );
  const inline =
    options.inlinePipeline ??
    (full.strategies.some((s) => s.cost === "model")
      ? pipelineFromConfig(free(configured.config), deps).pipeline
      : full);
  const calm = full.strategies.every(calmStrategy)
    ? full
    : pipelineFromConfig(
        withStrategies(
          configured.config,
          configured.config.strategies.filter((_, i) => calmStrategy(full.strategies[i]!)),
        ),
        deps,
      ).pipeline;
  return {
    full,
    inline,
    calm,
    localSummaries: summarizer === undefined ? kind === "extractive" : summarizer.local === true,
    ...(configured.budget === undefined ? {} : { budget: configured.budget }),
  };
}

/**
 * Builds the engine's pipelines from its options, checking them: a pipeline config is parsed here (its errors name
 * the field), and a given pipeline must render pending calls as the options say.
 */
export function buildEnginePipelines(
  options: ContextEngineOptions,
  settings: EngineSettings,
): BuiltPipelines {
  const pipelines = isPipeline(options.pipeline)
    ? fromPipeline(options.pipeline, options, settings)
    : fromConfig(options, settings);
  const mode = settings.summarization ?? (pipelines.localSummaries ? "inline" : "background");
  return {
    full: pipelines.full,
    inline: mode === "inline" ? pipelines.full : pipelines.inline,
    calm: pipelines.calm,
    background: mode === "background" && pipelines.inline !== pipelines.full,
    memos: memosOf([...pipelines.full.strategies, ...pipelines.inline.strategies]),
    ...(pipelines.budget === undefined ? {} : { budget: pipelines.budget }),
  };
}
