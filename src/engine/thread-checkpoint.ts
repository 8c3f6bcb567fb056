/**
 * Thread checkpoints for the engine (docs/decisions/0009): written after a plan version is committed, read by a
 * worker without a cache so that it loads one row, the messages that can render and the rows appended since —
 * not the whole log. A checkpoint only ever saves work: anything wrong with one (missing, another format, a
 * body that does not fit the stored log) means a full load, and replay and audit never read them.
 *
 * Format `cl-checkpoint/3`. The body is one line of JSON, the header: the projected log's checkpoint, the plan
 * with spans as seq runs and its resolution, the digests of long summary source lists, the strategies' memos.
 * The tail (checkpoint-tail.ts), stored beside it and read only when asked for, holds the ids of the messages
 * not held, the plan's retired actions (those governing nothing any more), the large record fields and the long
 * run lists of the others. A turn that reads one of those throws a `MessageNotLoadedError` carrying `fetch`,
 * and the engine runs it again on a checkpoint read with its tail. The next checkpoint of a history continues
 * the tail of the last one stored from it (written or restored here): it adds only what changed, without
 * reading the stored tail.
 */
import { z } from "zod";
import { LedgerError, MessageNotLoadedError, ValidationError } from "../errors/ledger-error.js";
import { absentRuns, inRuns } from "../log/history-store.js";
import type { Message } from "../log/message.js";
import { type LogCheckpoint, ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import {
  continuesBase,
  type PlanCheckpoint,
  type PlanCheckpointBase,
  planCheckpoint,
  restorePlan,
} from "../plan/plan-checkpoint.js";
import { resolveForLog } from "../plan/resolve-for-log.js";
import { hashedAsDigest, sourcesDigest } from "../render/prompt-hash.js";
import { governedIds, type SpanSources, seedSpanSources, spanSourcesOf } from "../render/span-sources.js";
import type { CheckpointKey, ThreadCheckpoint } from "../stores/checkpoint-store.js";
import type { StoredMessage } from "../stores/log-store.js";
import type { Stores } from "../stores/stores.js";
import {
  exportMemos,
  type MemoCheckpoint,
  memoGroups,
  primeMemos,
  restoreMemos,
} from "../strategies/memo-checkpoint.js";
import type { StrategyMemo } from "../strategies/strategy-memo.js";
import {
  CheckpointTail,
  newlyAbsent,
  seqList,
  type TailLists,
  tailChunk,
  withTailRead,
} from "./checkpoint-tail.js";
import type { StoredCounter } from "./stored-counter.js";

/** The body format this module writes and reads. */
export const CHECKPOINT_FORMAT = "cl-checkpoint/3";

/** The source list of a summary or pointer in force: its count, and its digest or (short lists) its ids. */
interface SourcesCheckpoint {
  readonly action: number;
  readonly count: number;
  readonly digest?: string;
  readonly ids?: ReadonlyArray<string>;
}

interface CheckpointHeader {
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
const headerSchema = z.strictObject({
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

// Per history: the last checkpoint stored from it (a history memo under this object key, never exported).
const BASE_KEY = {};

/** The checkpoint the next one of `log`'s history may continue, if one was stored from it here. */
function checkpointBase(log: ThreadLog): CheckpointBase | undefined {
  return (log.peekHistoryMemo(BASE_KEY) as { current?: CheckpointBase } | undefined)?.current;
}

/** Records (or forgets) the checkpoint the next one of `log`'s history may continue. */
function setCheckpointBase(log: ThreadLog, base: CheckpointBase | undefined): void {
  const holder = log.historyMemo(BASE_KEY, (): { current?: CheckpointBase } => ({}));
  if (base === undefined) delete holder.current;
  else holder.current = base;
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
  if (base === undefined && log.projected) log.fullIdTable();
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
  const made = log.checkpoint([...groups].sort((a, b) => a - b));
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

/** What a checkpoint with this header, of `plan`, gives the next checkpoint of its history to continue. */
function baseOf(header: CheckpointHeader, plan: CompactionPlan): CheckpointBase {
  const { retiredCount, deferredCount } = header.plan;
  return {
    planVersion: header.plan.version,
    logLength: header.log.length,
    held: header.log.held,
    plan: { actions: plan.actions, entries: header.plan.actions, retiredCount, deferredCount },
    sources: header.sources,
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

/** A thread restored from a checkpoint: the log at the stored length (projected) and the plan version. */
export interface RestoredThread {
  readonly log: ThreadLog;
  readonly plan: CompactionPlan;
  /** The log length the checkpoint was written at. */
  readonly checkpointLength: number;
}

/**
 * Loads a thread from its newest checkpoint of plan version `version` at most `length` messages long, plus the
 * rows appended after it; undefined when there is no usable checkpoint (none, another format, or a body that
 * does not fit the stored log — a full load then does the work). The checkpoint's tail is read when first asked
 * for, or at once with `withTail`. Store errors propagate.
 */
export async function loadCheckpointed(
  stores: Stores,
  counter: StoredCounter,
  kinds: ReadonlyArray<StrategyMemo>,
  threadId: string,
  version: number,
  length: number,
  withTail = false,
): Promise<RestoredThread | undefined> {
  if (stores.checkpoints === undefined || version < 1 || length < 1) return undefined;
  const stored = await stores.checkpoints.latest(threadId, version, length);
  if (stored === undefined || stored.format !== CHECKPOINT_FORMAT) return undefined;
  let header: CheckpointHeader;
  try {
    header = headerSchema.parse(JSON.parse(stored.body)) as CheckpointHeader;
  } catch {
    return undefined;
  }
  const cp = header.log;
  if (cp.threadId !== threadId || cp.length !== stored.logLength || header.plan.version !== version) {
    return undefined;
  }
  const ranges = [];
  for (let r = 0; r < cp.held.length; r += 2) ranges.push({ from: cp.held[r]!, to: cp.held[r + 1]! });
  if (length > cp.length) ranges.push({ from: cp.length, to: length });
  const rows = await stores.log.readRanges(threadId, ranges);
  const heldCount = ranges.reduce((n, r) => n + r.to - r.from, 0) - (length - cp.length);
  const heldRows = rows.slice(0, heldCount);
  const since = rows.slice(heldCount);
  const last = heldRows.at(-1)?.message;
  const lastRow =
    last?.seq === cp.length - 1
      ? last
      : (await stores.log.read(threadId, cp.length - 1, cp.length))[0]?.message;
  if (lastRow?.hash !== cp.lastHash) return undefined;
  for (const row of rows) seedCount(counter, row);
  const tail = new CheckpointTail(stores.checkpoints, stored);
  if (withTail) await tail.load();
  try {
    const at = ThreadLog.restore(
      cp,
      heldRows.map((r) => r.message),
      () => tail.absentIds(cp.held, cp.length),
    );
    const counts = { retired: header.plan.retiredCount, deferred: header.plan.deferredCount };
    let lists: TailLists | undefined;
    const listsOf = (): TailLists => {
      lists ??= tail.lists(counts);
      return lists;
    };
    const plan = restorePlan(
      threadId,
      header.plan,
      at,
      () => listsOf().retired,
      () => listsOf().deferred,
    );
    const resolution = resolveForLog(plan, at);
    for (const s of header.sources) {
      if (s.action >= plan.actions.length)
        throw new ValidationError("source list of no action", { threadId });
      const known = s.ids;
      seedSpanSources(resolution, s.action, {
        count: s.count,
        ...(s.digest === undefined ? {} : { digest: s.digest }),
        build: known === undefined ? () => governedIds(at, resolution, s.action) : () => known,
      });
    }
    restoreMemos(at, resolution, header.memos, kinds);
    // The next checkpoint written from this history continues this one's tail.
    setCheckpointBase(at, baseOf(header, plan));
    const log = since.length === 0 ? at : at.appendTrusted(since.map((r) => r.message as Message));
    return { log, plan, checkpointLength: cp.length };
  } catch (error) {
    if (error instanceof LedgerError) return undefined;
    throw error;
  }
}

function seedCount(counter: StoredCounter, row: StoredMessage): void {
  const n = row.tokens[counter.id];
  if (n !== undefined) counter.seed(row.message.hash, n);
}

/** A worker writes a checkpoint without a commit once the log grew this much past the last one it knows. */
export const CHECKPOINT_INTERVAL = 256;

/**
 * Writes checkpoints in the background, one chain per thread (a write never races the one before it), each
 * after the turn that scheduled it has returned. A write uses the newest cached log value still paired with the
 * plan it was scheduled for (turns may have run meanwhile); a plan no longer in force is not written. A write
 * continues the tail of the last checkpoint stored from the same history when it can (only what changed is made
 * and sent), and is whole otherwise. A checkpoint that cannot be made from the log at hand (its tail is gone) is
 * not written; a failed write is reported and changes nothing else: checkpoints only save work.
 */
export class CheckpointWriter {
  readonly #chains = new Map<string, Promise<void>>();
  /** Per thread: the plan version and log length of the newest checkpoint written or loaded here. */
  readonly #known = new Map<string, { readonly version: number; readonly length: number }>();

  constructor(
    private readonly stores: Stores,
    private readonly current: (threadId: string) => { log: ThreadLog; plan: CompactionPlan } | undefined,
    private readonly onError: (threadId: string, error: unknown) => void,
    /** The memos the engine's strategies declare (what a checkpoint carries of them). */
    private readonly kinds: ReadonlyArray<StrategyMemo> = [],
  ) {}

  /** Notes a checkpoint a worker loaded (the next write is only due after a commit or enough growth). */
  loaded(threadId: string, version: number, length: number): void {
    this.#known.set(threadId, { version, length });
  }

  /** Schedules a checkpoint after a turn: always after a commit, otherwise once the log grew enough. */
  afterTurn(log: ThreadLog, plan: CompactionPlan, committed: boolean): void {
    if (this.stores.checkpoints === undefined || plan.version < 1) return;
    const known = this.#known.get(log.threadId);
    const due =
      committed ||
      known === undefined ||
      known.version !== plan.version ||
      log.length - known.length >= CHECKPOINT_INTERVAL;
    if (due) this.schedule(log, plan);
  }

  /** Schedules a checkpoint of `plan` on `log` (or the newest cached log still paired with `plan`). */
  schedule(log: ThreadLog, plan: CompactionPlan): void {
    const threadId = log.threadId;
    this.#known.set(threadId, { version: plan.version, length: log.length });
    const before = this.#chains.get(threadId) ?? Promise.resolve();
    const next: Promise<void> = before
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(() => this.#write(log, plan))
      .catch((error: unknown) => this.onError(threadId, error))
      .finally(() => {
        if (this.#chains.get(threadId) === next) this.#chains.delete(threadId);
      });
    this.#chains.set(threadId, next);
  }

  async #write(log: ThreadLog, plan: CompactionPlan): Promise<void> {
    const current = this.current(log.threadId);
    if (current !== undefined && current.plan.version > plan.version) return;
    const source = current?.plan === plan && current.log.extends(log) ? current.log : log;
    const checkpoints = this.stores.checkpoints!;
    const base = checkpointBase(source);
    if (base !== undefined) {
      // Continue the tail of the last checkpoint stored from this history: only what changed is made and sent.
      const made = await makeFetching(source, plan, this.kinds, base);
      if (made?.extending !== undefined) {
        const outcome = await checkpoints.putExtending(made.checkpoint, made.extending);
        if (outcome === "stored") setCheckpointBase(source, made.next);
        // "exists": another worker stored this key first (its tail is its own); the base stays as it was.
        if (outcome !== "missing") return;
        // The base was trimmed meanwhile: make a whole one.
        setCheckpointBase(source, undefined);
      }
    }
    const made = await makeFetching(source, plan, this.kinds, undefined);
    if (made !== undefined && (await checkpoints.put(made.checkpoint))) setCheckpointBase(source, made.next);
  }

  /** Resolves when no write is left (including writes scheduled while waiting). */
  async idle(): Promise<void> {
    while (this.#chains.size > 0) await Promise.allSettled([...this.#chains.values()]);
  }
}

/**
 * `makeCheckpoint`, reading the restored checkpoint's tail first when it asks for it (it asks before any other
 * work, or before anything is kept). Undefined when no checkpoint can be made from this log: it needs what
 * neither it nor the store has any more.
 */
async function makeFetching(
  log: ThreadLog,
  plan: CompactionPlan,
  kinds: ReadonlyArray<StrategyMemo>,
  base: CheckpointBase | undefined,
): Promise<MadeCheckpoint | undefined> {
  try {
    return await withTailRead(() => makeCheckpoint(log, plan, kinds, base));
  } catch (error) {
    if (error instanceof MessageNotLoadedError) return undefined;
    throw error;
  }
}
