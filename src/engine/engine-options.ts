import * as z from "zod";
import type { PipelineConfig } from "../compaction/pipeline-config.js";
import type { Pipeline } from "../compaction/pipeline-types.js";
import { ValidationError } from "../errors/ledger-error.js";
import { type JobOptions, type JobSettings, jobOptionsSchema, jobSettings } from "../jobs/job-options.js";
import type { Sensitivity } from "../log/message.js";
import type { PendingCallMode } from "../render/render-prompt.js";
import type { AboveClearancePolicy } from "../render/withhold-content.js";
import type { Stores } from "../stores/stores.js";
import { DEFAULT_TENANT } from "../stores/thread-tenancy.js";
import { parseOptions } from "../strategies/options.js";
import type { Summarizer } from "../strategies/summarizer.js";
import type { OverheadProfileName } from "../tokens/message-counter.js";
import type { BudgetInput } from "../tokens/token-budget.js";
import type { MessageCounter, Tokenizer } from "../tokens/tokenizer.js";
import { type CalibrationSettings, DEFAULT_CALIBRATION } from "./calibration.js";
import type { EngineListener } from "./engine-events.js";
import { type ConflictRetryPolicy, DEFAULT_CONFLICT_RETRY } from "./retry-policy.js";

/** Where the model strategies (summarization) of a turn run. */
export type SummarizationMode = "background" | "inline";

/**
 * Options of `createContextEngine`. A budget is required: the `budget` option, or a pipeline config that names
 * one (`pipeline: { budget, strategies }`); without either, the call does not type-check.
 */
export type ContextEngineOptions = ContextEngineSettings & (EngineBudget | ConfigBudget);

/** The engine's default budget, given directly. */
export interface EngineBudget {
  /**
   * The default budget of a turn, in any form `prepareTurn`'s `budget` takes: a number (the request has at most
   * that many tokens), the options of `createTokenBudget` (`{ model }`, `{ contextWindow, reserveOutput, … }`),
   * or a `TokenBudget`.
   */
  readonly budget: BudgetInput;
  /** The compaction pipeline, or a pipeline config (default: `DEFAULT_PIPELINE_CONFIG`). */
  readonly pipeline?: Pipeline | PipelineConfig;
}

/** The engine's default budget, taken from the pipeline config. */
export interface ConfigBudget {
  /** A pipeline config with a `budget`, which becomes the engine's default budget. */
  readonly pipeline: PipelineConfig & { readonly budget: NonNullable<PipelineConfig["budget"]> };
}

/** The options of `createContextEngine` besides its budget and pipeline. */
export interface ContextEngineSettings {
  /** Every store, from one backend. */
  readonly stores: Stores;
  /** Counts tokens (default: `createTokenizer({ model: budget.model })`). */
  readonly tokenizer?: Tokenizer;
  /**
   * Framing profile of the message counter built from `tokenizer` (default: `anthropic` when the budget names an
   * Anthropic model, else `openai`).
   */
  readonly overhead?: OverheadProfileName;
  /** A ready message counter; wins over `tokenizer` and `overhead`. */
  readonly counter?: MessageCounter;
  /**
   * The pipeline a turn runs when summarization is in the background. Derived automatically from a config;
   * for a ready `pipeline` it defaults to its free strategies with `createPipeline`'s default settings.
   */
  readonly inlinePipeline?: Pipeline;
  /** The summarizer of the default or configured pipeline (default: the config's, else extractive). */
  readonly summarizer?: Summarizer;
  /**
   * `background`: a turn never waits for a model strategy (the default when the summarizer calls a model);
   * `inline`: it runs them in the turn (the default when every summary is local, as with the extractive
   * summarizer: there is no model call to keep off the turn's path, and the turn gets the summary at once).
   */
  readonly summarization?: SummarizationMode;
  /**
   * Where background summaries run: in this process (the default for memory and SQLite stores) or on the stores'
   * durable queue (the default for PostgreSQL), with its retry, visibility timeout and shutdown settings
   * (docs/decisions/0020).
   */
  readonly jobs?: JobOptions;
  /** Listeners of the engine's typed events. */
  readonly events?: EngineListener | ReadonlyArray<EngineListener>;
  /**
   * The tenant the engine acts for (default: the stores' own, `default` unless they were bound with
   * `stores.forTenant`). A thread belongs to the tenant of its first append: the engine refuses another
   * tenant's thread on every operation with `ThreadAccessError`, and its artifacts are written and read as this
   * tenant's.
   */
  readonly tenant?: string;
  /** How artifacts the model or the user refers to come back into the request (see `RehydrationOptions`). */
  readonly rehydration?: RehydrationOptions;
  /**
   * The most sensitive class the engine's reader may see (default `internal`; a message without
   * `meta.sensitivity` is `internal`). Every read path holds messages above it back: `prepareTurn`, `render`,
   * `explain`, the report's data and `recall` (see `aboveClearance`); rehydration and `recall` read artifacts
   * with it as an artifact store's clearance; `replay` refuses a call whose request carried content above it.
   */
  readonly clearance?: Sensitivity;
  /**
   * What a read does with content above `clearance` (default `placeholder`): `placeholder` keeps the message
   * (and its tool call / result pairing) with its content replaced by a stub that says it was withheld;
   * `refuse` throws `ClearanceError` instead.
   */
  readonly aboveClearance?: AboveClearancePolicy;
  /** What `recall` returns: at most `maxTokens` tokens (default 4,000), counted with the engine's counter. */
  readonly recall?: { readonly maxTokens?: number };
  /**
   * Retries after another writer won a race on the log or the plan (default 200), each after a random pause of up
   * to `conflictBackoff.initialMs × 2^(retry − 1)` milliseconds, at most `conflictBackoff.maxMs` ("full jitter":
   * writers that collided spread out instead of colliding again). Each retry emits `conflict_retry`.
   */
  readonly maxConflictRetries?: number;
  /**
   * Pauses between conflict retries (default `{ initialMs: 2, maxMs: 50, deadlineMs: 10000 }`; `{ initialMs: 0 }`
   * retries at once). No retry starts more than `deadlineMs` after the operation's first attempt.
   */
  readonly conflictBackoff?: {
    readonly initialMs?: number;
    readonly maxMs?: number;
    readonly deadlineMs?: number;
  };
  readonly calibration?: Partial<CalibrationSettings>;
  /** Threads kept warm in process (default 1,000; 0 makes every load cold). */
  readonly cacheThreads?: number;
  /** How calls without a result are rendered (default: the pipeline config's, else `stub`). */
  readonly pendingCalls?: PendingCallMode;
  /**
   * The ledger key (HMAC-SHA-256, docs/decisions/0018): log rows and plan versions are chained with it, and
   * `replay` verifies the chains with it, so someone who can rewrite every row but does not hold the key cannot
   * recompute a chain that verifies. At least 32 characters (e.g. `openssl rand -hex 32`); every engine and CLI on
   * one database must use the same key. Default: no key (the chains are plain SHA-256, which catches any edit
   * that does not recompute every hash after it).
   */
  readonly ledgerKey?: string;
  /** Clock in epoch milliseconds (default `Date.now`). */
  readonly now?: () => number;
  /** Makes call ids (default `crypto.randomUUID`). */
  readonly newCallId?: () => string;
}

