import { type PipelineConfig, type PipelineDependencies, pipelineFromConfig } from "./pipeline-config.js";
import type { Pipeline } from "./pipeline-types.js";

/**
 * The pipeline used when the caller configures none: tool-result retention with its built-in policies, then
 * prefix-ward summarization (the extractive summarizer unless one is passed), then the hard fallback. Tuned on
 * the shared agent runs by `benchmarks/pipeline-bench.ts` (see benchmarks/README.md).
 */
export const DEFAULT_PIPELINE_CONFIG: PipelineConfig = Object.freeze({
  strategies: Object.freeze([
    Object.freeze({ use: "toolResultRetention" }),
    // One message over half the target (a huge tool result, a pasted file) is cut to head and tail while
    // the request is still over target once old results are stubbed, so it does not push out everything else.
    Object.freeze({ use: "oversizedExcerpt", share: 0.5 }),
    Object.freeze({ use: "summarize", minKeepGroups: 1 }),
  ]) as unknown as PipelineConfig["strategies"],
  // Each compaction lands at 80 % of the target: the request keeps most of the budget in use (what the model
  // still sees) while the next turns fit without compacting again (what keeps the prompt cache). Chosen on
  // `npm run bench:quality` (docs/decisions/0011): at 0.5 requests were 58-70 % full; at 0.9 the reused
  // leading tokens fell under 90 %.
  goalRatio: 0.8,
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
