/**
 * Options shared by `createPrepareStep` and `contextLedgerMiddleware`, checked when the helper is made (a misspelt
 * option fails at once, not at the first model call), and the render format a model's provider takes.
 */
import * as z from "zod";
import type {
  BudgetInput,
  ContextEngine,
  PreparedTurn,
  ProviderFormat,
  ToolDefinition,
} from "../../index.js";
import { checkWingOptions, nonEmptyString } from "../wing-options.js";
import type { LanguageModel } from "./sdk-types.js";

/** What both helpers take. */
export interface LedgerOptions {
  readonly engine: ContextEngine;
  readonly threadId: string;
  /**
   * The request format the engine renders and checks each turn in: its provider's rules (which messages may
   * follow which) and token framing. Default: from the model's provider — `anthropic` for Anthropic models
   * (also through Bedrock or Vertex), `responses` for OpenAI's Responses API, else `openai`.
   */
  readonly format?: ProviderFormat;
  /** The budget of each turn (default: the engine's); a number is a ceiling on the request's tokens. */
  readonly budget?: BudgetInput;
  /** The model name the engine records and calibrates its estimate for (default: the model's id). */
  readonly model?: string;
  /** Anthropic prompt-cache breakpoints in the engine's own request (see `PrepareTurnOptions.cacheControl`). */
  readonly cacheControl?: boolean;
  /** Told about each prepared turn (its call id for `recordUsage` and `replay`, its figures). */
  readonly onTurn?: (turn: PreparedTurn) => void | Promise<void>;
}

/** The options both helpers take beyond the wings' shared ones. */
const ledgerShapes = {
  threadId: nonEmptyString,
  cacheControl: z.boolean({ error: "must be a boolean" }).optional(),
};

/**
 * Checks a helper's options (unknown keys refused, so `budjet` is not silently ignored), naming the field; what
 * a budget object holds is checked by the engine's `prepareTurn`.
 */
export function checkOptions<T>(helper: string, options: T, extra: z.core.$ZodLooseShape = {}): T {
  return checkWingOptions(helper, options, { ...ledgerShapes, ...extra });
}

/** The tool definitions option's shape: an SDK tool set or neutral definitions. */
export const toolsOption = z
  .custom<object>(
    (v) => typeof v === "object" && v !== null,
    "must be a tool set or an array of tool definitions",
  )
  .optional();

/** The render format for a provider name, e.g. `anthropic.messages` → `anthropic`, `openai.responses` → `responses`. */
export function formatForProvider(provider: string | undefined): ProviderFormat {
  const name = (provider ?? "").toLowerCase();
  if (name.includes("anthropic")) return "anthropic";
  if (name.endsWith(".responses")) return "responses";
  return "openai";
}

/** The provider and id of a model given to the SDK: a model object, or a gateway id such as `openai/gpt-5`. */
export function modelInfo(model: LanguageModel | undefined): { provider?: string; modelId?: string } {
  if (typeof model === "string") {
    const slash = model.indexOf("/");
    return slash < 0 ? { modelId: model } : { provider: model.slice(0, slash), modelId: model };
  }
  if (model === undefined || model === null) return {};
  return { provider: model.provider, modelId: model.modelId };
}

/** The options of `prepareTurn` for one step. */
export function turnOptions(
  options: LedgerOptions,
  model: { provider?: string; modelId?: string },
  tools: ReadonlyArray<ToolDefinition>,
) {
  const modelName = options.model ?? model.modelId;
  return {
    format: options.format ?? formatForProvider(model.provider),
    ...(modelName === undefined || modelName === "" ? {} : { model: modelName }),
    ...(options.budget === undefined ? {} : { budget: options.budget }),
    ...(tools.length === 0 ? {} : { tools }),
    ...(options.cacheControl === undefined ? {} : { cacheControl: options.cacheControl }),
  };
}
