import { randomUUID } from "node:crypto";
import { DEFAULT_PIPELINE_CONFIG } from "../compaction/default-pipeline.js";
import { createPipeline } from "../compaction/pipeline.js";
import {
  type PipelineConfig,
  type PipelineDependencies,
  pipelineFromConfig,
} from "../compaction/pipeline-config.js";
import type { Pipeline } from "../compaction/pipeline-types.js";
import { ValidationError } from "../errors/ledger-error.js";
import type { PendingCallMode } from "../render/render-prompt.js";
import type { Stores } from "../stores/stores.js";
import { memosOf } from "../strategies/strategy-memo.js";
import { createTokenizer } from "../tokens/create-tokenizer.js";
import { createMessageCounter } from "../tokens/message-counter.js";
import { lookupModel } from "../tokens/model-table.js";
import { createTokenBudget, type TokenBudget, type TokenBudgetOptions } from "../tokens/token-budget.js";
import { BackgroundRuns } from "./background-runs.js";
import { CalibrationCache } from "./calibration.js";
import { reportError } from "./compaction-steps.js";
import { createEventSink, type EventSink } from "./engine-events.js";
import { type ContextEngineOptions, type EngineSettings, parseEngineOptions } from "./engine-options.js";
import { createStoredCounter, type StoredCounter } from "./stored-counter.js";
import { ThreadCache } from "./thread-cache.js";
import { CheckpointWriter } from "./thread-checkpoint.js";

/** Runs operations on one thread one at a time within this process (other processes are held off by versions). */
export class ThreadLocks {
  readonly #tails = new Map<string, Promise<unknown>>();

