import * as z from "zod";
import { ValidationError } from "../errors/ledger-error.js";
import { lookupModel } from "./model-table.js";

/** Optional per-tier ceilings, as fractions of the context window. */
export interface TierCaps {
  /** Tool results may use at most this fraction of the window (e.g. 0.3). */
  readonly toolResults?: number;
}

/**
 * How the context window is split, in tokens. Compaction aims at {@link compactionTarget}; per-turn injections
 * and rehydrated artifacts must fit in their own reserves.
 */
export interface TokenBudget {
  readonly model?: string;
  readonly contextWindow: number;
  /** Tokens kept free for the model's reply. */
  readonly reserveOutput: number;
  /** Tokens of the tool definitions sent with every request. */
  readonly toolSchemaTokens: number;
  /** Request framing not attributed to any message. */
  readonly formattingOverhead: number;
  /** Headroom for estimation error. */
  readonly safetyMargin: number;
  /** Room kept for per-turn injected content. */
  readonly injectionReserve: number;
  /** Room kept for artifacts brought back this turn. */
  readonly rehydrationReserve: number;
  readonly tierCaps: TierCaps;
}

/** Options of {@link createTokenBudget}; every field but one of `model` / `contextWindow` is optional. */
export interface TokenBudgetOptions {
  /** Known model name: supplies the window and the default output reserve. */
  readonly model?: string;
  /** Overrides the model's window; required for unknown models. */
  readonly contextWindow?: number;
  /** Default: the model's default max output tokens (else 4,096), at most half the window. */
  readonly reserveOutput?: number;
  /** Default 0. */
  readonly toolSchemaTokens?: number;
  /** Default 0. */
  readonly formattingOverhead?: number;
  /** Default: 1% of the window, rounded up. */
  readonly safetyMargin?: number;
  /** Default 0. */
  readonly injectionReserve?: number;
  /** Default 0. */
  readonly rehydrationReserve?: number;
  readonly tierCaps?: TierCaps;
}

const tokens = z.number().int().nonnegative().exactOptional();

/** The zod schema guarding {@link TokenBudgetOptions} (unknown keys are rejected, so typos are caught). */
export const tokenBudgetOptionsSchema = z
  .strictObject({
    model: z.string().trim().min(1).exactOptional().meta({
      description: "A known model name: supplies the context window and the default output reserve.",
      defaultText: "none: give `contextWindow`",
    }),
    contextWindow: z.number().int().positive().exactOptional().meta({
      description: "The context window in tokens; overrides the model's, required for unknown models.",
      defaultText: "the model's",
    }),
    reserveOutput: tokens.meta({
      description: "Tokens kept free for the model's reply.",
      defaultText: "the model's default max output (else 4,096), at most half the window",
    }),
    toolSchemaTokens: tokens.meta({
      description:
        "Tokens of the tool definitions sent with every request (a turn that passes `tools` counts them instead).",
      default: 0,
    }),
    formattingOverhead: tokens.meta({
      description: "Request framing not attributed to any message.",
      default: 0,
    }),
    safetyMargin: tokens.meta({
      description: "Headroom for estimation error.",
      defaultText: "1 % of the window",
    }),
    injectionReserve: tokens.meta({ description: "Room kept for per-turn injected content.", default: 0 }),
    rehydrationReserve: tokens.meta({
      description: "Room kept for artifacts brought back this turn.",
      default: 0,
    }),
    tierCaps: z
      .strictObject({
        toolResults: z.number().gt(0).lte(1).exactOptional().meta({
          description: "Tool results may use at most this share of the window.",
          defaultText: "no cap",
        }),
      })
      .readonly()
      .exactOptional()
      .meta({ description: "Ceilings per tier, as shares of the context window.", defaultText: "no caps" }),
  })
  .readonly();

const DEFAULT_RESERVE_OUTPUT = 4_096;
const DEFAULT_SAFETY_FRACTION = 0.01;

function parseOptions(options: unknown): TokenBudgetOptions {
  const parsed = tokenBudgetOptionsSchema.safeParse(options);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path = issue?.path.map(String) ?? [];
  // An unknown key (a typo such as `reserveOuptut`) is reported on the object; name the key itself.
  if (issue?.code === "unrecognized_keys" && issue.keys[0] !== undefined) path.push(issue.keys[0]);
  const field = path.join(".");
  throw new ValidationError(
    `invalid token budget option${field ? ` ${field}` : ""}: ${issue?.message ?? "invalid"}`,
    field ? { field } : {},
    { cause: parsed.error },
  );
}

