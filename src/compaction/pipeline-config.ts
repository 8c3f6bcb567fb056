import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { extname } from "node:path";
import { z } from "zod";
import { LedgerError, ValidationError } from "../errors/ledger-error.js";
import type { ArtifactStore } from "../stores/artifact-store.js";
import type { SummaryCache } from "../stores/summary-cache.js";
import { toolClassesSchema } from "../strategies/durability-classes.js";
import { createExternalization } from "../strategies/externalization.js";
import { createHardFallback, hardFallbackOptionsSchema } from "../strategies/hard-fallback.js";
import { parseOptions } from "../strategies/options.js";
import { createOversizedExcerpt } from "../strategies/oversized-excerpt.js";
import { createReasoningRetention } from "../strategies/reasoning-retention.js";
import { createRollingWindow } from "../strategies/rolling-window.js";
import { createSlidingWindow } from "../strategies/sliding-window.js";
import type { Strategy } from "../strategies/strategy.js";
import { createSummarization } from "../strategies/summarization.js";
import type { Summarizer } from "../strategies/summarizer.js";
import { createExtractiveSummarizer } from "../strategies/summarizers/extractive-summarizer.js";
import { SUMMARY_PROMPT_VERSION } from "../strategies/summarizers/summary-prompt.js";
import { createToolResultCollapse } from "../strategies/tool-result-collapse.js";
import { createToolResultRetention } from "../strategies/tool-result-retention.js";
import { createTruncation } from "../strategies/truncation.js";
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

/** Built-in strategies by the `use` name a config file gives. */
const BUILT_INS: Readonly<Record<string, Factory>> = {
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

const summarizerSchema = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("extractive") }),
  z.strictObject({
    kind: z.literal("openai"),
    model: z.string().min(1),
    baseURL: z.url().optional(),
    /** Environment variable holding the key (default OPENAI_API_KEY); keys never live in config files. */
    apiKeyEnv: z.string().min(1).optional(),
    timeoutMs: z.number().int().positive().optional(),
  }),
  z.strictObject({
    kind: z.literal("anthropic"),
    model: z.string().min(1),
    baseURL: z.url().optional(),
    apiKeyEnv: z.string().min(1).optional(),
    timeoutMs: z.number().int().positive().optional(),
  }),
]);

/** The zod schema of a pipeline config file. Strategy entries are checked by each strategy's own schema. */
export const pipelineConfigSchema = z.strictObject({
  budget: tokenBudgetOptionsSchema.optional(),
  strategies: z.array(z.looseObject({ use: z.string().min(1) })),
  /** `false` turns the hard fallback off; an object configures it. */
  fallback: z.union([z.literal(false), hardFallbackOptionsSchema]).optional(),
  summarizer: summarizerSchema.optional(),
  goalRatio: z.number().gt(0).lte(1).optional(),
  minGain: z.number().int().nonnegative().optional(),
  maxAttempts: z.number().int().positive().optional(),
  failureCooldown: z.number().int().nonnegative().optional(),
  formats: z.array(z.enum(["openai", "responses", "anthropic"])).optional(),
  pendingCalls: z.enum(["stub", "hold"]).optional(),
  /** Which message is the thread's task, kept verbatim like the newest user message (default `firstUserMessage`). */
  task: z.enum(["firstUserMessage", "none"]).optional(),
  /** Durability classes per tool name (`none`: unclassed), over the built-in classes of tool-name words. */
  toolClasses: toolClassesSchema.optional(),
  /** `false`: tools without a configured class stay unclassed. */
  builtInToolClasses: z.boolean().optional(),
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
    const builtIn = BUILT_INS[use];
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
