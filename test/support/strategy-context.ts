/**
 * Builds the `StrategyContext` a pipeline would hand a strategy, with the renderer's own token counts and the
 * pipeline's own views of the rendered history, so strategy tests need no pipeline. Generic on purpose: any
 * strategy's tests can use it.
 */

import { historyViews } from "../../src/compaction/history-views.js";
import type { ThreadLog } from "../../src/log/thread-log.js";
import { type CompactionPlan, extendPlan } from "../../src/plan/compaction-plan.js";
import { renderPrompt } from "../../src/render/render-prompt.js";
import type { RenderedPrompt } from "../../src/render/rendered-prompt.js";
import type { DurabilityClasses } from "../../src/strategies/durability-classes.js";
import type { Proposal, Strategy, StrategyContext } from "../../src/strategies/strategy.js";
import { createTokenBudget } from "../../src/tokens/token-budget.js";
import type { MessageCounter } from "../../src/tokens/tokenizer.js";
import { simpleCounter } from "./simple-counter.js";

/** Options of `strategyContext`; everything has a default. */
export interface StrategyContextOptions {
  /** Default: `simpleCounter()`. */
  readonly counter?: MessageCounter;
  /** Default 128,000. */
  readonly contextWindow?: number;
  /** Default: the context window. */
  readonly target?: number;
  /** Default: the target. */
  readonly goal?: number;
  readonly signal?: AbortSignal;
  /** The pipeline's minimum gain for free strategies under target; default none. */
  readonly minGain?: number;
  /** Per-tier caps of the budget (`TokenBudget.tierCaps`); default none. */
  readonly tierCaps?: { readonly toolResults?: number };
  /** The pipeline's durability classes; default none (strategies use the built-in ones). */
  readonly durability?: DurabilityClasses;
}

/** A strategy context for `log` under `plan`: `tokens` and `measure` are `renderPrompt(...).tokenCount`. */
export function strategyContext(
  log: ThreadLog,
  plan: CompactionPlan,
  options: StrategyContextOptions = {},
): StrategyContext {
  const counter = options.counter ?? simpleCounter();
  const contextWindow = options.contextWindow ?? 128_000;
  const target = options.target ?? contextWindow;
  const measure = (p: CompactionPlan): number => renderPrompt(log, p, { counter }).tokenCount;
  return {
    log,
    plan,
    counter,
    ...(options.durability === undefined ? {} : { durability: options.durability }),
    tokens: measure(plan),
    target,
    goal: options.goal ?? target,
    contextWindow,
    budget: createTokenBudget({
      contextWindow,
      reserveOutput: 0,
      safetyMargin: 0,
      ...(options.tierCaps === undefined ? {} : { tierCaps: options.tierCaps }),
    }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.minGain === undefined ? {} : { minGain: options.minGain }),
    measure,
    ...historyViews(log, counter),
  };
}

/**
 * The history under `plan` as the renderer sends it (the plan checked against the log): what strategy tests check
 * a proposal against. Strategies themselves see the render only through their context.
 */
export function renderHistory(
  log: ThreadLog,
  plan: CompactionPlan,
  counter: MessageCounter = simpleCounter(),
): RenderedPrompt {
  return renderPrompt(log, plan, { counter });
}

/** What one strategy run gave: its proposal and the plan extended by the proposal's actions. */
export interface StrategyRun {
  readonly proposal: Proposal;
  readonly plan: CompactionPlan;
}

/**
 * Runs a strategy once on `log` under `plan` and extends the plan with what it proposed (based on the whole
 * log, as a pipeline commits it). The plan is returned unchanged (`toBe`) when nothing was proposed.
 */
export async function runStrategy(
  strategy: Strategy,
  log: ThreadLog,
  plan: CompactionPlan,
  options: StrategyContextOptions = {},
): Promise<StrategyRun> {
  const proposal = await strategy.propose(strategyContext(log, plan, options));
  const next = proposal.actions.length === 0 ? plan : extendPlan(plan, proposal.actions, log.length);
  return { proposal, plan: next };
}
