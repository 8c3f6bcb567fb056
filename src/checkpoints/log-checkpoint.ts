/**
 * The log part of a thread checkpoint (docs/decisions/0009): what a partial log needs besides the messages it
 * holds, how to make it from a log value, and how to restore a partial log from it.
 */
import { ValidationError } from "../errors/ledger-error.js";
import { GroupIndex } from "../log/group-index.js";
import type { CallRef, GroupKind } from "../log/groups.js";
import { ascendingRuns, countBelow, emptyHistory, forEachAbsentSeq } from "../log/history-store.js";
import type { Message } from "../log/message.js";
import { historyAccess, type ThreadLog } from "../log/thread-log.js";
import { missFor } from "./checkpoint-misses.js";

/** One group a partial log holds, as a checkpoint records it (message ids come from the messages). */
export interface HeldGroup {
  readonly index: number;
  readonly kind: GroupKind;
  readonly seqs: ReadonlyArray<number>;
  readonly pending: boolean;
  /** Calls of the group without a result at the checkpoint's length. */
  readonly openCalls: number;
}

/**
 * The log part of a thread checkpoint. Plain data, JSON round-trippable; its size grows with what is held, the
 * user turns and nothing else.
 */
export interface LogCheckpoint {
  readonly threadId: string;
  /** The log length it describes. */
  readonly length: number;
  /** Hash of the message at `length - 1`, so a reader can check the checkpoint belongs to the stored log. */
  readonly lastHash: string;
  /** Seqs whose messages a partial log holds, as ascending `[start, end)` pairs (whole groups). */
  readonly held: ReadonlyArray<number>;
  readonly pendingCalls: ReadonlyArray<CallRef>;
  /** Seqs of every user message (turn starts). */
  readonly userSeqs: ReadonlyArray<number>;
  /** Per held tool message: its seq, then per part the seq of the call it answers. */
  readonly pairing: ReadonlyArray<ReadonlyArray<number>>;
  /** Number of groups at `length`. */
  readonly groupCount: number;
  /** Statically pinned seqs (all held). */
  readonly pinnedSeqs: ReadonlyArray<number>;
  readonly groups: ReadonlyArray<HeldGroup>;
}

/** A log checkpoint made, and the ids of the messages it does not hold (in seq order, listed when first read). */
export interface MadeLogCheckpoint {
  readonly checkpoint: LogCheckpoint;
  readonly absentIds: ReadonlyArray<string>;
}

/**
 * The log part of a checkpoint of `log` for a partial log holding the given groups (ascending indices) plus those
 * every partial log holds: pinned messages, calls still waiting for results (a later result must find its call)
 * and the last message (whose hash the checkpoint carries). Undefined when it cannot be made: a partial `log` that
 * does not hold all of those groups, or a history where a tool message fused two groups (its groups are then
 * recomputed from every message).
 */
export function checkpointLog(log: ThreadLog, groups: ReadonlyArray<number>): MadeLogCheckpoint | undefined {
  if (log.length === 0 || !log.stableGroupIndices) return undefined;
  const access = historyAccess();
  const history = access.history(log);
  const index = access.groupIndex(log);
  const wanted = new Set(groups);
  for (const seq of log.pinnedSeqs) wanted.add(index.indexOf(seq));
  for (const call of log.pendingCalls.values()) wanted.add(index.indexOf(call.seq));
  // The last message too: its hash is what a reader checks the checkpoint against (and what a partial log
  // writing the next checkpoint must know).
  wanted.add(index.indexOf(log.length - 1));
  const heldGroups = [...wanted].sort((a, b) => a - b);
  // A partial log can checkpoint the groups it holds (a worker that loaded a checkpoint writes the next).
  if (log.partial && !heldGroups.every((g) => holdsGroup(log, g))) return undefined;
  const state = index.stateAt(log, heldGroups);
  const seqs = state.groups.flatMap((g) => g.group.seqs).sort((a, b) => a - b);
  // Whole groups never share a seq, so the sorted seqs strictly ascend.
  const held = ascendingRuns(seqs)!;
  const pairing = seqs
    .filter((seq) => history.messages[seq]!.role === "tool")
    .map((seq) => [seq, ...log.callSeqsOfParts(seq)]);
  const checkpoint: LogCheckpoint = {
    threadId: log.threadId,
    length: log.length,
    lastHash: history.messages[log.length - 1]!.hash,
    held,
    pendingCalls: [...log.pendingCalls.values()].map((c) => ({ ...c })),
    userSeqs: history.userSeqs.slice(0, countBelow(history.userSeqs, log.length)),
    pairing,
    groupCount: state.count,
    pinnedSeqs: [...state.pinnedSeqs],
    groups: state.groups.map(({ group, openCalls }) => ({
      index: group.index,
      kind: group.kind,
      seqs: [...group.seqs],
      pending: group.pending,
      openCalls,
    })),
  };
  let absentIds: string[] | undefined;
  const length = log.length;
  return {
    checkpoint,
    // Listed when first read: a checkpoint continuing an earlier one's tail lists only some of them, and a
    // partial log has them only after reading its own checkpoint's tail.
    get absentIds() {
      if (absentIds === undefined) {
        const ids = log.fullIdTable();
        const list: string[] = [];
        forEachAbsentSeq(held, length, (seq) => {
          list.push(ids[seq]!);
        });
        absentIds = list;
      }
      return absentIds;
    },
  };
}

