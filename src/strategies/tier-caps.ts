/**
 * Per-tier caps (`TokenBudget.tierCaps`): a tier of the request may take at most a share of the context window,
 * whatever the total. The tool-result tier is held by tool-result retention: when the results the request shows
 * verbatim take more than `tierCaps.toolResults` of the window, the oldest of them are stubbed until the tier is
 * under its cap — even when the whole request fits (the proposal is binding, see `Proposal.binding`). Ephemeral
 * results go first; non-replayable ones are never stubbed; replayable and anchoring ones keep their stamp or key
 * lines (`durable-clears.ts`).
 */
import type { LogView } from "../log/log-view.js";
import type { CompactionPlan, PlanAction } from "../plan/compaction-plan.js";
import { nextPlan } from "../plan/compaction-plan.js";
import { textTokenCounter } from "../texts/text-excerpt.js";
import { toolResultCap } from "../tokens/token-budget.js";
import { dropRank } from "./durability-classes.js";
import { classesOf, durableExcerpts, neverCleared } from "./durable-clears.js";
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
  const classes = classesOf(ctx);
  // Ephemeral results go first, then the rest oldest first; a non-replayable result is never stubbed.
  const order = [...tier.seqs].sort(
    (a, b) => dropRank(classes.classOfMessage(log, a)) - dropRank(classes.classOfMessage(log, b)) || a - b,
  );
  const seqs: number[] = [];
  let tokens = tier.tokens;
  for (const seq of order) {
    if (tokens <= cap) break;
    if (spared.has(seq) || neverCleared(log, classes, seq)) continue;
    const message = log.at(seq)!;
    tokens -= ctx.counter.countMessage(message, message.hash);
    seqs.push(seq);
  }
  if (seqs.length === 0) return [];
  seqs.sort((a, b) => a - b);
  const span = seqs.map((seq) => log.at(seq)!.id);
  const excerpts = durableExcerpts(log, classes, seqs, { countTokens: textTokenCounter(ctx.counter) });
  return [
    {
      kind: "clear",
      span,
      record: { kind: "clear", ...(excerpts.length === 0 ? {} : { excerpts }) },
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
