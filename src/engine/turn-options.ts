import * as z from "zod";
import { ValidationError } from "../errors/ledger-error.js";
import { formatIssuePath, jsonDepthCheck } from "../log/message-schema.js";
import type { ActionKind } from "../plan/compaction-plan.js";
import type { ProviderFormat, ProviderRequestMap } from "../render/provider-rules.js";
import type { Injection, RehydratedArtifact } from "../render/render-prompt.js";
import type { RenderedPrompt } from "../render/rendered-prompt.js";
import { countToolDefinitions, type ToolDefinition } from "../render/tool-definitions.js";
import { type BudgetInput, requestBudget, type TokenBudget } from "../tokens/token-budget.js";
import type { Calibration } from "./calibration.js";
import type { TurnInputs } from "./call-record.js";
import type { EngineCore } from "./engine-core.js";
import { toBudget } from "./engine-setup.js";

export type { BudgetInput } from "../tokens/token-budget.js";
export { requestBudget };

/** Options of `prepareTurn`. */
export interface PrepareTurnOptions<F extends ProviderFormat = ProviderFormat> {
  /** The provider request format to render. */
  readonly format: F;
  /** Per-turn content rendered at the end of the request (never part of the log). */
  readonly injected?: ReadonlyArray<Injection | string>;
  /** Artifacts the harness brought back for this turn. */
  readonly rehydrated?: ReadonlyArray<RehydratedArtifact>;
  /** The model the request goes to: recorded, and the key of the token calibration. */
  readonly model?: string;
  /** Overrides the engine's budget for this call; a number means "the request has at most this many tokens". */
  readonly budget?: BudgetInput;
  readonly signal?: AbortSignal;
  /**
   * The tools the model is offered this turn: written into the request's `tools` in the format's shape and
   * counted against the budget (in place of the budget's `toolSchemaTokens`).
   */
  readonly tools?: ReadonlyArray<ToolDefinition>;
  /**
   * Anthropic: mark prompt-cache breakpoints (`cache_control`) after the stable prefix and after the last history
   * message (see `suggestCacheBreakpoints`). Ignored by the OpenAI formats, whose caching is automatic; their
   * `stats.unchangedLeadingTokens` says how much of the prefix repeats.
   */
  readonly cacheControl?: boolean;
}

/** Why a referenced artifact was not brought back. */
export type RehydrationBlockReason = "cooldown" | "sensitivity" | "tenant" | "budget" | "missing";

/** An artifact brought back into a turn's request. */
export interface RehydrationNote {
  readonly artifactId: string;
  /** Tokens of the content as shown (after any cut). */
  readonly tokens: number;
  readonly truncated: boolean;
}

/** A referenced artifact that was not brought back, and why. */
export interface RehydrationBlock {
  readonly artifactId: string;
  readonly reason: RehydrationBlockReason;
}

/** Figures about a prepared turn. */
export interface TurnStats {
  /** Tokens of the request by the engine's counter. */
  readonly tokens: number;
  /** `tokens` corrected by the model's calibration (what the provider is expected to count). */
  readonly calibratedTokens: number;
  /** History tokens under the plan in force before this turn's compaction. */
  readonly tokensBefore: number;
  readonly budget: { readonly contextWindow: number; readonly available: number; readonly target: number };
  readonly calibration: Calibration;
  readonly planVersion: number;
  readonly logSeq: number;
  /** True when this turn committed a new plan. */
  readonly compacted: boolean;
  /** Messages newly governed by each kind of action in this turn. */
  readonly actionsByKind: Readonly<Record<ActionKind, number>>;
  /** Leading tokens unchanged since this process's previous request for the thread (prompt-cache reuse). */
  readonly unchangedLeadingTokens: number;
  readonly loadedFrom: "warm" | "cold" | "checkpoint";
  /** Version conflicts lost to other writers before this attempt succeeded. */
  readonly conflicts: number;
  readonly backgroundScheduled: boolean;
  readonly durationMs: number;
  /** Tokens the turn's tool definitions take (0 without `tools`). */
  readonly toolTokens: number;
  /** Artifacts referred to since the previous call and brought back at the end of this request. */
  readonly rehydrated: ReadonlyArray<RehydrationNote>;
  /** Artifacts referred to since the previous call that were not brought back, and why. */
  readonly rehydrationBlocked: ReadonlyArray<RehydrationBlock>;
}

/** What `prepareTurn` returns: the provider request, its id for usage and replay, and figures. */
export interface PreparedTurn<F extends ProviderFormat = ProviderFormat> {
  readonly callId: string;
  readonly request: ProviderRequestMap[F];
  readonly prompt: RenderedPrompt;
  readonly stats: TurnStats;
}

const FORMATS: ReadonlyArray<ProviderFormat> = ["openai", "responses", "anthropic"];

/** Turns a budget input into a budget (undefined when none is given). */
export function budgetOf(input: BudgetInput | undefined, turnReserve = 0): TokenBudget | undefined {
  if (input === undefined) return undefined;
  return typeof input === "number" ? requestBudget(input, turnReserve) : toBudget(input);
}

// Framing the renderer adds around a rehydrated artifact's content (its header line), generously rounded.
const REHYDRATION_HEADER_TOKENS = 16;

