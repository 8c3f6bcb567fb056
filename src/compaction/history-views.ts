/**
 * What a strategy learns of the rendered history beyond its token count (`StrategyContext.tokensByGroup` and
 * `verbatimSeqs`). The pipeline renders; strategies read numbers and seqs, so they never import the renderer.
 */
import type { LogView } from "../log/log-view.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import { renderPrompt } from "../render/render-prompt.js";
import type { RenderedPrompt } from "../render/rendered-prompt.js";
import type { StrategyContext } from "../strategies/strategy.js";
import type { MessageCounter } from "../tokens/tokenizer.js";

/** The context's views of the rendered history under a plan. */
export type HistoryViews = Pick<StrategyContext, "tokensByGroup" | "verbatimSeqs">;

/**
 * The views of `log`'s history for one strategy context. Both read one render of the plan (history only, plan not
 * re-validated), made when a strategy first asks and kept per plan for the context's lifetime.
 */
export function historyViews(log: LogView, counter: MessageCounter): HistoryViews {
  const renders = new WeakMap<CompactionPlan, RenderedPrompt>();
  const rendered = (plan: CompactionPlan): RenderedPrompt => {
    let prompt = renders.get(plan);
    if (prompt === undefined) {
      prompt = renderPrompt(log, plan, { counter, validatePlan: false });
      renders.set(plan, prompt);
    }
    return prompt;
  };
  return {
    tokensByGroup: (plan) => renderedGroupTokens(log, rendered(plan)),
    verbatimSeqs: (plan) => verbatimSeqsOf(log, rendered(plan)),
  };
}

/**
 * The renderer's own tokens per group (index = group index): each rendered message is charged to the group of its
 * first source message, so a summary or pointer is charged to the group where it appears.
 */
function renderedGroupTokens(log: LogView, prompt: RenderedPrompt): Float64Array {
  const perGroup = new Float64Array(log.groupCount);
  let hint = 0;
  for (const message of prompt.messages) {
    const first = message.provenance.sourceIds[0];
    if (first === undefined) continue;
    const seq = log.seqOf(first, hint);
    if (seq === undefined) continue;
    hint = seq;
    // A projected log does not know the group of a message it does not hold (a summary's first source, say).
    // Every group a caller can name there is held whole, so those tokens belong to none it can ask about.
    if (!log.holds(seq)) continue;
    perGroup[log.groupIndexOf(seq)]! += message.tokens;
  }
  return perGroup;
}

/** The seq of each rendered message shown as it is in the log, in request order (one per piece of a split one). */
function verbatimSeqsOf(log: LogView, prompt: RenderedPrompt): number[] {
  const seqs: number[] = [];
  let hint = 0;
  for (const message of prompt.messages) {
    if (message.provenance.kind !== "original") continue;
    const id = message.provenance.sourceIds[0];
    const seq = id === undefined ? undefined : log.seqOf(id, hint);
    if (seq === undefined) continue;
    hint = seq;
    seqs.push(seq);
  }
  return seqs;
}
