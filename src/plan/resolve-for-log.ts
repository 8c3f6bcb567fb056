import type { LogView } from "../log/log-view.js";
import { type CompactionPlan, PRECEDENCE, parentOf } from "./compaction-plan.js";
import type { Decision } from "./resolve-plan.js";
import { recordedRuns } from "./span-seqs.js";

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
  /**
   * The dropped seqs as ascending, disjoint, non-adjacent runs `[start, end)` in flat pairs. A drop outranks every
   * other action, so these runs only grow along a lineage and are kept from the parent's: a render or sweep can
   * jump over the dropped history instead of reading its table seq by seq.
   */
  readonly dropRuns: Int32Array;
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
  readonly log: LogView;
  readonly resolution: SeqResolution;
}

const memo = new WeakMap<CompactionPlan, Memo>();
/** Plans whose resolution was seeded (`seedResolution`): their memo is kept while the plan lives. */
const seeded = new WeakSet<CompactionPlan>();

function reusable(plan: CompactionPlan, log: LogView): SeqResolution | undefined {
  const hit = memo.get(plan);
  return hit?.log.sharesPrefix(log, Math.min(plan.basedOnSeq, log.length)) ? hit.resolution : undefined;
}

/**
 * Resolves a plan against a log by seq, with the same precedence as `resolvePlan` (higher kind wins, later
 * action among equals). A plan made by extending a resolved parent copies the parent's table (a memcpy) and only
 * applies its new actions, which keeps the per-turn cost independent of how much earlier turns compacted.
 */
export function resolveForLog(plan: CompactionPlan, log: LogView): SeqResolution {
  const cached = reusable(plan, log);
  if (cached !== undefined) return cached;
  const limit = Math.min(plan.basedOnSeq, log.length);
  // Extend the parent's table when it is at hand; otherwise resolve flat (walking up the lineage would make an
  // old plan cost one full resolution per ancestor).
  const parent = parentOf(plan);
  const parentResolution = parent === undefined ? undefined : reusable(parent, log);
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
  // Precedence rank per action index, so the per-seq comparison reads a typed array, not a keyed property.
  const ranks = new Int8Array(plan.actions.length);
  for (let a = 0; a < plan.actions.length; a++) ranks[a] = PRECEDENCE[plan.actions[a]!.kind];
  const idTable = log.idTable();
  const length = log.length;
  const addedDrops: number[] = [];
  const addDropRun = (start: number, end: number): void => {
    const clipped = Math.min(end, limit);
    if (clipped > start) addedDrops.push(start, clipped);
  };
  for (let actionIndex = decisions.length; actionIndex < plan.actions.length; actionIndex++) {
    const action = plan.actions[actionIndex]!;
    decisions.push({ kind: action.kind, actionIndex, action });
    if (action.record.kind !== action.kind) spanIssues.push({ code: "record_mismatch", actionIndex });
    const rank = ranks[actionIndex]!;
    const span = action.span;
    // Applies the span's entry at `index` (naming `seq`) by precedence.
    const apply = (seq: number, index: number): void => {
      if (seq >= limit) {
        spanIssues.push({ code: "future_id", actionIndex, messageId: span[index]!, seq });
        skippedIds = true;
        return;
      }
      const current = actionAt[seq]!;
      if (current < 0 || rank >= ranks[current]!) {
        if (current >= 0) governed[current]!--;
        governed[actionIndex]!++;
        actionAt[seq] = actionIndex;
      }
    };
    const isDrop = action.kind === "drop";
    const runs = recordedRuns(span, log);
    if (runs !== undefined) {
      if (isDrop) for (let r = 0; r < runs.length; r += 2) addDropRun(runs[r]!, runs[r + 1]!);
      // Built from seqs of this history: ascending, no repeats, every id known.
      let offset = 0;
      for (let r = 0; r < runs.length; r += 2) {
        const start = runs[r]!;
        const end = runs[r + 1]!;
        const base = offset - start;
        const inRange = Math.min(end, limit);
        // The common case inline (a long drop run over seqs nothing governs yet); the rest through `apply`.
        for (let q = start; q < inRange; q++) {
          const current = actionAt[q]!;
          if (current < 0) {
            actionAt[q] = actionIndex;
            governed[actionIndex]!++;
          } else apply(q, base + q);
        }
        for (let q = Math.max(start, inRange); q < end; q++) apply(q, base + q);
        offset += end - start;
      }
      continue;
    }
    // Seqs this action named already; only built when its span stops ascending (a span in log order, the
    // normal case, cannot name a seq twice).
    let named: Set<number> | undefined;
    let maxSeq = -1;
    let hint = -1;
    // Spans list ids in log order, mostly in runs of consecutive seqs: find each run by comparing the span with
    // the log's contiguous id table (string identity, no hashing), then apply it as one seq range.
    for (let i = 0; i < span.length; ) {
      const id = span[i]!;
      const seq = hint + 1 < length && idTable[hint + 1] === id ? hint + 1 : log.seqOf(id);
      if (seq === undefined) {
        spanIssues.push({ code: "unknown_id", actionIndex, messageId: id });
        skippedIds = true;
        i++;
        continue;
      }
      let end = seq + 1;
      let j = i + 1;
      while (j < span.length && end < length && idTable[end] === span[j]) {
        end++;
        j++;
      }
      if (isDrop) addDropRun(seq, end);
      if (named === undefined && seq <= maxSeq) named = seqsNamedBefore(span, i, log);
      for (let q = seq; q < end; q++) {
        if (named !== undefined) {
          if (named.has(q))
            spanIssues.push({ code: "duplicate_in_span", actionIndex, messageId: span[i + q - seq]! });
          named.add(q);
        }
        apply(q, i + q - seq);
      }
      if (end - 1 > maxSeq) maxSeq = end - 1;
      hint = end - 1;
      i = j;
    }
  }
  const inherited = base === undefined ? EMPTY_RUNS : clipRuns(base.dropRuns, limit);
  const dropRuns = addedDrops.length === 0 ? inherited : mergeRuns(inherited, addedDrops);
  const resolution: SeqResolution = { plan, actionAt, decisions, skippedIds, spanIssues, governed, dropRuns };
  memo.set(plan, { log, resolution });
  // A table per plan is one int per message: keep those of the last two generations only (the parent's is what a
  // sibling candidate extends; older ones would pile up along a long-lived lineage, 400 KB per plan at 100,000
  // messages). A plan resolved again later is resolved flat — except a seeded one (below), which cannot be: its
  // spans are built from a checkpoint's tail that a restored thread has not read.
  const grandparent = parent === undefined ? undefined : parentOf(parent);
  if (base !== undefined && grandparent !== undefined && !seeded.has(grandparent)) memo.delete(grandparent);
  return resolution;
}

