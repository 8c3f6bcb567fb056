import type { Pipeline } from "./pipeline.js";
import { type PipelineConfig, type PipelineDependencies, pipelineFromConfig } from "./pipeline-config.js";

/**
 * The pipeline used when the caller configures none: tool-result retention with its built-in policies, then
 * prefix-ward summarization (the extractive summarizer unless one is passed), then the hard fallback. Tuned on
 * the shared agent runs by `benchmarks/pipeline-bench.ts` (see benchmarks/README.md).
 */
export const DEFAULT_PIPELINE_CONFIG: PipelineConfig = Object.freeze({
  strategies: Object.freeze([
    Object.freeze({ use: "toolResultRetention" }),
    Object.freeze({ use: "summarize", minKeepGroups: 1 }),
  ]) as unknown as PipelineConfig["strategies"],
  // Compacting down to half the target makes compactions rare, and each one is what breaks the prompt cache.
  goalRatio: 0.5,
});

/** Options of {@link createDefaultPipeline}: the dependencies, and what the fallback protects. */
export interface DefaultPipelineOptions extends PipelineDependencies {
  /** Default `lastTurn`; `lastUserMessage` lets the fallback drop older calls of a long agent turn. */
  readonly protect?: "lastTurn" | "lastUserMessage";
}

/** A fresh pipeline with {@link DEFAULT_PIPELINE_CONFIG} (pipelines keep per-thread failure counters). */
export function createDefaultPipeline(options: DefaultPipelineOptions = {}): Pipeline {
  const { protect, ...deps } = options;
  const config =
    protect === undefined ? DEFAULT_PIPELINE_CONFIG : { ...DEFAULT_PIPELINE_CONFIG, fallback: { protect } };
  return pipelineFromConfig(config, deps).pipeline;
}