/** The smallest `recall.maxTokens`: room for a head, a tail and the marker between them. */
export const RECALL_MIN_TOKENS = 64;

/** The zod schema of the JSON-shaped engine options (objects such as stores are checked by shape). */
export const engineSettingsSchema = z.strictObject({
  summarization: z.enum(["background", "inline"]).exactOptional(),
  tenant: z.string().trim().min(1).exactOptional(),
  clearance: z.enum(["public", "internal", "confidential", "restricted"]).exactOptional(),
  aboveClearance: z.enum(["placeholder", "refuse"]).exactOptional(),
  rehydration: z
    .strictObject({
      detect: z.boolean().exactOptional(),
      cooldownCalls: z.number().int().nonnegative().max(1_000).exactOptional(),
      maxTokensPerArtifact: z.number().int().positive().exactOptional(),
      maxTokens: z.number().int().nonnegative().exactOptional(),
    })
    .exactOptional(),
  recall: z
    .strictObject({ maxTokens: z.number().int().min(RECALL_MIN_TOKENS).max(1_000_000).exactOptional() })
    .exactOptional(),
  maxConflictRetries: z.number().int().nonnegative().max(10_000).exactOptional(),
  conflictBackoff: z
    .strictObject({
      initialMs: z.number().nonnegative().max(10_000).exactOptional(),
      maxMs: z.number().nonnegative().max(60_000).exactOptional(),
      deadlineMs: z.number().nonnegative().max(3_600_000).exactOptional(),
    })
    .exactOptional(),
  calibration: z
    .strictObject({
      window: z.number().int().positive().exactOptional(),
      minSamples: z.number().int().positive().exactOptional(),
      maxRatio: z.number().gte(1).exactOptional(),
      ttlMs: z.number().int().nonnegative().exactOptional(),
    })
    .exactOptional(),
  cacheThreads: z.number().int().nonnegative().exactOptional(),
  pendingCalls: z.enum(["stub", "hold"]).exactOptional(),
  overhead: z.enum(["openai", "anthropic", "neutral"]).exactOptional(),
  jobs: jobOptionsSchema.exactOptional(),
  ledgerKey: z
    .string()
    .min(32, "a ledger key needs at least 32 characters (e.g. `openssl rand -hex 32`)")
    .max(4_096)
    .exactOptional(),
});

/**
 * Rehydration: before compacting, a turn looks at the text and tool-call arguments appended since the previous
 * call for ids of artifacts the thread externalized, and brings each one back at the end of the request.
 */
