import { randomUUID } from "node:crypto";
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
import type { Stores } from "../stores/stores.js";
import { memosOf } from "../strategies/strategy-memo.js";
import { createTokenizer } from "../tokens/create-tokenizer.js";
import { createMessageCounter } from "../tokens/message-counter.js";
import { lookupModel } from "../tokens/model-table.js";
import {
  type BudgetInput,
  createTokenBudget,
  requestBudget,
  type TokenBudget,
  type TokenBudgetOptions,
} from "../tokens/token-budget.js";
import { createJobRunner } from "./background-jobs.js";
import { CalibrationCache } from "./calibration.js";
import { reportError } from "./compaction-steps.js";
import { type EngineCore, ThreadLocks } from "./engine-core.js";
import { createEventSink } from "./engine-events.js";
import { type ContextEngineOptions, type EngineSettings, parseEngineOptions } from "./engine-options.js";
import { SYSTEM_RETRY_ENVIRONMENT } from "./retry-policy.js";
import { SearchIndexer } from "./search-indexer.js";
import { createStoredCounter } from "./stored-counter.js";
import { ThreadCache } from "./thread-cache.js";
import { cachedLoader, type LoaderFactory } from "./thread-loader.js";

interface Pipelines {
  readonly full: Pipeline;
  readonly inline: Pipeline;
  /** Free reducers only (no summary, no new artifact): the pipeline of a turn that rehydrates. */
  readonly calm: Pipeline;
  readonly budget?: TokenBudget;
  /** True when the engine built the pipeline and its summarizer runs in process (no model call). */
  readonly localSummaries: boolean;
}

function isPipeline(value: unknown): value is Pipeline {
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
    return { full: options.pipeline, inline, calm: calmOnly(options.pipeline), localSummaries: false };
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
 * Builds a budget from any {@link BudgetInput}: a `TokenBudget` or budget options (a budget passes its own schema
 * unchanged), or a number of tokens the request may have at most.
 */
export function toBudget(value: BudgetInput): TokenBudget {
  return typeof value === "number" ? requestBudget(value) : createTokenBudget(value as TokenBudgetOptions);
}

/**
 * The stores acting for the engine's tenant: as given when they act for it already (or keep no tenants), else
 * the same backend bound with `forTenant`. Bind wrapped stores yourself (`stores.forTenant(t)`, then wrap), or
 * the binding here reaches past the wrapper to the backend's own stores.
 */
function storesFor(stores: Stores, tenant: string): Stores {
  if (stores.tenant === undefined || stores.tenant === tenant) return stores;
  if (stores.forTenant === undefined) {
    throw new ValidationError(
      `engine option tenant is ${JSON.stringify(tenant)} but the stores act for tenant ${JSON.stringify(stores.tenant)} and cannot be bound to another`,
      { field: "tenant" },
    );
  }
  return stores.forTenant(tenant);
}

/** Validates the options and wires the shared parts of an engine. */
export function createEngineCore(
  options: ContextEngineOptions,
  makeLoader: LoaderFactory = cachedLoader,
): EngineCore {
  const settings = parseEngineOptions(options);
  const stores = storesFor(options.stores, settings.tenant);
  const pipelines = buildPipelines(options, settings);
  // The type demands one of them; plain JavaScript callers are checked here.
  const budgetSource = ("budget" in options ? options.budget : undefined) ?? pipelines.budget;
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
  const cache = new ThreadCache(stores, counter, settings.cacheThreads);
  const core: EngineCore = {
    stores,
    settings,
    counter,
    budget,
    inline: mode === "inline" ? pipelines.full : pipelines.inline,
    full: pipelines.full,
    calm: pipelines.calm,
    background: mode === "background" && pipelines.inline !== pipelines.full,
    pendingCalls: pipelines.full.pendingCalls,
    events: createEventSink(listeners, now),
    loader: makeLoader({
      stores,
      counter,
      cache,
      memos,
      onError: (threadId, error) => reportError(core, "checkpoint", threadId, error),
    }),
    calibration: new CalibrationCache(stores.calls, settings.calibration, now),
    locks: new ThreadLocks(),
    jobs: createJobRunner(() => core, stores, settings.jobs),
    indexer: new SearchIndexer(stores.log, (threadId, error) => reportError(core, "index", threadId, error)),
    now,
    newCallId: options.newCallId ?? (() => randomUUID()),
    retryEnvironment: SYSTEM_RETRY_ENVIRONMENT,
  };
  return core;
}
