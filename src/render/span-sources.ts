import type { ThreadLog } from "../log/thread-log.js";
import { parentOf } from "../plan/compaction-plan.js";
import { resolveForLog, type SeqResolution } from "../plan/resolve-for-log.js";

// Source ids of a synthetic message per resolution and action: a summary can stand for tens of thousands of
// messages, and a warm render must not walk its span again.
const sourcesMemo = new WeakMap<SeqResolution, Map<number, ReadonlyArray<string>>>();

/**
 * The ids an action governs after precedence, each once, in log order. Spans list ids in log order, so each
 * seq is found by checking the next slot of the id table before falling back to the id index.
 */
export function spanSources(
  log: ThreadLog,
  resolved: SeqResolution,
  actionIndex: number,
): ReadonlyArray<string> {
  let perAction = sourcesMemo.get(resolved);
  if (perAction === undefined) {
    perAction = new Map();
    sourcesMemo.set(resolved, perAction);
  }
  const known = perAction.get(actionIndex) ?? inherited(log, resolved, actionIndex);
  if (known !== undefined) {
    perAction.set(actionIndex, known);
    return known;
  }
  const span = resolved.plan.actions[actionIndex]!.span;
  const ids = log.idTable();
  const { actionAt } = resolved;
  const seqs: number[] = [];
  let hint = -1;
  let sorted = true;
  for (let i = 0; i < span.length; i++) {
    const id = span[i]!;
    const seq = hint + 1 < log.length && ids[hint + 1] === id ? hint + 1 : log.seqOf(id);
    if (seq === undefined) continue;
    if (seq < hint) sorted = false;
    hint = seq;
    if (seq < actionAt.length && actionAt[seq] === actionIndex) seqs.push(seq);
  }
  if (!sorted) seqs.sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < seqs.length; i++) if (i === 0 || seqs[i] !== seqs[i - 1]) out.push(ids[seqs[i]!]!);
  const frozen = Object.freeze(out);
  perAction.set(actionIndex, frozen);
  return frozen;
}

/**
 * The parent plan's source ids of an action, when the actions the plan added take none of them away: a plan that
 * only extends its parent (the pipeline's candidates, each turn's commit) keeps a summary's ids without walking
 * its span again.
 */
function inherited(
  log: ThreadLog,
  resolved: SeqResolution,
  actionIndex: number,
): ReadonlyArray<string> | undefined {
  const parent = parentOf(resolved.plan);
  if (parent === undefined || actionIndex >= parent.actions.length) return undefined;
  const parentResolution = resolveForLog(parent, log);
  const known = sourcesMemo.get(parentResolution)?.get(actionIndex);
  if (known === undefined) return undefined;
  const ids = log.idTable();
  for (let a = parent.actions.length; a < resolved.plan.actions.length; a++) {
    const span = resolved.plan.actions[a]!.span;
    let hint = -1;
    for (let i = 0; i < span.length; i++) {
      const id = span[i]!;
      const seq = hint + 1 < log.length && ids[hint + 1] === id ? hint + 1 : log.seqOf(id);
      if (seq === undefined) continue;
      hint = seq;
      if (parentResolution.actionAt[seq] === actionIndex && resolved.actionAt[seq] !== actionIndex)
        return undefined;
    }
  }
  return known;
}
