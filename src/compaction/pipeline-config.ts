import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { extname } from "node:path";
import * as z from "zod";
import { LedgerError, ValidationError } from "../errors/ledger-error.js";
import type { ArtifactStore } from "../stores/artifact-store.js";
import type { SummaryCache } from "../stores/summary-cache.js";
import { toolClassesSchema } from "../strategies/durability-classes.js";
import { createExternalization, externalizationOptionsSchema } from "../strategies/externalization.js";
import { createHardFallback, hardFallbackOptionsSchema } from "../strategies/hard-fallback.js";
import { parseOptions } from "../strategies/options.js";
import { createOversizedExcerpt, oversizedExcerptOptionsSchema } from "../strategies/oversized-excerpt.js";
import {
  createReasoningRetention,
  reasoningRetentionOptionsSchema,
} from "../strategies/reasoning-retention.js";
import { createRollingWindow, rollingWindowOptionsSchema } from "../strategies/rolling-window.js";
import { createSlidingWindow, slidingWindowOptionsSchema } from "../strategies/sliding-window.js";
import type { Strategy } from "../strategies/strategy.js";
import { createSummarization, summarizationOptionsSchema } from "../strategies/summarization.js";
import type { Summarizer } from "../strategies/summarizer.js";
import { createExtractiveSummarizer } from "../strategies/summarizers/extractive-summarizer.js";
import { SUMMARY_PROMPT_VERSION } from "../strategies/summarizers/summary-prompt.js";
import { toolResultRetentionOptionsSchema } from "../strategies/tool-policy.js";
import {
  createToolResultCollapse,
  toolResultCollapseOptionsSchema,
} from "../strategies/tool-result-collapse.js";
import { createToolResultRetention } from "../strategies/tool-result-retention.js";
import { createTruncation, truncationOptionsSchema } from "../strategies/truncation.js";
import { createTokenBudget, type TokenBudget, tokenBudgetOptionsSchema } from "../tokens/token-budget.js";
import { createPipeline } from "./pipeline.js";
import type { Pipeline, PipelineStrategy } from "./pipeline-types.js";

/** What strategies need beyond their JSON options: the model summarizer, caches, stores, custom strategies. */
export interface PipelineDependencies {
  /** Overrides the summarizer the config names (default: the config's, else the extractive one). */
  readonly summarizer?: Summarizer;
  readonly summaryCache?: SummaryCache;
  /** Where `externalize` puts content; required when the config uses it. */
  readonly artifacts?: ArtifactStore;
  /** Tenant that externalized artifacts belong to (default `default`). */
  readonly tenant?: string;
  /** Your own strategies by `use` name; they get their config entry (without `use`) as options. */
  readonly custom?: Readonly<Record<string, (options: Record<string, unknown>) => Strategy>>;
}

type Factory = (
  options: Record<string, unknown>,
  deps: Required<Pick<PipelineDependencies, "tenant">> & PipelineDependencies & { summarizer: Summarizer },
) => PipelineStrategy;

/** The `use` names of the built-in strategies. */
export type BuiltInStrategyName =
  | "toolResultRetention"
  | "reasoningRetention"
  | "slidingWindow"
  | "rollingWindow"
  | "truncation"
  | "toolResultCollapse"
  | "oversizedExcerpt"
  | "summarize"
  | "externalize"
  | "hardFallback";