/** Whether `log` holds every message of group `g` (as it is at its length), asking nothing it does not hold. */
function holdsGroup(log: ThreadLog, g: number): boolean {
  const index = historyAccess().groupIndex(log);
  return index.knows(g) && index.groupAt(g, log.length).seqs.every((seq) => log.holds(seq));
}

/**
 * A partial log: the value `checkpoint` describes, holding only `messages` (exactly its held seqs, in order, as a
 * store returned them). Everything derived from the log answers as for the whole log; reading a message it does
 * not hold reports a miss (checkpoint-misses.ts). `absentIds` gives the ids of the others in seq order and is
 * called at most once, when an id not held is first looked up. Throws `ValidationError` when the messages or the
 * checkpoint do not fit together.
 */
export function restoreLog(
  checkpoint: LogCheckpoint,
  messages: ReadonlyArray<Message>,
  absentIds: () => ReadonlyArray<string>,
): ThreadLog {
  const { threadId, length, held } = checkpoint;
  const where = { threadId, field: "checkpoint" };
  const miss = missFor(threadId);
  const store = emptyHistory();
  // Written in ascending seq order, only where held: for a long history V8 keeps these arrays sparse (a
  // dictionary), which costs nothing per message not held. Sizing them to the log instead costs ~1 ms per
  // 100,000 seqs each, and the collector scans them.
  const all = store.messages as Message[];
  let i = 0;
  for (let r = 0; r < held.length; r += 2) {
    for (let seq = held[r]!; seq < held[r + 1]!; seq++) {
      const message = messages[i++];
      if (message?.seq !== seq || seq >= length) {
        throw new ValidationError(`checkpoint holds seq ${seq} but the message given there is not it`, where);
      }
      all[seq] = message;
      store.ids[seq] = message.id;
      store.seqById.set(message.id, seq);
    }
  }
  if (i !== messages.length) {
    throw new ValidationError(`checkpoint holds ${i} messages but ${messages.length} were given`, where);
  }
  // As long as the log, so appends land at the end (a checkpoint holds its last message, so they are).
  if (all.length < length) {
    all.length = length;
    store.ids.length = length;
  }
  for (const [seq, ...callSeqs] of checkpoint.pairing) {
    if (seq === undefined || all[seq]?.role !== "tool") {
      throw new ValidationError(`checkpoint pairs seq ${seq}, which is not a held tool message`, where);
    }
    store.callSeqByPart.set(seq, callSeqs);
    const answers = [...new Set(callSeqs)].sort((a, b) => a - b);
    store.answers.set(seq, answers);
    for (const callSeq of answers)
      store.answeredBy.set(callSeq, [...(store.answeredBy.get(callSeq) ?? []), seq]);
  }
  store.userSeqs.push(...checkpoint.userSeqs);
  store.groupIndex = GroupIndex.restore(
    {
      length,
      count: checkpoint.groupCount,
      pinnedSeqs: checkpoint.pinnedSeqs,
      groups: checkpoint.groups.map((g) => ({
        group: Object.freeze({
          index: g.index,
          kind: g.kind,
          seqs: Object.freeze([...g.seqs]),
          messageIds: Object.freeze(g.seqs.map((seq) => heldAt(all, seq, where).id)),
          pending: g.pending,
        }),
        openCalls: g.openCalls,
      })),
    },
    miss,
  );
  let decoded: ReadonlyArray<string> | undefined;
  store.projection = {
    miss,
    floor: length,
    held,
    absentIds: () => {
      decoded ??= absentIds();
      return decoded;
    },
  };
  const pending = new Map(checkpoint.pendingCalls.map((c) => [c.callId, Object.freeze({ ...c })]));
  return historyAccess().over(threadId, store, length, pending);
}

function heldAt(messages: ReadonlyArray<Message | undefined>, seq: number, where: object): Message {
  const message = messages[seq];
  if (message === undefined) {
    throw new ValidationError(`checkpoint names seq ${seq} in a held group but does not hold it`, where);
  }
  return message;
}

/**
 * Tells a partial log what its store answered for some ids (`found`, as `LogStore.seqsOf` gives it: the ids of
 * `asked` it lacks are in no stored message), so that `seqOf` answers those without decoding the ids of the
 * messages it does not hold (an append checks its new ids that way). Nothing changes for a whole log.
 */
export function noteStoredIds(
  log: ThreadLog,
  asked: Iterable<string>,
  found: ReadonlyMap<string, number>,
): void {
  const projection = historyAccess().history(log).projection;
  if (projection === undefined) return;
  projection.stored ??= new Map();
  const known = projection.stored;
  for (const id of asked) {
    const seq = found.get(id);
    // Only a seq below the floor can be one not held; one at or past it is held, or past this log value.
    known.set(id, seq !== undefined && seq < projection.floor ? seq : undefined);
  }
}

/** The string keys of the memos made in `log`'s history (the strategies' sweep memos a checkpoint exports). */
export function historyMemoKeys(log: ThreadLog): ReadonlyArray<string> {
  return [...historyAccess().history(log).memos.keys()].filter(
    (key): key is string => typeof key === "string",
  );
}
