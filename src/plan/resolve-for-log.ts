import type { ThreadLog } from "../log/thread-log.js";
import { type CompactionPlan, PRECEDENCE, parentOf } from "./compaction-plan.js";
import type { Decision } from "./resolve-plan.js";

/** A plan resolved against a log: the governing decision per seq (undefined = included by default). */
export interface SeqResolution {
  readonly plan: CompactionPlan;
  /** Decisions for seqs below `plan.basedOnSeq`; later messages are never mentioned and so included. */
  readonly bySeq: ReadonlyArray<Decision | undefined>;
  /** Ids no message of the log has (validation reports them). */
  readonly unknownIds: ReadonlyArray<string>;
}

interface Memo {
  readonly log: ThreadLog;
  readonly resolution: SeqResolution;
}

const memo = new WeakMap<CompactionPlan, Memo>();

/** Whether two logs agree on their first `length` messages. */
function samePrefix(a: ThreadLog, b: ThreadLog, length: number): boolean {
  if (a.threadId !== b.threadId || a.length < length || b.length < length) return false;
  return length === 0 || a.at(length - 1) === b.at(length - 1);
}

function reusable(plan: CompactionPlan, log: ThreadLog): SeqResolution | undefined {
  const hit = memo.get(plan);
  return hit !== undefined && samePrefix(hit.log, log, plan.basedOnSeq) ? hit.resolution : undefined;
}

/**
 * Resolves a plan against a log by seq, with the same precedence as `resolvePlan`. A plan made by extending a
 * resolved parent reuses the parent's decisions (one array copy) and only applies its new actions, which keeps
 * the per-turn cost independent of how many messages earlier turns compacted.
 */
export function resolveForLog(plan: CompactionPlan, log: ThreadLog): SeqResolution {
  const cached = reusable(plan, log);
  if (cached !== undefined) return cached;
  const parent = parentOf(plan);
  const base = parent === undefined ? undefined : resolveForLog(parent, log);
  const bySeq: (Decision | undefined)[] = base === undefined ? [] : base.bySeq.slice();
  const unknownIds: string[] = base === undefined ? [] : [...base.unknownIds];
  const limit = Math.min(plan.basedOnSeq, log.length);
  if (bySeq.length < limit) bySeq.length = limit;
  const from = parent === undefined ? 0 : parent.actions.length;
  for (let actionIndex = from; actionIndex < plan.actions.length; actionIndex++) {
    const action = plan.actions[actionIndex]!;
    const decision: Decision = { kind: action.kind, actionIndex, action };
    for (const id of action.span) {
      const seq = log.seqOf(id);
      if (seq === undefined || seq >= limit) {
        if (seq === undefined) unknownIds.push(id);
        continue;
      }
      const current = bySeq[seq];
      if (current === undefined || PRECEDENCE[action.kind] >= PRECEDENCE[current.kind]) bySeq[seq] = decision;
    }
  }
  const resolution: SeqResolution = { plan, bySeq, unknownIds };
  memo.set(plan, { log, resolution });
  return resolution;
}