/** Built-in strategies by the `use` name a config file gives. */
const BUILT_INS: Readonly<Record<BuiltInStrategyName, Factory>> = {
  toolResultRetention: (o) => createToolResultRetention(o),
  reasoningRetention: (o) => createReasoningRetention(o),
  slidingWindow: (o) => createSlidingWindow(o as never),
  rollingWindow: (o) => createRollingWindow(o as never),
  truncation: (o) => createTruncation(o as never),
  toolResultCollapse: (o) => createToolResultCollapse(o),
  oversizedExcerpt: (o) => createOversizedExcerpt(o),
  summarize: (o, d) =>
    createSummarization({
      ...o,
      summarizer: d.summarizer,
      ...(d.summaryCache ? { cache: d.summaryCache } : {}),
    }),
  externalize: (o, d) => {
    if (d.artifacts === undefined) {
      throw new ValidationError("externalize needs an artifact store (pass `artifacts`)", {
        field: "artifacts",
      });
    }
    return createExternalization({ tenant: d.tenant, ...o, store: d.artifacts } as never);
  },
  hardFallback: (o) => createHardFallback(o),
};

/** The options of a model summarizer; keys never live in config files, only the name of their variable. */
const modelSummarizerFields = (provider: "OPENAI" | "ANTHROPIC") => ({
  model: z.string().min(1).meta({ description: "The model that writes the summaries." }),
  baseURL: z
    .url()
    .optional()
    .meta({ description: "Endpoint of a compatible server.", defaultText: "the SDK's default" }),
  apiKeyEnv: z
    .string()
    .min(1)
    .optional()
    .meta({ description: "Environment variable holding the API key.", default: `${provider}_API_KEY` }),
  timeoutMs: z.number().int().positive().optional().meta({
    description: "Timeout of one summary request, in milliseconds.",
    default: 60_000,
  }),
});

/**
 * What each built-in strategy does and the schema of its options in a config entry (beside `use`): the source of
 * the configuration reference (docs/CONFIG.md, `npm run docs:config`).
 */
export const BUILT_IN_STRATEGY_OPTIONS: Readonly<Record<BuiltInStrategyName, z.ZodType>> = {
  toolResultRetention: toolResultRetentionOptionsSchema.meta({
    description:
      "Free. Clears tool results once they expire by age or count, per tool and durability class: soft (a placeholder keeps the call and its pairing) or hard (whole groups dropped).",
  }),
  reasoningRetention: reasoningRetentionOptionsSchema.meta({
    description:
      "Free. Removes the reasoning of turns older than the newest `keepTurns` where it costs tokens in the request (reasoning no adapter sends is left alone).",
  }),
  slidingWindow: slidingWindowOptionsSchema.meta({
    description:
      "Free. Keeps the newest `keepGroups` groups (a call with its results is one group) and drops older ones.",
  }),
  rollingWindow: rollingWindowOptionsSchema.meta({
    description:
      "Free. Keeps the newest `keepTurns` turns (a user message and everything until the next one).",
  }),
  truncation: truncationOptionsSchema.meta({
    description: "Free. Keeps the first `keepFirst` and the last `keepLast` groups and drops the middle.",
  }),
  toolResultCollapse: toolResultCollapseOptionsSchema.meta({
    description:
      "Free. Replaces older tool-call groups with one line each (`[tool results: read_file → first line; …]`).",
  }),
  oversizedExcerpt: oversizedExcerptOptionsSchema.meta({
    description:
      "Free. Cuts a single message larger than a share of the target to its head and tail, with a marker of what was left out and the key lines of the cut middle.",
  }),
  summarize: summarizationOptionsSchema.meta({
    description:
      "Model (or local with the extractive summarizer). Replaces the oldest span of history with one structured summary; cached by span hash.",
  }),
  externalize: externalizationOptionsSchema.meta({
    description:
      "Free. Moves large tool-call groups to the artifact store; the request shows a pointer naming the artifact, which `recall` brings back.",
  }),
  hardFallback: hardFallbackOptionsSchema.meta({
    description:
      "Free; the pipeline's last resort (its `fallback`), also usable as a step. Drops the oldest groups outside the protected core, by durability class, until the request fits.",
  }),
};

const summarizerSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("extractive").meta({ description: "Local: key lines and facts, no model call." }),
  }),
  z.strictObject({
    kind: z.literal("openai").meta({ description: "An OpenAI-compatible Chat Completions model." }),
    ...modelSummarizerFields("OPENAI"),
  }),
  z.strictObject({
    kind: z.literal("anthropic").meta({ description: "An Anthropic Messages model." }),
    ...modelSummarizerFields("ANTHROPIC"),
  }),
]);

/** The zod schema of a pipeline config file. Strategy entries are checked by each strategy's own schema. */
export const pipelineConfigSchema = z.strictObject({
  budget: tokenBudgetOptionsSchema.optional().meta({
    description: "The token budget (the engine's default budget when its own `budget` option is absent).",
    defaultText: "none: the engine's `budget` option",
  }),
  strategies: z.array(z.looseObject({ use: z.string().min(1) })).meta({
    description:
      "The strategies, run in this order (free ones first): each entry names a strategy with `use` and gives its options beside it.",
  }),
  fallback: z
    .union([z.literal(false), hardFallbackOptionsSchema])
    .optional()
    .meta({
      description:
        "The last resort while still over the target: the options of `hardFallback`, or `false` to turn it off.",
      defaultText: "`hardFallback` with its defaults",
    }),
  summarizer: summarizerSchema.optional().meta({
    description: "What writes the summaries of `summarize`: `{ kind: extractive | openai | anthropic, … }`.",
    defaultText: "`{ kind: extractive }`",
  }),
  goalRatio: z.number().gt(0).lte(1).optional().meta({
    description:
      "When compaction fires, aim at this share of the target, so the next turns fit without compacting again and the prompt prefix stays cached.",
    default: 0.8,
  }),
  minGain: z.number().int().nonnegative().optional().meta({
    description:
      "A free strategy's proposal made while under the target is applied only when it saves at least this many tokens (smaller ones wait and are batched).",
    defaultText: "10 % of the target",
  }),
  maxAttempts: z
    .number()
    .int()
    .positive()
    .optional()
    .meta({ description: "Tries per model strategy and run when it fails.", default: 1 }),
  failureCooldown: z.number().int().nonnegative().optional().meta({
    description: "Runs a model strategy sits out after a run in which all its attempts failed.",
    default: 3,
  }),
  formats: z
    .array(z.enum(["openai", "responses", "anthropic"]))
    .optional()
    .meta({
      description: "Provider formats the final request must be valid for.",
      default: ["openai", "responses", "anthropic"],
    }),
  pendingCalls: z.enum(["stub", "hold"]).optional().meta({
    description:
      "How a tool call without a result yet is rendered: `stub` adds a placeholder result, `hold` leaves the call out of the request.",
    default: "stub",
  }),
  task: z.enum(["firstUserMessage", "none"]).optional().meta({
    description:
      "Which message is the thread's task, kept verbatim like the newest user message (`none`: no task).",
    default: "firstUserMessage",
  }),
  toolClasses: toolClassesSchema.optional().meta({ defaultText: "none: the built-in classes only" }),
  builtInToolClasses: z.boolean().optional().meta({
    description:
      "Give tools without a configured class the built-in class of their name's words; `false` leaves them unclassed.",
    default: true,
  }),
});

/** A validated pipeline config. */
export type PipelineConfig = z.infer<typeof pipelineConfigSchema>;

/** What a config builds: the pipeline, and the budget when the config names one. */
export interface ConfiguredPipeline {
  readonly config: PipelineConfig;
  readonly pipeline: Pipeline;
  readonly budget?: TokenBudget;
}

interface ModelSummarizerConfig {
  readonly model: string;
  readonly baseURL?: string;
  readonly apiKey?: string;
  readonly timeoutMs?: number;
}

/**
 * A model summarizer whose SDK is imported on its first use, so that loading a config (or the library) never
 * pulls the provider SDKs into a process that only uses the extractive summarizer.
 */
