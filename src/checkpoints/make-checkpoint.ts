import { absentRuns, inRuns } from "../log/history-store.js";
import type { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import { resolveForLog } from "../plan/resolve-for-log.js";
import { hashedAsDigest, sourcesDigest } from "../render/prompt-hash.js";
import { type SpanSources, spanSourcesOf } from "../render/span-sources.js";
import type { CheckpointKey, ThreadCheckpoint } from "../stores/checkpoint-store.js";
import type { StrategyMemo } from "../strategies/strategy-memo.js";
import {
  baseOf,
  CHECKPOINT_FORMAT,
  type CheckpointBase,
  type CheckpointHeader,
  type SourcesCheckpoint,
} from "./checkpoint-format.js";
import { newlyAbsent, tailChunk } from "./checkpoint-tail.js";
import { checkpointLog } from "./log-checkpoint.js";
import { exportMemos, memoGroups, primeMemos } from "./memo-checkpoint.js";
import { continuesBase, planCheckpoint } from "./plan-checkpoint.js";
/** A checkpoint made, and what the one after it may continue once it is stored. */
export interface MadeCheckpoint {
  /**
   * The checkpoint. With `extending`, its `tail` is what to append to the stored tail of that checkpoint
   * (`CheckpointStore.putExtending`); otherwise the whole tail.
   */
  readonly checkpoint: ThreadCheckpoint;
  readonly extending?: CheckpointKey;
  readonly next: CheckpointBase;
}

/**
 * The checkpoint of `plan` (a committed version, valid for `log`) on `log`, or undefined when one cannot be
 * made (a span the plan cannot carry as runs, a history whose groups fused, a projected log lacking a group the
 * next turn needs; with a `base`, a plan or log that does not continue it). Primes the strategies' memos for
 * `plan` on `log` first. With `base` the tail made is what continues the base's stored tail: the base's actions
 * are not read again, and a projected log need not have read its own checkpoint's tail.
 */
export function makeCheckpoint(
  log: ThreadLog,
  plan: CompactionPlan,
  kinds: ReadonlyArray<StrategyMemo>,
  base?: CheckpointBase,
): MadeCheckpoint | undefined {
  if (plan.version < 1 || log.length === 0) return undefined;
  if (base !== undefined && (log.length < base.logLength || !continuesBase(plan, base.plan)))
    return undefined;
  // From scratch, a restored log's ids not held (and its plan's retired parts) come from the tail of the
  // checkpoint it was restored from: ask for them before anything else, so a tail not read yet throws first.
  if (base === undefined && log.partial) log.fullIdTable();
  const planned = planCheckpoint(plan, log, base?.plan);
  if (planned === undefined) return undefined;
  const planPart = planned.plan;
  const resolution = resolveForLog(plan, log);
  const keys = primeMemos(log, resolution, kinds);
  const groups = new Set(memoGroups(log, plan, keys, kinds));
  // Every group with a message that renders as itself; summarized, externalized and dropped ones render from the
  // plan (or not at all).
  const { actionAt, decisions } = resolution;
  const groupOf = log.groupIndexTable();
  for (let seq = 0; seq < log.length; seq++) {
    const index = seq < actionAt.length ? actionAt[seq]! : -1;
    const kind = index < 0 ? "include" : decisions[index]!.kind;
    if (kind === "include" || kind === "clear") groups.add(groupOf[seq]!);
  }
  const made = checkpointLog(
    log,
    [...groups].sort((a, b) => a - b),
  );
  if (made === undefined) return undefined;
  const { held } = made.checkpoint;
  let tail: string;
  if (base === undefined) {
    tail = tailChunk(absentRuns(held, log.length), made.absentIds, planned.retired, planned.deferred);
  } else {
    const added = newlyAbsent(base.held, base.logLength, held, log.length);
    if (added === undefined) return undefined;
    // Seqs held by the base's checkpoint or appended since: the log holds them, so it has their ids.
    const ids: string[] = [];
    for (let r = 0; r < added.length; r += 2) {
      for (let seq = added[r]!; seq < added[r + 1]!; seq++) ids.push(log.idAt(seq)!);
    }
    tail = `\n${tailChunk(added, ids, planned.retired, planned.deferred)}`;
  }
  const memos = exportMemos(log, plan, keys, (seq) => inRuns(held, seq), kinds);
  const sources = sourceLists(log, resolution, base);
  const header: CheckpointHeader = { log: made.checkpoint, plan: planPart, sources, memos };
  return {
    checkpoint: {
      threadId: log.threadId,
      planVersion: plan.version,
      logLength: log.length,
      format: CHECKPOINT_FORMAT,
      body: JSON.stringify(header),
      tail,
    },
    ...(base === undefined
      ? {}
      : { extending: { planVersion: base.planVersion, logLength: base.logLength } }),
    next: baseOf(header, plan),
  };
}

/**
 * The source list of every summary and pointer in force. An action of the base governing as many messages as
 * then governs the same ones (an action only loses messages to later ones), so its list is the base's; a list
 * seeded from a checkpoint is taken by its count and digest; any other is built.
 */
function sourceLists(
  log: ThreadLog,
  resolution: ReturnType<typeof resolveForLog>,
  base: CheckpointBase | undefined,
): SourcesCheckpoint[] {
  const before = new Map(base?.sources.map((s) => [s.action, s]));
  const out: SourcesCheckpoint[] = [];
  resolution.decisions.forEach(({ kind }, action) => {
    const governed = resolution.governed[action]!;
    if ((kind !== "summarize" && kind !== "externalize") || governed === 0) return;
    const known = before.get(action);
    if (known !== undefined && known.count === governed) {
      out.push(known);
      return;
    }
    out.push(sourceList(action, spanSourcesOf(log, resolution, action)));
  });
  return out;
}

function sourceList(action: number, sources: SpanSources): SourcesCheckpoint {
  if (!sources.ready && sources.digest !== undefined) {
    return { action, count: sources.count, digest: sources.digest };
  }
  const ids = sources.ids();
  return hashedAsDigest(ids.length)
    ? { action, count: ids.length, digest: sourcesDigest(ids) }
    : { action, count: ids.length, ids: [...ids] };
}
