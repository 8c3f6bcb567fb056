import { randomUUID } from "node:crypto";
import { ValidationError } from "../errors/ledger-error.js";
import type { PendingCallMode } from "../render/render-prompt.js";
import type { Stores } from "../stores/stores.js";
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
import type { BuiltPipelines, EnginePipelines } from "./engine-pipelines.js";
import { SYSTEM_RETRY_ENVIRONMENT } from "./retry-policy.js";
import { SearchIndexer } from "./search-indexer.js";
import { createStoredCounter } from "./stored-counter.js";
import { ThreadCache } from "./thread-cache.js";
import { cachedLoader, type LoaderFactory } from "./thread-loader.js";

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

/**
 * How an engine gets its pipelines: `buildEnginePipelines` (from `./engine-pipelines.js`) when the caller imports it
 * and so builds them, and checks a pipeline config, at creation; without one, on the first operation that runs a
 * pipeline. A command that only reads (render, explain, replay) then never loads a strategy.
 */
export type PipelineBuilder = (options: ContextEngineOptions, settings: EngineSettings) => BuiltPipelines;

/** What `createEngineCore` is given besides the options. */
export interface EngineParts {
  /** Creates the engine's thread loader (default `cachedLoader`). */
  readonly makeLoader?: LoaderFactory;
  /**
   * Builds the pipelines at creation. Absent: they are built on first use, and the engine then takes its budget
   * from option `budget` only (a pipeline config's own budget is read with the config).
   */
  readonly buildPipelines?: PipelineBuilder;
}

/** How a pipeline built later renders pending calls, from what the options say (the pipeline's own default: stub). */
function pendingCallsOf(options: ContextEngineOptions, settings: EngineSettings): PendingCallMode {
  const given = options.pipeline as { readonly pendingCalls?: PendingCallMode } | undefined;
  return settings.pendingCalls ?? given?.pendingCalls ?? "stub";
}

/** Validates the options and wires the shared parts of an engine. */
export function createEngineCore(options: ContextEngineOptions, parts: EngineParts = {}): EngineCore {
  const settings = parseEngineOptions(options);
  const stores = storesFor(options.stores, settings.tenant);
  const built = parts.buildPipelines?.(options, settings);
  // The type demands one of them; plain JavaScript callers are checked here.
  const budgetSource = ("budget" in options ? options.budget : undefined) ?? built?.budget;
  if (budgetSource === undefined) {
    throw new ValidationError("the engine needs a budget (option budget, or one in the pipeline config)", {
      field: "budget",
    });
  }
  const budget = toBudget(budgetSource);
  const pendingCalls = built?.full.pendingCalls ?? pendingCallsOf(options, settings);
  let pipelines: Promise<EnginePipelines> | undefined =
    built === undefined ? undefined : Promise.resolve(built);
  const pipelinesNow = (): Promise<EnginePipelines> => {
    pipelines ??= import("./engine-pipelines.js").then(({ buildEnginePipelines }) => {
      const later = buildEnginePipelines(options, settings);
      if (later.full.pendingCalls !== pendingCalls) {
        throw new ValidationError(
          `the pipeline renders pending calls as ${JSON.stringify(later.full.pendingCalls)} but the engine was created rendering them as ${JSON.stringify(pendingCalls)}; set option pendingCalls`,
          { field: "pendingCalls" },
        );
      }
      return later;
    });
    return pipelines;
  };
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
  const cache = new ThreadCache(stores, counter, settings.cacheThreads);
  const core: EngineCore = {
    stores,
    settings,
    counter,
    budget,
    pipelines: pipelinesNow,
    pendingCalls,
    events: createEventSink(listeners, now),
    loader: (parts.makeLoader ?? cachedLoader)({
      stores,
      counter,
      cache,
      // What a thread checkpoint carries of the strategies' memos, as the strategies declare it.
      memos: async () => (await pipelinesNow()).memos,
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
