import type { ThreadLog } from "../log/thread-log.js";
import { type CompactionPlan, PRECEDENCE, parentOf } from "./compaction-plan.js";
import type { Decision } from "./resolve-plan.js";

/** A plan resolved against a log: which action governs each seq (-1 = included by default). */
export interface SeqResolution {
  readonly plan: CompactionPlan;
  /** Winning action index per seq, for seqs below `min(plan.basedOnSeq, log.length)`; later seqs are included. */
  readonly actionAt: Int32Array;
  /** One decision per action index (shared by every message the action governs). */
  readonly decisions: ReadonlyArray<Decision>;
  /**
   * True when some span id was skipped (unknown, or at or after `basedOnSeq`): a child plan with a longer log or
   * a later `basedOnSeq` could resolve it, so it must not build on this table.
   */
  readonly skippedIds: boolean;
  /** What was wrong with the spans, found while resolving them (validation turns these into problems). */
  readonly spanIssues: ReadonlyArray<SpanIssue>;
  /** Per action index, how many seqs it governs after precedence (kept while resolving, so no caller counts). */
  readonly governed: Int32Array;
}

/** A span defect noticed during resolution. */
export interface SpanIssue {
  readonly code: "unknown_id" | "future_id" | "duplicate_in_span" | "record_mismatch";
  readonly actionIndex: number;
  readonly messageId?: string;
  readonly seq?: number;
}

/** The decision governing a seq, or undefined when the message is included by default. */
export function decisionAt(resolution: SeqResolution, seq: number): Decision | undefined {
  const index = seq < resolution.actionAt.length ? resolution.actionAt[seq]! : -1;
  return index < 0 ? undefined : resolution.decisions[index];
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
  return hit !== undefined && samePrefix(hit.log, log, Math.min(plan.basedOnSeq, log.length))
    ? hit.resolution
    : undefined;
}

/**
 * Resolves a plan against a log by seq, with the same precedence as `resolvePlan` (higher kind wins, later
 * action among equals). A plan made by extending a resolved parent copies the parent's table (a memcpy) and only
 * applies its new actions, which keeps the per-turn cost independent of how much earlier turns compacted.
 */
export function resolveForLog(plan: CompactionPlan, log: ThreadLog): SeqResolution {
  const cached = reusable(plan, log);
  if (cached !== undefined) return cached;
  const limit = Math.min(plan.basedOnSeq, log.length);
  const parent = parentOf(plan);
  const parentResolution = parent === undefined ? undefined : resolveForLog(parent, log);
  const base = parentResolution?.skippedIds === false ? parentResolution : undefined;
  const actionAt = new Int32Array(limit);
  const copied = base === undefined ? 0 : Math.min(limit, base.actionAt.length);
  if (base !== undefined) actionAt.set(base.actionAt.subarray(0, copied));
  actionAt.fill(-1, copied);
  const decisions: Decision[] = base === undefined ? [] : [...base.decisions];
  const governed = new Int32Array(plan.actions.length);
  if (base !== undefined && copied === base.actionAt.length) governed.set(base.governed);
  else for (let seq = 0; seq < copied; seq++) if (actionAt[seq]! >= 0) governed[actionAt[seq]!]!++;
  let skippedIds = base?.skippedIds ?? false;
  const spanIssues: SpanIssue[] = base === undefined ? [] : [...base.spanIssues];
  const seen = seenTable(plan, decisions.length, log.length);
  const idTable = log.idTable();
  for (let actionIndex = decisions.length; actionIndex < plan.actions.length; actionIndex++) {
    const action = plan.actions[actionIndex]!;
    decisions.push({ kind: action.kind, actionIndex, action });
    if (action.record.kind !== action.kind) spanIssues.push({ code: "record_mismatch", actionIndex });
    const rank = PRECEDENCE[action.kind];
    let hint = -1;
    const span = action.span;
    // Indexed loops: iterating frozen arrays with for-of is several times slower in V8.
    for (let i = 0; i < span.length; i++) {
      const id = span[i]!;
      // Spans list ids in log order: check the next seq in the contiguous id table before hashing the id.
      const seq = idTable[hint + 1] === id && hint + 1 < log.length ? hint + 1 : log.seqOf(id);
      if (seq === undefined) {
        spanIssues.push({ code: "unknown_id", actionIndex, messageId: id });
        skippedIds = true;
        continue;
      }
      hint = seq;
      if (seen(seq, actionIndex)) spanIssues.push({ code: "duplicate_in_span", actionIndex, messageId: id });
      if (seq >= limit) {
        spanIssues.push({ code: "future_id", actionIndex, messageId: id, seq });
        skippedIds = true;
        continue;
      }
      const current = actionAt[seq]!;
      if (current < 0 || rank >= PRECEDENCE[decisions[current]!.kind]) {
        if (current >= 0) governed[current]!--;
        governed[actionIndex]!++;
        actionAt[seq] = actionIndex;
      }
    }
  }
  const resolution: SeqResolution = { plan, actionAt, decisions, skippedIds, spanIssues, governed };
  memo.set(plan, { log, resolution });
  return resolution;
}

/**
 * `seen(seq, action)` marks a seq as named by an action and says whether that action named it already (an id
 * twice in one span). Many new ids: a table over the log (`1 + action` per seq); few: a set per action, so a
 * child plan adding a few ids does not allocate a table the size of the log.
 */
function seenTable(
  plan: CompactionPlan,
  from: number,
  length: number,
): (seq: number, actionIndex: number) => boolean {
  let named = 0;
  for (let a = from; a < plan.actions.length; a++) named += plan.actions[a]!.span.length;
  if (named * 16 > length) {
    const lastSeen = new Int32Array(length);
    return (seq, actionIndex) => {
      const again = lastSeen[seq] === actionIndex + 1;
      lastSeen[seq] = actionIndex + 1;
      return again;
    };
  }
  let current = -1;
  const seqs = new Set<number>();
  return (seq, actionIndex) => {
    if (actionIndex !== current) {
      current = actionIndex;
      seqs.clear();
    }
    if (seqs.has(seq)) return true;
    seqs.add(seq);
    return false;
  };
}
