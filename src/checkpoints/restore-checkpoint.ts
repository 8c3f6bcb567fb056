import type { StoredCounter } from "../engine/stored-counter.js";
import { LedgerError, ValidationError } from "../errors/ledger-error.js";
import type { Message } from "../log/message.js";
import type { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import { resolveForLog } from "../plan/resolve-for-log.js";
import { governedIds, seedSpanSources } from "../render/span-sources.js";
import type { StoredMessage } from "../stores/log-store.js";
import type { Stores } from "../stores/stores.js";
import type { StrategyMemo } from "../strategies/strategy-memo.js";
import {
  baseOf,
  CHECKPOINT_FORMAT,
  type CheckpointHeader,
  headerSchema,
  setCheckpointBase,
} from "./checkpoint-format.js";
import { CheckpointTail, type TailLists } from "./checkpoint-tail.js";
import { restoreLog } from "./log-checkpoint.js";
import { restoreMemos } from "./memo-checkpoint.js";
import { restorePlan } from "./plan-checkpoint.js";
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
    const at = restoreLog(
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
