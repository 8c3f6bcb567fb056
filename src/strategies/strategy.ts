import type { LogView } from "../log/log-view.js";
import type { ActionKind, CompactionPlan, PlanAction } from "../plan/compaction-plan.js";
import type { TokenBudget } from "../tokens/token-budget.js";
import type { MessageCounter } from "../tokens/tokenizer.js";
import type { DurabilityClasses } from "./durability-classes.js";
import type { StrategyMemo } from "./strategy-memo.js";

/**
 * How expensive a strategy is to run: `free` strategies only look at the log and the plan and always run;
 * `model` strategies cost a model call (or similar) and run only while the request is over its target.
 */
export type StrategyCost = "free" | "model";

/** What a strategy sees when the pipeline asks it for a proposal. */
export interface StrategyContext {
  readonly log: LogView;
  /** The plan so far in this run: the last committed plan plus what earlier strategies of the run proposed. */
  readonly plan: CompactionPlan;
  /** Counts messages the way the renderer does (same tokenizer, same framing). */
  readonly counter: MessageCounter;
  /** The renderer's own token count of the history under `plan` (injections excluded). */
  readonly tokens: number;
  /** The pipeline wants `tokens <= target`. */
  readonly target: number;
  /**
   * Where a strategy that compacts should aim (at most `target`). Compacting below the target in one chunk
   * leaves room for the next turns, so the rendered prefix stays byte-identical until the next chunk.
   */
  readonly goal: number;
  /**
   * While `tokens <= target`, the pipeline defers (does not apply) a free strategy's proposal that saves fewer
   * tokens than this, so such a strategy may skip work that only pays off with a larger gain. Absent: no minimum.
   */
  readonly minGain?: number;
  /** The model's context window, for triggers expressed as a share of it. */
  readonly contextWindow: number;
  /** The turn's budget: window, reserves and per-tier caps (`tierCaps`), as the pipeline runs it. */
  readonly budget: TokenBudget;
  /**
   * The seq of the thread's task (by default its first user message), which the pipeline rejects any compaction
   * of, like system prompts, pinned messages and the newest user message; -1 or absent when none is protected.
   */
  readonly taskSeq?: number;
  /**
   * How the pipeline classes tool results for durability (configured tool classes over the built-in ones);
   * absent in a hand-built context, where strategies use `DEFAULT_DURABILITY_CLASSES`.
   */
  readonly durability?: DurabilityClasses;
  /** Aborted when the pipeline gives up on the run (e.g. a deadline); long strategies should honour it. */
  readonly signal?: AbortSignal;
  /** The renderer's token count of the history under another plan (for strategies that check their gain). */
  measure(plan: CompactionPlan): number;
  /**
   * The renderer's own tokens per group of the history under a plan (index = group index): each rendered message
   * counts for the group of its first source message, so a summary or pointer counts where it appears.
   */
  tokensByGroup(plan: CompactionPlan): ArrayLike<number>;
  /**
   * The seqs of the log messages the history shows as they are under a plan, in request order (a tool message
   * the renderer splits by the call it answers appears once per piece).
   */
  verbatimSeqs(plan: CompactionPlan): ReadonlyArray<number>;
}

/** Something a strategy wants the caller to know that is not an action (a failure reported as data). */
export interface StrategyNote {
  readonly level: "info" | "warning" | "error";
  /** Stable machine-readable code, e.g. `summarizer_failed`, `nothing_to_do`. */
  readonly code: string;
  readonly message: string;
  readonly cause?: unknown;
}

/** What a strategy proposes: actions to append to the plan, plus notes. */
export interface Proposal {
  /** Span actions in log order of their first message; empty when the strategy has nothing to do. */
  readonly actions: ReadonlyArray<PlanAction>;
  readonly notes?: ReadonlyArray<StrategyNote>;
  /**
   * True when the actions must be applied even while the request is under its target and they save less than the
   * pipeline's minimum gain — they bring a tier under its cap (`TokenBudget.tierCaps`). Default false.
   */
  readonly binding?: boolean;
}

/**
 * A compaction strategy: looks at the log, the current plan and the token accounting, and proposes span
 * actions. It never edits the plan itself; the pipeline appends its actions, validates, renders and decides.
 * Strategies declare their cost class and the action kinds they may propose, so shared code never needs to
 * know a strategy by name.
 *
 * @example
 * const dropStaleErrors: Strategy = {
 *   name: "dropStaleErrors",
 *   cost: "free",
 *   kinds: ["clear"],
 *   propose: ({ log }) => ({ actions: [] }), // inspect log.groups and return clear actions
 * };
 */
export interface Strategy {
  readonly name: string;
  readonly cost: StrategyCost;
  /** The action kinds this strategy may propose; the pipeline rejects anything else. */
  readonly kinds: ReadonlyArray<ActionKind>;
  propose(context: StrategyContext): Proposal | Promise<Proposal>;
  /**
   * How the memo this strategy keeps in the log's history travels in a thread checkpoint, so it runs on a
   * stateless worker without reading the whole thread. Optional: without one the strategy still works there (a
   * worker that loaded a partial log runs the turn again on the whole log when the strategy reads past it).
   */
  readonly memo?: StrategyMemo;
}

/** A strategy written as a plain function: it may return a proposal or just the actions. */
export type StrategyFunction = (
  context: StrategyContext,
) => Proposal | ReadonlyArray<PlanAction> | Promise<Proposal | ReadonlyArray<PlanAction>>;

/** The proposal that changes nothing. */
export const NO_PROPOSAL: Proposal = Object.freeze({ actions: Object.freeze([]) });

/** A proposal with nothing to do and one note saying why (shown in pipeline reports). */
export function nothingToDo(message: string): Proposal {
  return { actions: [], notes: [{ level: "info", code: "nothing_to_do", message }] };
}
