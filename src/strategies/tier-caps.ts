/**
 * Per-tier caps (`TokenBudget.tierCaps`): a tier of the request may take at most a share of the context window,
 * whatever the total. The tool-result tier is held by tool-result retention: when the results the request shows
 * verbatim take more than `tierCaps.toolResults` of the window, the oldest of them are stubbed until the tier is
 * under its cap — even when the whole request fits (the proposal is binding, see `Proposal.binding`).
 */
import type { LogView } from "../log/log-view.js";
import type { CompactionPlan, PlanAction } from "../plan/compaction-plan.js";
import { nextPlan } from "../plan/compaction-plan.js";
import { toolResultCap } from "../tokens/token-budget.js";
import { newestGroupOf, untouchableSeqs } from "./protected-core.js";
import type { StrategyContext } from "./strategy.js";

/** Tokens of the tool messages the request shows verbatim under `plan`, and their seqs oldest first. */
export function verbatimToolResults(
  ctx: StrategyContext,
  plan: CompactionPlan,
): { readonly tokens: number; readonly seqs: ReadonlyArray<number> } {
  const { log, counter } = ctx;
  const seqs = [...new Set(ctx.verbatimSeqs(plan))]
    .filter((seq) => log.at(seq)?.role === "tool")
    .sort((a, b) => a - b);
  let tokens = 0;
  for (const seq of seqs) {
    const message = log.at(seq)!;
    tokens += counter.countMessage(message, message.hash);
  }
  return { tokens, seqs };
}

/**
 * Clear actions that bring the verbatim tool results under the budget's `tierCaps.toolResults`, on top of the
 * plan plus `proposed` (the strategy's own actions): the oldest results first, never the newest group's (what the
 * model reads next), a pinned message or the protected core's. Empty when no cap is set or the tier is under it.
 */
export function capToolResults(
  ctx: StrategyContext,
  proposed: ReadonlyArray<PlanAction>,
  name: string,
): PlanAction[] {
  const cap = toolResultCap(ctx.budget);
  if (cap === undefined) return [];
  const { log } = ctx;
  const plan =
    proposed.length === 0 ? ctx.plan : nextPlan(ctx.plan, [...ctx.plan.actions, ...proposed], log.length);
  const tier = verbatimToolResults(ctx, plan);
  if (tier.tokens <= cap) return [];
  const spared = sparedSeqs(log, ctx.taskSeq ?? -1);
  const span: string[] = [];
  let tokens = tier.tokens;
  for (const seq of tier.seqs) {
    if (tokens <= cap) break;
    if (spared.has(seq)) continue;
    const message = log.at(seq)!;
    tokens -= ctx.counter.countMessage(message, message.hash);
    span.push(message.id);
  }
  if (span.length === 0) return [];
  return [
    {
      kind: "clear",
      span,
      record: { kind: "clear" },
      strategy: name,
      reason: `${span.length} oldest tool result(s) stubbed to bring tool results under their cap of ${cap} tokens (${tier.tokens} shown)`,
    },
  ];
}

/** Seqs the cap never stubs: the protected core and the newest group. */
function sparedSeqs(log: LogView, taskSeq: number): Set<number> {
  const spared = untouchableSeqs(log, taskSeq);
  const newest = newestGroupOf(log);
  if (newest >= 0) for (const seq of log.groupAt(newest).seqs) spared.add(seq);
  return spared;
}