export interface RehydrationOptions {
  /** Look for references at all (default true). */
  readonly detect?: boolean;
  /** An artifact brought back in one call is not brought back again in the next this many calls (default 3). */
  readonly cooldownCalls?: number;
  /** Most tokens of one artifact's content; more is cut to head and tail with a marker (default 2,000). */
  readonly maxTokensPerArtifact?: number;
  /**
   * Most tokens all references of a turn may bring back when the budget keeps no `rehydrationReserve` (default
   * 5 % of the context window, at most 8,000); the turn takes that room from the history.
   */
  readonly maxTokens?: number;
}

/** The validated JSON-shaped settings with defaults filled in. */
export interface EngineSettings {
  /** Undefined: chosen by the summarizer (inline when it is local, else background). */
  readonly summarization: SummarizationMode | undefined;
  readonly tenant: string;
  readonly clearance: Sensitivity;
  readonly aboveClearance: AboveClearancePolicy;
  readonly rehydration: {
    readonly detect: boolean;
    readonly cooldownCalls: number;
    readonly maxTokensPerArtifact: number;
    readonly maxTokens: number | undefined;
  };
  readonly recall: { readonly maxTokens: number };
  /** `maxConflictRetries` and `conflictBackoff`, with the defaults filled in. */
  readonly conflictRetry: ConflictRetryPolicy;
  readonly calibration: CalibrationSettings;
  readonly cacheThreads: number;
  readonly pendingCalls: PendingCallMode | undefined;
  /** Undefined: chosen from the budget's model (Anthropic models get Anthropic framing, others OpenAI's). */
  readonly overhead: OverheadProfileName | undefined;
  /** The ledger key, or undefined for plain SHA-256 chains. */
  readonly ledgerKey: string | undefined;
  /** Where background jobs run, and how. */
  readonly jobs: JobSettings;
}

const OBJECT_KEYS = [
  "stores",
  "budget",
  "tokenizer",
  "counter",
  "pipeline",
  "inlinePipeline",
  "summarizer",
  "events",
  "now",
  "newCallId",
] as const;

function needs(ok: boolean, field: string, what: string): void {
  if (!ok) throw new ValidationError(`engine option ${field} must be ${what}`, { field });
}

/** Checks the object-valued options by shape and parses the rest with {@link engineSettingsSchema}. */
export function parseEngineOptions(options: ContextEngineOptions): EngineSettings {
  needs(typeof options === "object" && options !== null, "options", "an object");
  const s = options.stores;
  needs(
    typeof s?.log?.append === "function" &&
      typeof s.plans?.commit === "function" &&
      typeof s.calls?.record === "function",
    "stores",
    "a Stores bundle (log, plans, artifacts, summaries, calls)",
  );
  needs(
    options.tokenizer === undefined || typeof options.tokenizer.count === "function",
    "tokenizer",
    "a Tokenizer",
  );
  needs(
    options.counter === undefined || typeof options.counter.countMessage === "function",
    "counter",
    "a MessageCounter",
  );
  needs(
    options.inlinePipeline === undefined || typeof options.inlinePipeline.run === "function",
    "inlinePipeline",
    "a Pipeline",
  );
  needs(
    options.summarizer === undefined || typeof options.summarizer.summarize === "function",
    "summarizer",
    "a Summarizer",
  );
  const events = options.events;
  needs(
    events === undefined ||
      typeof events === "function" ||
      (Array.isArray(events) && events.every((e) => typeof e === "function")),
    "events",
    "a listener function or an array of them",
  );
  const json = Object.fromEntries(
    Object.entries(options).filter(
      ([key, value]) => !(OBJECT_KEYS as ReadonlyArray<string>).includes(key) && value !== undefined,
    ),
  );
  const o = parseOptions(engineSettingsSchema, json, "engine");
  return {
    summarization: o.summarization,
    tenant: o.tenant ?? s.tenant ?? DEFAULT_TENANT,
    clearance: o.clearance ?? "internal",
    aboveClearance: o.aboveClearance ?? "placeholder",
    rehydration: {
      detect: o.rehydration?.detect ?? true,
      cooldownCalls: o.rehydration?.cooldownCalls ?? 3,
      maxTokensPerArtifact: o.rehydration?.maxTokensPerArtifact ?? 2_000,
      maxTokens: o.rehydration?.maxTokens,
    },
    recall: { maxTokens: o.recall?.maxTokens ?? 4_000 },
    conflictRetry: {
      ...DEFAULT_CONFLICT_RETRY,
      ...o.conflictBackoff,
      retries: o.maxConflictRetries ?? DEFAULT_CONFLICT_RETRY.retries,
    },
    calibration: { ...DEFAULT_CALIBRATION, ...o.calibration },
    cacheThreads: o.cacheThreads ?? 1_000,
    pendingCalls: o.pendingCalls,
    overhead: o.overhead,
    ledgerKey: o.ledgerKey,
    jobs: jobSettings(o.jobs),
  };
}
