import { ValidationError } from "../errors/ledger-error.js";
import type { ActionKind } from "../plan/compaction-plan.js";
import type { ProviderFormat } from "../render/provider-rules.js";
import type { PendingCallMode } from "../render/render-prompt.js";
import {
  type DurabilityClasses,
  durabilityClasses,
  type ToolClasses,
} from "../strategies/durability-classes.js";
import { createHardFallback } from "../strategies/hard-fallback.js";
import type { TaskRule } from "../strategies/protected-core.js";
import type { Proposal, Strategy, StrategyFunction } from "../strategies/strategy.js";
import { runPipeline } from "./pipeline-run.js";
import type { Pipeline, PipelineStrategy } from "./pipeline-types.js";

/** Options of {@link createPipeline}. */
export interface PipelineOptions {
  /** Run in this order; put free strategies first. Functions become free strategies named after themselves. */
  readonly strategies: ReadonlyArray<PipelineStrategy | StrategyFunction>;
  /** The last resort when still over the target (default: `createHardFallback()`); `false` disables it. */
  readonly fallback?: Strategy | false;
  /**
   * When compaction fires, aim at `goalRatio × target` rather than the target itself (default 0.8), so the next
   * turns fit without compacting again and the prompt prefix stays cached (chunked recompaction).
   */
  readonly goalRatio?: number;
  /**
   * A free strategy's proposal made while the request is under its target is applied only when it saves at
   * least this many tokens (default: 10 % of the target); smaller ones wait and are batched, so the cached
   * prefix is not broken for a few tokens every turn.
   */
  readonly minGain?: number;
  /** Tries per model strategy and run when it fails (default 1). */
  readonly maxAttempts?: number;
  /** Runs a model strategy sits out after a run in which all its attempts failed (default 3). */
  readonly failureCooldown?: number;
  /** Formats the final request must be valid for (default: all three). */
  readonly formats?: ReadonlyArray<ProviderFormat>;
  readonly pendingCalls?: PendingCallMode;
  /** Which message is the thread's task, never compacted by a strategy (default `firstUserMessage`). */
  readonly task?: TaskRule;
  /**
   * Durability classes per tool name (`none`: unclassed), over the built-in classes of tool-name words
   * (`BUILT_IN_TOOL_WORDS`). A result's own `meta.durability`, then its call's, come first.
   */
  readonly toolClasses?: ToolClasses;
  /** `false`: tools without a configured class stay unclassed instead of getting a built-in class. */
  readonly builtInToolClasses?: boolean;
}

function classesOf(options: PipelineOptions): DurabilityClasses {
  for (const [tool, d] of Object.entries(options.toolClasses ?? {})) {
    if (!["ephemeral", "anchoring", "replayable", "non-replayable", "none"].includes(d)) {
      throw new ValidationError(
        `toolClasses.${tool} must be ephemeral, anchoring, replayable, non-replayable or none, got ${JSON.stringify(d)}`,
        { field: `toolClasses.${tool}` },
      );
    }
  }
  return durabilityClasses({
    ...(options.toolClasses === undefined ? {} : { tools: options.toolClasses }),
    ...(options.builtInToolClasses === undefined ? {} : { builtIn: options.builtInToolClasses }),
  });
}

/** Turns a user's function into a strategy that runs exactly like the built-ins. */
export function toStrategy(strategy: PipelineStrategy | StrategyFunction): PipelineStrategy {
  if (typeof strategy !== "function") return strategy;
  const kinds: ReadonlyArray<ActionKind> = ["include", "clear", "summarize", "externalize", "drop"];
  return {
    name: strategy.name || "custom",
    cost: "free",
    kinds,
    propose: async (ctx): Promise<Proposal> => {
      const out = await strategy(ctx);
      return Array.isArray(out) ? { actions: out } : (out as Proposal);
    },
  };
}

function positive(value: number | undefined, field: string, fallback: number, max = Infinity): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0 || value > max) {
    throw new ValidationError(`pipeline option ${field} must be between 0 and ${max}, got ${value}`, {
      field,
    });
  }
  return value;
}

/** `goalRatio`: a share of the target in (0, 1]; 0 would ask every compaction to empty the history. */
function goalRatioOf(value: number | undefined): number {
  if (value === undefined) return 0.8;
  if (typeof value !== "number" || !(value > 0 && value <= 1)) {
    throw new ValidationError(`pipeline option goalRatio must be more than 0 and at most 1, got ${value}`, {
      field: "goalRatio",
    });
  }
  return value;
}

/** `minGain`: a whole number of tokens, 0 or more (undefined: a tenth of the target, decided per run). */
function minGainOf(value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new ValidationError(`pipeline option minGain must be a whole number of tokens ≥ 0, got ${value}`, {
      field: "minGain",
    });
  }
  return value;
}

/**
 * Builds a pipeline. Each run: free strategies always run (their small proposals wait while under target),
 * model strategies run only while over target (or when due by their own rule), the fallback last; every
 * proposal is validated and measured by the renderer's own count, a proposal that breaks the plan is rejected
 * and reported, and the final request is rendered, checked against the budget and each provider's rules. Any
 * failure returns the previous plan with a typed error; the next plan extends the previous one, so the rendered
 * prefix stays byte-identical between compactions.
 */
export function createPipeline(options: PipelineOptions): Pipeline {
  const strategies = options.strategies.map(toStrategy);
  const names = new Set<string>();
  strategies.forEach((s, i) => {
    if (typeof s?.propose !== "function" || typeof s.name !== "string" || s.name === "") {
      throw new ValidationError("a strategy needs a name and a propose function", {
        field: `strategies[${i}]`,
      });
    }
    if (names.has(s.name)) {
      throw new ValidationError(`two strategies are named ${JSON.stringify(s.name)}; give one a name`, {
        field: `strategies[${i}].name`,
      });
    }
    names.add(s.name);
  });
  const settings = {
    strategies,
    fallback: options.fallback === false ? undefined : (options.fallback ?? createHardFallback()),
    goalRatio: goalRatioOf(options.goalRatio),
    minGain: minGainOf(options.minGain),
    maxAttempts: Math.max(1, Math.floor(positive(options.maxAttempts, "maxAttempts", 1))),
    failureCooldown: Math.floor(positive(options.failureCooldown, "failureCooldown", 3)),
    formats: options.formats ?? ["openai", "responses", "anthropic"],
    pendingCalls: options.pendingCalls ?? "stub",
    task: options.task ?? "firstUserMessage",
    durability: classesOf(options),
    failures: new Map<string, { count: number; cooldown: number }>(),
  };
  return {
    strategies,
    pendingCalls: settings.pendingCalls,
    run: (input) => runPipeline(input, settings),
    withStrategies: (only) => createPipeline({ ...options, strategies: only }),
  };
}
