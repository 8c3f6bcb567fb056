import type { ActionKind, PlanAction } from "../plan/compaction-plan.js";
import type { StrategyCost, StrategyNote } from "../strategies/strategy.js";

/** What became of one strategy's turn in a run. */
export type StepOutcome =
  | "applied" // its actions are part of the new plan
  | "nothing" // it proposed nothing
  | "deferred" // under target and the gain was below the minimum: waits to be batched with later gains
  | "no_gain" // the proposal did not make the request smaller
  | "rejected" // the proposal broke the plan (invalid span, a kind the strategy may not propose)
  | "failed" // the strategy threw or reported an error
  | "skipped"; // not run: under target, or cooling down after repeated failures

/** One strategy's turn in a pipeline run. */
export interface StepReport {
  readonly strategy: string;
  readonly cost: StrategyCost;
  readonly outcome: StepOutcome;
  /** Why it was skipped, rejected or failed, in words. */
  readonly detail?: string;
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  readonly actions: number;
  readonly notes: ReadonlyArray<StrategyNote>;
  readonly attempts: number;
  readonly durationMs: number;
}

/** Everything a run did, for logs, events and audits. */
export interface PipelineReport {
  readonly threadId: string;
  /** History tokens by the renderer's count under the input plan and under the returned plan. */
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  /** Tokens of the full request returned (history plus injections and rehydrated artifacts). */
  readonly requestTokens: number;
  readonly target: number;
  readonly goal: number;
  /** True when the history was over the target at the start, so compaction aimed at the goal. */
  readonly triggered: boolean;
  readonly steps: ReadonlyArray<StepReport>;
  /** Messages newly governed by each kind of action in this run. */
  readonly actionsByKind: Readonly<Record<ActionKind, number>>;
  readonly durationMs: number;
}

/** Counts the span messages of the given actions by kind. */
export function countKinds(actions: ReadonlyArray<PlanAction>): Readonly<Record<ActionKind, number>> {
  const counts: Record<ActionKind, number> = { include: 0, clear: 0, summarize: 0, externalize: 0, drop: 0 };
  for (const action of actions) counts[action.kind] += action.span.length;
  return counts;
}