/**
 * Records the resolution of `plan` against `log` computed elsewhere (a thread checkpoint, 0009): `actionAt`
 * covers `min(plan.basedOnSeq, log.length)` seqs, every span id resolved. `resolveForLog` then answers it for
 * `log` and the logs extending it, and plans extending `plan` copy it instead of resolving from scratch.
 */
export function seedResolution(
  plan: CompactionPlan,
  log: LogView,
  parts: { readonly actionAt: Int32Array; readonly governed: Int32Array; readonly dropRuns: Int32Array },
): SeqResolution {
  const decisions = plan.actions.map((action, actionIndex) => ({ kind: action.kind, actionIndex, action }));
  const resolution: SeqResolution = {
    plan,
    actionAt: parts.actionAt,
    decisions,
    skippedIds: false,
    spanIssues: [],
    governed: parts.governed,
    dropRuns: parts.dropRuns,
  };
  memo.set(plan, { log, resolution });
  seeded.add(plan);
  return resolution;
}

const EMPTY_RUNS = new Int32Array(0);

/** Runs cut at `limit` (a parent's table may cover more seqs than a child based on an earlier log length). */
function clipRuns(runs: Int32Array, limit: number): Int32Array {
  if (runs.length === 0 || runs[runs.length - 1]! <= limit) return runs;
  const out: number[] = [];
  for (let r = 0; r < runs.length && runs[r]! < limit; r += 2)
    out.push(runs[r]!, Math.min(runs[r + 1]!, limit));
  return Int32Array.from(out);
}

/** The union of ascending disjoint runs and some added runs (any order, may overlap), as ascending disjoint runs. */
function mergeRuns(runs: Int32Array, added: number[]): Int32Array {
  const pairs: Array<[number, number]> = [];
  for (let r = 0; r < runs.length; r += 2) pairs.push([runs[r]!, runs[r + 1]!]);
  for (let r = 0; r < added.length; r += 2) pairs.push([added[r]!, added[r + 1]!]);
  pairs.sort((a, b) => a[0] - b[0]);
  const out: number[] = [];
  for (const [start, end] of pairs) {
    if (out.length > 0 && start <= out[out.length - 1]!)
      out[out.length - 1] = Math.max(out[out.length - 1]!, end);
    else out.push(start, end);
  }
  return Int32Array.from(out);
}

/** The seqs of the known ids in `span[0..before)`: the duplicate check of a span that went back in the log. */
function seqsNamedBefore(span: ReadonlyArray<string>, before: number, log: LogView): Set<number> {
  const named = new Set<number>();
  for (let i = 0; i < before; i++) {
    const seq = log.seqOf(span[i]!);
    if (seq !== undefined) named.add(seq);
  }
  return named;
}