function lazySummarizer(kind: "openai" | "anthropic", options: ModelSummarizerConfig): Summarizer {
  let loaded: Promise<Summarizer> | undefined;
  const load = async (): Promise<Summarizer> =>
    kind === "openai"
      ? (await import("../strategies/summarizers/openai-summarizer.js")).createOpenAISummarizer(options)
      : (await import("../strategies/summarizers/anthropic-summarizer.js")).createAnthropicSummarizer(
          options,
        );
  return Object.freeze({
    id: `${kind}:${options.model}`,
    promptVersion: SUMMARY_PROMPT_VERSION,
    summarize: async (request: Parameters<Summarizer["summarize"]>[0]) => {
      loaded ??= load();
      return (await loaded).summarize(request);
    },
  });
}

function buildSummarizer(config: PipelineConfig["summarizer"]): Summarizer {
  if (config === undefined || config.kind === "extractive") return createExtractiveSummarizer();
  const apiKey =
    process.env[config.apiKeyEnv ?? (config.kind === "openai" ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY")];
  return lazySummarizer(config.kind, {
    model: config.model,
    ...(config.baseURL === undefined ? {} : { baseURL: config.baseURL }),
    ...(apiKey === undefined ? {} : { apiKey }),
    ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
  });
}

/** Prefixes a strategy's own validation error with the entry's position in the config. */
function atEntry(error: unknown, index: number, use: string): never {
  if (error instanceof ValidationError) {
    const field = `strategies[${index}]${error.where.field ? `.${error.where.field}` : ""}`;
    throw new ValidationError(
      `config entry ${field} (${use}): ${error.message}`,
      { field },
      { cause: error },
    );
  }
  throw error;
}

/**
 * Builds a pipeline from a config object (already parsed from JSON or YAML). A bad value raises a
 * `ValidationError` naming the field, e.g. `strategies[1].keepGroups`.
 *
 * @example
 * const { pipeline, budget } = pipelineFromConfig({
 *   budget: { model: "gpt-4o", reserveOutput: 4096 },
 *   strategies: [{ use: "toolResultRetention", default: { keepTurns: 3 } }, { use: "slidingWindow", keepGroups: 40 }],
 * });
 */
export function pipelineFromConfig(value: unknown, deps: PipelineDependencies = {}): ConfiguredPipeline {
  const config = parseOptions(pipelineConfigSchema, value, "pipeline config") as PipelineConfig;
  const summarizer = deps.summarizer ?? buildSummarizer(config.summarizer);
  const full = { ...deps, summarizer, tenant: deps.tenant ?? "default" };
  const strategies = config.strategies.map((entry, index) => {
    const { use, ...options } = entry;
    const builtIn = Object.hasOwn(BUILT_INS, use) ? BUILT_INS[use as BuiltInStrategyName] : undefined;
    const custom = deps.custom?.[use];
    if (builtIn === undefined && custom === undefined) {
      const known = [...Object.keys(BUILT_INS), ...Object.keys(deps.custom ?? {})].join(", ");
      throw new ValidationError(`unknown strategy ${JSON.stringify(use)} (known: ${known})`, {
        field: `strategies[${index}].use`,
      });
    }
    try {
      return custom !== undefined ? custom(options) : builtIn!(options, full);
    } catch (error) {
      return atEntry(error, index, use);
    }
  });
  // A pipeline that externalizes also moves the non-replayable groups its fallback gives up to artifacts.
  const store =
    deps.artifacts !== undefined && externalizes(config)
      ? { artifacts: deps.artifacts, tenant: full.tenant }
      : {};
  const pipeline = createPipeline({
    strategies,
    ...(config.fallback === false
      ? { fallback: false }
      : config.fallback === undefined && store.artifacts === undefined
        ? {}
        : { fallback: createHardFallback({ ...(config.fallback ?? {}), ...markDropsOf(config), ...store }) }),
    ...pick(config, [
      "goalRatio",
      "minGain",
      "maxAttempts",
      "failureCooldown",
      "formats",
      "pendingCalls",
      "task",
      "toolClasses",
      "builtInToolClasses",
    ]),
  });
  return {
    config,
    pipeline,
    ...(config.budget === undefined ? {} : { budget: createTokenBudget(config.budget) }),
  };
}

function externalizes(config: PipelineConfig): boolean {
  return config.strategies.some((entry) => entry.use === "externalize");
}

/**
 * Whether the config's fallback leaves a marker where dropped runs begin: as its `markDrops` says, else when the
 * pipeline externalizes — a harness with an artifact store takes part in getting content back (pointers name the
 * recall tool), so what the fallback drops should say how to find it too.
 */
export function marksDrops(config: PipelineConfig): boolean {
  if (config.fallback === false) return false;
  return config.fallback?.markDrops ?? externalizes(config);
}

function markDropsOf(config: PipelineConfig): { readonly markDrops?: true } {
  return marksDrops(config) ? { markDrops: true } : {};
}

/**
 * `config` with `strategies` in place of its own, keeping the fallback's drop markers as the whole config decides
 * them: a lighter pipeline (free strategies only, or a turn that rehydrates) drops the way the full one does.
 */
export function withStrategies(
  config: PipelineConfig,
  strategies: PipelineConfig["strategies"],
): PipelineConfig {
  const fallback = config.fallback;
  if (fallback === false || !marksDrops(config)) return { ...config, strategies };
  return { ...config, strategies, fallback: { ...(fallback ?? {}), markDrops: true } };
}

/** The given fields of `value` that are set (absent rather than `undefined`, as exact optional types want). */
function pick<T extends object, K extends keyof T>(
  value: T,
  keys: ReadonlyArray<K>,
): { [P in K]?: Exclude<T[P], undefined> } {
  const out: { [P in K]?: Exclude<T[P], undefined> } = {};
  for (const key of keys) if (value[key] !== undefined) out[key] = value[key] as Exclude<T[K], undefined>;
  return out;
}

/** The `yaml` package, loaded on the first YAML config (most runs never read one, and it is a large module). */
let yamlModule: typeof import("yaml") | undefined;
function yamlParser(): typeof import("yaml") {
  yamlModule ??= createRequire(import.meta.url)("yaml") as typeof import("yaml");
  return yamlModule;
}

/** Parses JSON or YAML text (by file name) into a plain value; syntax errors name the file and line. */
export function parseConfigText(text: string, fileName: string): unknown {
  const yaml = /\.ya?ml$/i.test(extname(fileName));
  try {
    return yaml ? yamlParser().parse(text) : JSON.parse(text);
  } catch (error) {
    const line =
      yaml && error instanceof yamlParser().YAMLParseError
        ? error.linePos?.[0].line
        : lineOfOffset(text, /position (\d+)/.exec(String(error))?.[1]);
    throw new ValidationError(
      `config file is not valid ${yaml ? "YAML" : "JSON"}: ${error instanceof Error ? error.message.split("\n")[0] : error}`,
      line === undefined ? {} : { line },
      { cause: error },
    );
  }
}

function lineOfOffset(text: string, offset: string | undefined): number | undefined {
  if (offset === undefined) return undefined;
  return text.slice(0, Number(offset)).split("\n").length;
}

/** Reads a JSON or YAML config file and builds its pipeline (see {@link pipelineFromConfig}). */
export function loadPipelineConfig(path: string, deps: PipelineDependencies = {}): ConfiguredPipeline {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ValidationError(
      `cannot read config file ${path}: ${(error as Error).message}`,
      {},
      { cause: error },
    );
  }
  try {
    return pipelineFromConfig(parseConfigText(text, path), deps);
  } catch (error) {
    // Keep the error's class, code and field; say which file it came from.
    if (error instanceof LedgerError && !error.message.startsWith(path))
      error.message = `${path}: ${error.message}`;
    throw error;
  }
}
