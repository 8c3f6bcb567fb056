/**
 * Thread checkpoints for the engine (docs/decisions/0009): written after a plan version is committed, read by a
 * worker without a cache so that it loads one row, the messages that can render and the rows appended since —
 * not the whole log. A checkpoint only ever saves work: anything wrong with one (missing, another format, a
 * body that does not fit the stored log) means a full load, and replay and audit never read them.
 *
 * Format `cl-checkpoint/4` (4: a reasoning-only message opens the group of the calls it leads to). The body is one line of JSON, the header: the projected log's checkpoint, the plan
 * with spans as seq runs and its resolution, the digests of long summary source lists, the strategies' memos.
 * The tail (checkpoint-tail.ts), stored beside it and read only when asked for, holds the ids of the messages
 * not held, the plan's retired actions (those governing nothing any more), the large record fields and the long
 * run lists of the others. A turn that reads one of those throws a `MessageNotLoadedError` carrying `fetch`,
 * and the engine runs it again on a checkpoint read with its tail. The next checkpoint of a history continues
 * the tail of the last one stored from it (written or restored here): it adds only what changed, without
 * reading the stored tail.
 */
import * as z from "zod";
import type { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import type { CheckpointKey } from "../stores/checkpoint-store.js";
import { seqList } from "./checkpoint-tail.js";
import type { LogCheckpoint } from "./log-checkpoint.js";
import type { MemoCheckpoint } from "./memo-checkpoint.js";
import type { PlanCheckpoint, PlanCheckpointBase } from "./plan-checkpoint.js";
/** The body format this module writes and reads. */
export const CHECKPOINT_FORMAT = "cl-checkpoint/4";

/** The source list of a summary or pointer in force: its count, and its digest or (short lists) its ids. */
export interface SourcesCheckpoint {
  readonly action: number;
  readonly count: number;
  readonly digest?: string;
  readonly ids?: ReadonlyArray<string>;
}

export interface CheckpointHeader {
  readonly log: LogCheckpoint;
  readonly plan: PlanCheckpoint;
  readonly sources: ReadonlyArray<SourcesCheckpoint>;
  readonly memos: ReadonlyArray<MemoCheckpoint>;
}

const count = z.number().int().nonnegative();
const seqs = seqList;
const logSchema = z.strictObject({
  threadId: z.string().min(1),
  length: z.number().int().positive(),
  lastHash: z.string(),
  held: seqs,
  pendingCalls: z.array(
    z.strictObject({ seq: count, partIndex: count, callId: z.string(), name: z.string() }),
  ),
  userSeqs: seqs,
  pairing: z.array(seqs),
  groupCount: count,
  pinnedSeqs: seqs,
  groups: z.array(
    z.strictObject({
      index: count,
      kind: z.enum(["system", "user", "assistant_text", "tool_call"]),
      seqs,
      pending: z.boolean(),
      openCalls: z.number().int(),
    }),
  ),
});
const kindSchema = z.enum(["include", "clear", "summarize", "externalize", "drop"]);
const actionSchema = z.strictObject({
  kind: kindSchema,
  record: z.looseObject({ kind: z.string() }),
  strategy: z.string(),
  reason: z.string(),
  runs: z.union([seqs, z.strictObject({ $deferred: count })]),
  first: z.string().nullable(),
});
export const headerSchema = z.strictObject({
  log: logSchema,
  plan: z.strictObject({
    version: z.number().int().positive(),
    basedOnSeq: count,
    actions: z.array(z.union([actionSchema, z.strictObject({ kind: kindSchema, retired: count })])),
    governedRuns: seqs,
    dropRuns: seqs,
    retiredCount: count,
    deferredCount: count,
  }),
  sources: z.array(
    z.strictObject({
      action: count,
      count,
      digest: z.string().optional(),
      ids: z.array(z.string()).optional(),
    }),
  ),
  memos: z.array(z.strictObject({ key: z.string(), state: z.unknown() })),
});

/**
 * A checkpoint stored from a history (written or restored in this process), which the next checkpoint of that
 * history may continue: its key, the runs it holds and its plan's entries and source lists.
 */
export interface CheckpointBase extends CheckpointKey {
  readonly held: ReadonlyArray<number>;
  readonly plan: PlanCheckpointBase;
  readonly sources: ReadonlyArray<SourcesCheckpoint>;
}

// Per history: the last checkpoint stored from it (a history memo under this object key, never exported).
const BASE_KEY = {};

/** The checkpoint the next one of `log`'s history may continue, if one was stored from it here. */
export function checkpointBase(log: ThreadLog): CheckpointBase | undefined {
  return (log.peekHistoryMemo(BASE_KEY) as { current?: CheckpointBase } | undefined)?.current;
}

/** Records (or forgets) the checkpoint the next one of `log`'s history may continue. */
export function setCheckpointBase(log: ThreadLog, base: CheckpointBase | undefined): void {
  const holder = log.historyMemo(BASE_KEY, (): { current?: CheckpointBase } => ({}));
  if (base === undefined) delete holder.current;
  else holder.current = base;
}

/** What a checkpoint with this header, of `plan`, gives the next checkpoint of its history to continue. */
export function baseOf(header: CheckpointHeader, plan: CompactionPlan): CheckpointBase {
  const { retiredCount, deferredCount } = header.plan;
  return {
    planVersion: header.plan.version,
    logLength: header.log.length,
    held: header.log.held,
    plan: { actions: plan.actions, entries: header.plan.actions, retiredCount, deferredCount },
    sources: header.sources,
  };
}