  /** Runs `work` after every earlier operation on the thread has settled. */
  run<T>(threadId: string, work: () => Promise<T>): Promise<T> {
    const before = this.#tails.get(threadId) ?? Promise.resolve();
    const result = before.then(work, work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(threadId, tail);
    void tail.then(() => {
      if (this.#tails.get(threadId) === tail) this.#tails.delete(threadId);
    });
    return result;
  }
}

/** Everything the engine's operations share: stores, counter, budget, pipelines, cache, events, clock. */
export interface EngineCore {
  readonly stores: Stores;
  readonly settings: EngineSettings;
  readonly counter: StoredCounter;
  readonly budget: TokenBudget;
  /** The pipeline a turn runs (without model strategies when summarization is in the background). */
  readonly inline: Pipeline;
  /** The whole pipeline: background runs and maintenance compactions. */
  readonly full: Pipeline;
  /** True when turns leave model strategies to background runs. */
  readonly background: boolean;
  readonly pendingCalls: PendingCallMode;
  readonly events: EventSink;
  readonly cache: ThreadCache;
  readonly calibration: CalibrationCache;
  readonly locks: ThreadLocks;
  readonly jobs: BackgroundRuns;
  /** Thread checkpoints written after turns (docs/decisions/0009). */
  readonly checkpoints: CheckpointWriter;
  readonly now: () => number;
  readonly newCallId: () => string;
}

interface Pipelines {
  readonly full: Pipeline;
  readonly inline: Pipeline;
  readonly budget?: TokenBudget;
  /** True when the engine built the pipeline and its summarizer runs in process (no model call). */
  readonly localSummaries: boolean;
}

function isPipeline(value: unknown): value is Pipeline {
  return typeof (value as Pipeline | undefined)?.run === "function";
}

/** A pipeline with only the free strategies of `full`, for turns that leave model strategies to the background. */
function freeOnly(full: Pipeline): Pipeline {
  if (!full.strategies.some((s) => s.cost === "model")) return full;
  return createPipeline({
    strategies: full.strategies.filter((s) => s.cost === "free"),
    pendingCalls: full.pendingCalls,
  });
}

function buildPipelines(options: ContextEngineOptions, settings: EngineSettings): Pipelines {
  if (isPipeline(options.pipeline)) {
    const mode = options.pipeline.pendingCalls;
    if (settings.pendingCalls !== undefined && settings.pendingCalls !== mode) {
      throw new ValidationError(
        `option pendingCalls is ${JSON.stringify(settings.pendingCalls)} but the given pipeline renders pending calls as ${JSON.stringify(mode)}: the request and its replay must render them the same way`,
        { field: "pendingCalls" },
      );
    }
    const inline = options.inlinePipeline ?? freeOnly(options.pipeline);
    if (inline.pendingCalls !== mode) {
      throw new ValidationError("inlinePipeline must render pending calls like pipeline", {
        field: "inlinePipeline",
      });
    }
    return { full: options.pipeline, inline, localSummaries: false };
  }
  const deps: PipelineDependencies = {
    summaryCache: options.stores.summaries,
    artifacts: options.stores.artifacts,
    tenant: settings.tenant,
    ...(options.summarizer === undefined ? {} : { summarizer: options.summarizer }),
  };
  // The engine's pendingCalls option wins over the config's: the pipeline renders the request with it, and
  // replay and render must use the very same mode.
  const base = options.pipeline ?? DEFAULT_PIPELINE_CONFIG;
  const config =
    settings.pendingCalls === undefined ? base : { ...base, pendingCalls: settings.pendingCalls };
  const configured = pipelineFromConfig(config, deps);
  const summarizer = options.summarizer;
  const kind = configured.config.summarizer?.kind ?? "extractive";
  const full = configured.pipeline;
  const free = (config: PipelineConfig): PipelineConfig => ({
    ...config,
    strategies: config.strategies.filter((_, i) => full.strategies[i]?.cost !== "model"),
  });
  const inline =
    options.inlinePipeline ??
    (full.strategies.some((s) => s.cost === "model")
      ? pipelineFromConfig(free(configured.config), deps).pipeline
      : full);
  return {
    full,
    inline,
    localSummaries: summarizer === undefined ? kind === "extractive" : summarizer.local === true,
    ...(configured.budget === undefined ? {} : { budget: configured.budget }),
  };
}

/** Builds a budget from a `TokenBudget` or budget options (a budget passes its own schema unchanged). */
export function toBudget(value: TokenBudget | TokenBudgetOptions): TokenBudget {
  return createTokenBudget(value as TokenBudgetOptions);
}

/** Validates the options and wires the shared parts of an engine. */
export function createEngineCore(options: ContextEngineOptions): EngineCore {
  const settings = parseEngineOptions(options);
  const pipelines = buildPipelines(options, settings);
  const budgetSource = options.budget ?? pipelines.budget;
  if (budgetSource === undefined) {
    throw new ValidationError("the engine needs a budget (option budget, or one in the pipeline config)", {
      field: "budget",
    });
  }
  const budget = toBudget(budgetSource);
  const mode = settings.summarization ?? (pipelines.localSummaries ? "inline" : "background");
  const model =
    budget.model !== undefined && lookupModel(budget.model) !== undefined ? budget.model : undefined;
  const inner =
    options.counter ??
    createMessageCounter(
      options.tokenizer ?? createTokenizer(model === undefined ? {} : { model }),
      settings.overhead ??
        (model !== undefined && lookupModel(model)?.provider === "anthropic" ? "anthropic" : "openai"),
    );
  const counter = createStoredCounter(inner);
  const now = options.now ?? Date.now;
  const listeners =
    options.events === undefined
      ? []
      : typeof options.events === "function"
        ? [options.events]
        : options.events;
  // What a thread checkpoint carries of the strategies' memos, as the strategies declare it.
  const memos = memosOf([...pipelines.full.strategies, ...pipelines.inline.strategies]);
  const cache = new ThreadCache(options.stores, counter, settings.cacheThreads, memos);
  const core: EngineCore = {
    stores: options.stores,
    settings,
    counter,
    budget,
    inline: mode === "inline" ? pipelines.full : pipelines.inline,
    full: pipelines.full,
    background: mode === "background" && pipelines.inline !== pipelines.full,
    pendingCalls: pipelines.full.pendingCalls,
    events: createEventSink(listeners, now),
    cache,
    calibration: new CalibrationCache(options.stores.calls, settings.calibration, now),
    locks: new ThreadLocks(),
    jobs: new BackgroundRuns(),
    checkpoints: new CheckpointWriter(
      options.stores,
      (threadId) => cache.peek(threadId),
      (threadId, error) => reportError(core, "checkpoint", threadId, error),
      memos,
    ),
    now,
    newCallId: options.newCallId ?? (() => randomUUID()),
  };
  return core;
}