function windowOf(options: TokenBudgetOptions): { contextWindow: number; reserveOutput: number } {
  const info = options.model === undefined ? undefined : lookupModel(options.model);
  if (options.model !== undefined && info === undefined && options.contextWindow === undefined) {
    throw new ValidationError(
      `unknown model ${JSON.stringify(options.model)}: pass contextWindow (and reserveOutput) explicitly`,
      { field: "model" },
    );
  }
  const contextWindow = options.contextWindow ?? info?.contextWindow;
  if (contextWindow === undefined) {
    throw new ValidationError("a token budget needs a model or a contextWindow", { field: "contextWindow" });
  }
  const reserveOutput =
    options.reserveOutput ??
    Math.min(info?.defaultMaxOutputTokens ?? DEFAULT_RESERVE_OUTPUT, contextWindow >> 1);
  return { contextWindow, reserveOutput };
}

/** Throws when the reserves, added in order, leave no room for the prompt; names the reserve that overflowed. */
function checkReserves(budget: TokenBudget): void {
  const order = [
    "reserveOutput",
    "toolSchemaTokens",
    "formattingOverhead",
    "safetyMargin",
    "injectionReserve",
    "rehydrationReserve",
  ] as const;
  let used = 0;
  for (const field of order) {
    used += budget[field];
    if (used >= budget.contextWindow) {
      const terms = order.slice(0, order.indexOf(field) + 1).map((f) => `${f} ${budget[f]}`);
      throw new ValidationError(
        `token budget reserves leave no room for the prompt: ${terms.join(" + ")} = ${used} >= contextWindow ${budget.contextWindow}`,
        { field },
      );
    }
  }
}

/**
 * Validates options and builds a frozen {@link TokenBudget}. Bad values (negative or fractional token counts,
 * unknown keys, a tier cap outside (0, 1], reserves that fill the window, an unknown model without a
 * `contextWindow`) raise a `ValidationError` naming the field.
 *
 * @example
 * const budget = createTokenBudget({ model: "gpt-4o", injectionReserve: 2_000 });
 * compactionTarget(budget); // 128_000 - 16_384 - 1_280 - 2_000 = 108_336
 */
export function createTokenBudget(options: TokenBudgetOptions = {}): TokenBudget {
  const o = parseOptions(options);
  const { contextWindow, reserveOutput } = windowOf(o);
  const budget: TokenBudget = {
    ...(o.model === undefined ? {} : { model: o.model }),
    contextWindow,
    reserveOutput,
    toolSchemaTokens: o.toolSchemaTokens ?? 0,
    formattingOverhead: o.formattingOverhead ?? 0,
    safetyMargin: o.safetyMargin ?? Math.ceil(contextWindow * DEFAULT_SAFETY_FRACTION),
    injectionReserve: o.injectionReserve ?? 0,
    rehydrationReserve: o.rehydrationReserve ?? 0,
    tierCaps: Object.freeze({ ...o.tierCaps }),
  };
  checkReserves(budget);
  return Object.freeze(budget);
}

/**
 * A budget wherever one is taken (`createContextEngine`, `prepareTurn`, `compact`): a `TokenBudget`, the options
 * of `createTokenBudget` (`{ model }`, `{ contextWindow, reserveOutput, … }`), or a plain ceiling on the request's
 * tokens: a budget with that context window and no output reserve or safety margin.
 */
export type BudgetInput = TokenBudget | TokenBudgetOptions | number;

/**
 * A budget under which the rendered request has at most `tokens` tokens (the CLI's `--budget TOKENS`), of which
 * `turnReserve` are kept for the turn's injected and rehydrated content.
 */
export function requestBudget(tokens: number, turnReserve = 0): TokenBudget {
  return createTokenBudget({
    contextWindow: tokens,
    reserveOutput: 0,
    safetyMargin: 0,
    injectionReserve: turnReserve,
  });
}

/** Tokens the prompt may use: window − output reserve − tool schemas − formatting − safety margin. */
export function availableForPrompt(budget: TokenBudget): number {
  return (
    budget.contextWindow -
    budget.reserveOutput -
    budget.toolSchemaTokens -
    budget.formattingOverhead -
    budget.safetyMargin
  );
}

/** What compaction aims for: the prompt budget minus the injection and rehydration reserves. */
export function compactionTarget(budget: TokenBudget): number {
  return availableForPrompt(budget) - budget.injectionReserve - budget.rehydrationReserve;
}

/** The token ceiling of tool results, or `undefined` when no cap is set. */
export function toolResultCap(budget: TokenBudget): number | undefined {
  const fraction = budget.tierCaps.toolResults;
  return fraction === undefined ? undefined : Math.floor(budget.contextWindow * fraction);
}