/** Tokens of the turn's injections and rehydrated artifacts (framing included, generously). */
function tokensOf(core: EngineCore, inputs: TurnInputs): number {
  let total = 0;
  for (const i of inputs.injections) {
    total += core.counter.countMessage({ role: i.role ?? "user", parts: [{ type: "text", text: i.text }] });
  }
  for (const a of inputs.rehydrated) {
    const parts = [{ type: "text" as const, text: a.content }];
    total += core.counter.countMessage({ role: "user", parts }) + REHYDRATION_HEADER_TOKENS;
  }
  return total;
}

/**
 * The budget with room for the turn's own content where it keeps no reserve for it: injections and rehydrated
 * artifacts then take their tokens from the history on this turn only (a turn without them keeps its whole target).
 */
function withTurnRoom(core: EngineCore, budget: TokenBudget, inputs: TurnInputs): TokenBudget {
  const injections = budget.injectionReserve === 0 ? tokensOf(core, { ...inputs, rehydrated: [] }) : 0;
  const rehydrated = budget.rehydrationReserve === 0 ? tokensOf(core, { ...inputs, injections: [] }) : 0;
  if (injections === 0 && rehydrated === 0) return budget;
  return Object.freeze({
    ...budget,
    injectionReserve: budget.injectionReserve + injections,
    rehydrationReserve: budget.rehydrationReserve + rehydrated,
  });
}

/** A turn's options, checked, with defaults filled in. */
export interface TurnInput<F extends ProviderFormat> {
  readonly format: F;
  readonly inputs: TurnInputs;
  /**
   * The rehydration reserve the caller's budget keeps (0 when none: the turn then takes the room for what it
   * brings back from the history, on that turn only).
   */
  readonly rehydrationReserve: number;
  readonly model: string | undefined;
  readonly budget: TokenBudget;
  readonly signal: AbortSignal | undefined;
  readonly tools: ReadonlyArray<ToolDefinition>;
  readonly toolTokens: number;
  readonly cacheControl: boolean;
  /** The call's number within the thread (see `EngineEvent.callNumber`). */
  readonly callNumber?: number;
}

const nonEmpty = z.string().min(1, "must be a non-empty string");

/**
 * The shape of `prepareTurn`'s options: every field typed, unknown keys refused (a misspelt `budjet` would
 * otherwise be ignored and the engine's budget used). A budget object is checked by `createTokenBudget`.
 */
const turnOptionsSchema = z.strictObject({
  format: z.enum(FORMATS as [ProviderFormat, ...ProviderFormat[]], {
    error: (issue) => `must be one of ${FORMATS.join(", ")}, got ${JSON.stringify(issue.input)}`,
  }),
  injected: z
    .array(
      z.union([
        z.string(),
        z.strictObject({
          text: z.string(),
          role: z.enum(["user", "system"]).optional(),
          label: nonEmpty.optional(),
        }),
      ]),
      {
        error: "must be an array of strings or { text, role?, label? } objects",
      },
    )
    .optional(),
  rehydrated: z
    .array(z.strictObject({ artifactId: nonEmpty, content: z.string(), truncated: z.boolean().optional() }), {
      error: "must be an array of { artifactId, content, truncated? } objects",
    })
    .optional(),
  model: nonEmpty.optional(),
  budget: z
    .union([z.number().int().positive(), z.looseObject({})], {
      error: "must be a positive whole number of tokens, or a token budget (object)",
    })
    .optional(),
  signal: z.instanceof(AbortSignal, { error: "must be an AbortSignal" }).optional(),
  tools: z
    .array(
      z.strictObject({
        name: nonEmpty,
        description: z.string().optional(),
        parameters: z.record(z.string(), z.unknown()).superRefine(jsonDepthCheck()).optional(),
      }),
      { error: "must be an array of { name, description?, parameters? } tool definitions" },
    )
    .optional(),
  cacheControl: z.boolean().optional(),
});

/** Checks `prepareTurn`'s options, naming the field that is wrong, and resolves the turn's budget and inputs. */
export function parseTurn<F extends ProviderFormat>(
  core: EngineCore,
  threadId: string,
  o: PrepareTurnOptions<F>,
): TurnInput<F> {
  const parsed = turnOptionsSchema.safeParse(o);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = formatIssuePath(issue.path, issue as { code?: string; keys?: ReadonlyArray<string> });
    const what = field === "" ? "prepareTurn options" : `prepareTurn option ${field}`;
    throw new ValidationError(
      `${what}: ${issue.message}`,
      field === "" ? { threadId } : { threadId, field },
      {
        cause: parsed.error,
      },
    );
  }
  const injections = (o.injected ?? []).map((i): Injection => (typeof i === "string" ? { text: i } : i));
  const inputs: TurnInputs = { injections, rehydrated: o.rehydrated ?? [], pendingCalls: core.pendingCalls };
  // A plain token ceiling keeps room for the turn's own content.
  const reserve = typeof o.budget === "number" ? tokensOf(core, inputs) : 0;
  const tools = o.tools ?? [];
  const toolTokens = countToolDefinitions(o.format, tools, core.counter);
  const chosen = budgetOf(o.budget, reserve) ?? core.budget;
  const budget = typeof o.budget === "number" ? chosen : withTurnRoom(core, chosen, inputs);
  return {
    format: o.format,
    inputs,
    rehydrationReserve: typeof o.budget === "number" ? 0 : chosen.rehydrationReserve,
    model: o.model,
    // The turn's own tool definitions are counted, not the budget's estimate of them.
    budget: tools.length === 0 ? budget : Object.freeze({ ...budget, toolSchemaTokens: toolTokens }),
    signal: o.signal,
    tools,
    toolTokens,
    cacheControl: o.cacheControl === true,
  };
}
