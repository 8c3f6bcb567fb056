/**
 * The strategies' memos in a thread checkpoint (docs/decisions/0009). A turn's free strategies sweep only the
 * groups their memo of the plan left open and what changed since; a worker without that memo sweeps the whole
 * log, which a checkpoint-restored log cannot (it holds only some messages). So the checkpoint writer brings each
 * memo up to the committed plan (`primeMemos`), keeps the groups the next sweep will visit (`memoGroups`) and
 * the memos' state (`exportMemos`), and the reader puts them back (`restoreMemos`). Which memos travel, and how,
 * the strategies say (`Strategy.memo`, a `StrategyMemo`): this module names none of them. A memo no strategy
 * declares is left out: the strategy then sweeps in full, and the engine answers its `MessageNotLoadedError`
 * with a full load.
 */
import { ValidationError } from "../errors/ledger-error.js";
import type { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import type { SeqResolution } from "../plan/resolve-for-log.js";
import type { SweepState } from "../strategies/group-sweep.js";
import { counts, isCount, record, type StrategyMemo } from "../strategies/strategy-memo.js";
import { historyMemoKeys } from "./log-checkpoint.js";

/** One memo as a checkpoint carries it: its history-memo key and its state (JSON). */
export interface MemoCheckpoint {
  readonly key: string;
  readonly state: unknown;
}

function sweepOf(value: unknown): SweepState<unknown> {
  const sweep = record(value, ["open", "scanned", "data"], "sweep");
  if (!isCount(sweep.scanned)) throw new RangeError("sweep.scanned must be an integer ≥ 0");
  return { open: counts(sweep.open, "sweep.open"), scanned: sweep.scanned, data: sweep.data };
}

function kindOf(kinds: ReadonlyArray<StrategyMemo>, key: string): StrategyMemo | undefined {
  return kinds.find((k) => key.startsWith(k.prefix));
}

/**
 * Brings every memo of the history that a checkpoint can carry up to `resolution.plan` on `log` (a sweep per
 * memo, as a turn makes) and returns their keys.
 */
export function primeMemos(
  log: ThreadLog,
  resolution: SeqResolution,
  kinds: ReadonlyArray<StrategyMemo>,
): ReadonlyArray<string> {
  const keys: string[] = [];
  for (const key of historyMemoKeys(log)) {
    if (kindOf(kinds, key)?.prime(log, resolution, key) === true) keys.push(key);
  }
  return keys;
}

/** The sweep state of `plan` under `key`, when it was made on exactly `log` (a longer log's state does not fit). */
function sweepState(
  kinds: ReadonlyArray<StrategyMemo>,
  log: ThreadLog,
  plan: CompactionPlan,
  key: string,
): SweepState<unknown> | undefined {
  return kindOf(kinds, key)?.sweep(log, key)?.stateOf(plan, log);
}

/** The groups the next sweeps of the primed memos visit at least (a checkpoint must hold them). */
export function memoGroups(
  log: ThreadLog,
  plan: CompactionPlan,
  keys: ReadonlyArray<string>,
  kinds: ReadonlyArray<StrategyMemo>,
): number[] {
  const groups = new Set<number>();
  for (const key of keys) {
    const state = sweepState(kinds, log, plan, key);
    if (state === undefined) continue;
    for (const g of state.open) groups.add(g);
    for (let g = state.scanned; g < log.groupCount; g++) groups.add(g);
  }
  return [...groups].sort((a, b) => a - b);
}

/** The primed memos' state for a checkpoint of `plan` on `log` holding the seqs `held` says. */
export function exportMemos(
  log: ThreadLog,
  plan: CompactionPlan,
  keys: ReadonlyArray<string>,
  held: (seq: number) => boolean,
  kinds: ReadonlyArray<StrategyMemo>,
): MemoCheckpoint[] {
  const out: MemoCheckpoint[] = [];
  for (const key of keys) {
    const kind = kindOf(kinds, key)!;
    const state = sweepState(kinds, log, plan, key);
    const data = state === undefined ? undefined : kind.encodeData(state.data);
    if (state === undefined || data === undefined) continue;
    const extra = kind.exportExtra?.(log, key, held) ?? null;
    out.push({ key, state: { sweep: { open: [...state.open], scanned: state.scanned, data }, extra } });
  }
  return out;
}

/**
 * Puts checkpointed memos back on a restored log for the restored plan's resolution. A memo of a kind none of
 * `kinds` declares is left out (this worker runs no strategy that reads it). Throws `ValidationError` naming the
 * memo when one does not fit (the caller then loads the thread in full).
 */
export function restoreMemos(
  log: ThreadLog,
  resolution: SeqResolution,
  memos: ReadonlyArray<MemoCheckpoint>,
  kinds: ReadonlyArray<StrategyMemo>,
): void {
  for (const { key, state } of memos) {
    const kind = kindOf(kinds, key);
    const where = { threadId: log.threadId, field: `checkpoint.memos[${JSON.stringify(key)}]` };
    if (kind === undefined) continue;
    try {
      const parsed = record(state, ["sweep", "extra"], "memo state");
      kind.restore(log, resolution, key, sweepOf(parsed.sweep), parsed.extra);
    } catch (error) {
      if (error instanceof ValidationError) throw error;
      throw new ValidationError(
        `memo does not fit: ${error instanceof Error ? error.message : error}`,
        where,
      );
    }
  }
}
