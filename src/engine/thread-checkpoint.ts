/**
 * Thread checkpoints for the engine (docs/decisions/0009): written after a plan version is committed, read by a
 * worker without a cache so that it loads one row, the messages that can render and the rows appended since —
 * not the whole log. A checkpoint only ever saves work: anything wrong with one (missing, another format, a
 * body that does not fit the stored log) means a full load, and replay and audit never read them.
 *
 * Format `cl-checkpoint/2`. The body is one line of JSON, the header: the projected log's checkpoint, the plan
 * with spans as seq runs and its resolution, the digests of long summary source lists, the strategies' memos.
 * The tail, stored beside it and read only when asked for, is two lines of JSON: the ids of the messages not
 * held; the plan's retired actions (those governing nothing any more), the large record fields and the long
 * run lists of the others. A turn that reads an id not held, a retired action or such a field throws a
 * `MessageNotLoadedError` carrying `fetch`, and the engine runs it again on a checkpoint read with its tail; a
 * checkpoint written from a restored thread reads the tail first (it carries those parts forward).
 */
import { z } from "zod";
import {
  CheckpointUnfitError,
  LedgerError,
  MessageNotLoadedError,
  ValidationError,
} from "../errors/ledger-error.js";
import { countBelow } from "../log/history-store.js";
import type { Message } from "../log/message.js";
import { type LogCheckpoint, ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import {
  type ActionCheckpoint,
  type PlanCheckpoint,
  planCheckpoint,
  restorePlan,
} from "../plan/plan-checkpoint.js";
import { resolveForLog } from "../plan/resolve-for-log.js";
import { hashedAsDigest, sourcesDigest } from "../render/prompt-hash.js";
import { governedIds, seedSpanSources, spanSources } from "../render/span-sources.js";
import type { CheckpointStore, ThreadCheckpoint } from "../stores/checkpoint-store.js";
import type { StoredMessage } from "../stores/log-store.js";
import type { Stores } from "../stores/stores.js";
import {
  exportMemos,
  type MemoCheckpoint,
  memoGroups,
  primeMemos,
  restoreMemos,
} from "../strategies/memo-checkpoint.js";
import type { StoredCounter } from "./stored-counter.js";

/** The body format this module writes and reads. */
export const CHECKPOINT_FORMAT = "cl-checkpoint/2";

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
// Seq lists may hold tens of thousands of numbers: one loop checks them (a schema per element costs ~10×).
const seqs = z.custom<number[]>(
  (value) => Array.isArray(value) && value.every((n) => Number.isSafeInteger(n) && n >= 0),
  "expected an array of integers ≥ 0",
);
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
const absentSchema = z.array(z.string());
const lazySchema = z.strictObject({
  retired: z.array(actionSchema),
  deferred: z.array(z.strictObject({ action: count, field: z.string(), value: z.unknown() })),
});
const headerSchema = z.strictObject({
  log: logSchema,
  plan: z.strictObject({
    version: z.number().int().positive(),
    basedOnSeq: count,
    actions: z.array(z.union([actionSchema, z.strictObject({ kind: kindSchema, retired: count })])),
    governedRuns: seqs,
    dropRuns: seqs,
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
 * The checkpoint of `plan` (a committed version, valid for `log`) on `log`, or undefined when one cannot be
 * made (a span the plan cannot carry as runs, a history whose groups fused, a projected log lacking a group the
 * next turn needs). Primes the strategies' memos for `plan` on `log` first.
 */
export function makeCheckpoint(log: ThreadLog, plan: CompactionPlan): ThreadCheckpoint | undefined {
  if (plan.version < 1 || log.length === 0) return undefined;
  // A restored log's ids not held (and its plan's retired parts) come from the tail of the checkpoint it was
  // restored from: ask for them before anything else, so that a tail not read yet throws before any work.
  if (log.projected) log.fullIdTable();
  const planned = planCheckpoint(plan, log);
  if (planned === undefined) return undefined;
  const planPart = planned.plan;
  const resolution = resolveForLog(plan, log);
  const keys = primeMemos(log, resolution);
  const groups = new Set(memoGroups(log, plan, keys));
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
  const held = heldTest(made.checkpoint.held);
  const memos = exportMemos(log, plan, keys, held);
  const sources: SourcesCheckpoint[] = [];
  decisions.forEach(({ kind }, action) => {
    if ((kind !== "summarize" && kind !== "externalize") || resolution.governed[action] === 0) return;
    const ids = spanSources(log, resolution, action);
    sources.push(
      hashedAsDigest(ids.length)
        ? { action, count: ids.length, digest: sourcesDigest(ids) }
        : { action, count: ids.length, ids: [...ids] },
    );
  });
  const header: CheckpointHeader = { log: made.checkpoint, plan: planPart, sources, memos };
  return {
    threadId: log.threadId,
    planVersion: plan.version,
    logLength: log.length,
    format: CHECKPOINT_FORMAT,
    body: JSON.stringify(header),
    tail: `${JSON.stringify(made.absentIds)}\n${JSON.stringify({ retired: planned.retired, deferred: planned.deferred })}`,
  };
}

/** Whether a seq lies in the `[start, end)` runs: an odd number of run bounds is at or below it. */
function heldTest(held: ReadonlyArray<number>): (seq: number) => boolean {
  return (seq) => countBelow(held, seq + 1) % 2 === 1;
}

/** A thread restored from a checkpoint: the log at the stored length (projected) and the plan version. */
export interface RestoredThread {
  readonly log: ThreadLog;
  readonly plan: CompactionPlan;
  /** The log length the checkpoint was written at. */
  readonly checkpointLength: number;
}

/**
 * A restored checkpoint's tail, read from the store the first time something asks for it. Before then, `text`
 * throws `MessageNotLoadedError` whose `fetch` reads it (none once the store no longer holds it: a full load).
 */
class CheckpointTail {
  #text: string | undefined;
  #gone = false;

  constructor(
    private readonly checkpoints: CheckpointStore,
    private readonly key: ThreadCheckpoint,
  ) {}

  /** Line `line` (0: absent ids, 1: retired actions and deferred fields) of the tail. */
  line(line: 0 | 1): string {
    if (this.#text === undefined) {
      const fetch = this.#gone ? undefined : () => this.load();
      throw new MessageNotLoadedError(
        "the checkpoint's tail (ids of messages not held, retired actions, long fields)",
        { threadId: this.key.threadId },
        undefined,
        fetch,
      );
    }
    const newline = this.#text.indexOf("\n");
    if (newline < 0) throw new CheckpointUnfitError("its tail has no second line", this.#where());
    return line === 0 ? this.#text.slice(0, newline) : this.#text.slice(newline + 1);
  }

  /** Reads the tail (once; nothing when already read or gone). */
  async load(): Promise<void> {
    if (this.#text !== undefined || this.#gone) return;
    const { threadId, planVersion, logLength } = this.key;
    const text = await this.checkpoints.tail(threadId, planVersion, logLength);
    if (text === undefined) this.#gone = true;
    else this.#text = text;
  }

  /**
   * Parses line `line` with `schema`, or throws `CheckpointUnfitError` naming the checkpoint's tail (read late,
   * mid-operation: the operation then runs again on the whole log).
   */
  parse<T>(line: 0 | 1, schema: z.ZodType<T>): T {
    const text = this.line(line);
    try {
      return schema.parse(JSON.parse(text));
    } catch (error) {
      throw new CheckpointUnfitError(`its tail is unreadable: ${(error as Error).message}`, this.#where());
    }
  }

  #where() {
    return { threadId: this.key.threadId, field: "checkpoint.tail" };
  }
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
      () => {
        const ids = tail.parse(0, absentSchema);
        const absent = cp.length - heldCount;
        if (ids.length !== absent) {
          throw new CheckpointUnfitError(`its tail names ${ids.length} messages not held, not ${absent}`, {
            threadId,
            field: "checkpoint.tail",
          });
        }
        return ids;
      },
    );
    let lazy: z.infer<typeof lazySchema> | undefined;
    const lazyPart = (): z.infer<typeof lazySchema> => {
      lazy ??= tail.parse(1, lazySchema);
      return lazy;
    };
    const plan = restorePlan(
      threadId,
      header.plan,
      at,
      () => lazyPart().retired as ReadonlyArray<ActionCheckpoint>,
      () => lazyPart().deferred,
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
    restoreMemos(at, resolution, header.memos);
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
 * plan it was scheduled for (turns may have run meanwhile); a plan no longer in force is not written. A failed
 * write is reported and changes nothing else: checkpoints only save work.
 */
export class CheckpointWriter {
  readonly #chains = new Map<string, Promise<void>>();
  /** Per thread: the plan version and log length of the newest checkpoint written or loaded here. */
  readonly #known = new Map<string, { readonly version: number; readonly length: number }>();

  constructor(
    private readonly stores: Stores,
    private readonly current: (threadId: string) => { log: ThreadLog; plan: CompactionPlan } | undefined,
    private readonly onError: (threadId: string, error: unknown) => void,
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
    let checkpoint: ThreadCheckpoint | undefined;
    try {
      checkpoint = makeCheckpoint(source, plan);
    } catch (error) {
      // A restored thread carries its checkpoint's tail forward: read it, then write (makeCheckpoint asks for
      // the tail before any other work, so the first attempt left nothing half done).
      if (!(error instanceof MessageNotLoadedError) || error.fetch === undefined) throw error;
      await error.fetch();
      checkpoint = makeCheckpoint(source, plan);
    }
    if (checkpoint !== undefined) await this.stores.checkpoints!.put(checkpoint);
  }

  /** Resolves when no write is left (including writes scheduled while waiting). */
  async idle(): Promise<void> {
    while (this.#chains.size > 0) await Promise.allSettled([...this.#chains.values()]);
  }
}
