/**
 * What `PlanStore.commit` checks of a plan against the thread's stored log (issue 18): a plan the log cannot carry
 * (an id the log does not hold, a call removed without its results, a pending call compacted) would make every
 * later render of the thread throw until another version is committed on top, so it is refused before it is
 * written. The rules are `validatePlan`'s; what differs is the reading. A store cannot hold every thread's log in
 * memory, and a commit is on the path of every compacting turn, so only what the new actions name is read: their
 * ids' seqs, their messages, and the messages that answer (or made) the calls among them, found by reading outward
 * from each in doubling windows (a clear's excerpt records are not looked into there). The log is append-only,
 * so what is read before the commit's transaction still holds when it writes. A commit that brings the log the
 * plan was validated against (the engine's) is validated on that log instead, by `validatePlan` itself.
 */
import { PlanValidationError } from "../errors/ledger-error.js";
import type { LogView } from "../log/log-view.js";
import type { Message } from "../log/message.js";
import {
  type ActionKind,
  type CompactionPlan,
  type PlanAction,
  PRECEDENCE,
} from "../plan/compaction-plan.js";
import { KEEPS_MESSAGE, type PlanProblem, validatePlan } from "../plan/validate-plan.js";
import type { LogStore, SeqRange } from "./log-store.js";
import type { CommitOptions } from "./plan-store.js";

// Messages read on each side of a named one in the first read: a call's results usually follow it at once.
const FIRST_WINDOW = 8;

/**
 * Throws `PlanValidationError` (naming the plan version, the thread and the first offending message id) when
 * `plan` cannot be applied to the stored log of its thread. `parent` is the committed version it replaces, if
 * the store holds it as an object: then only what differs is read, the actions `plan` adds (their ids must be
 * in the log, before `basedOnSeq`) and the groups those and the actions it leaves out touch (a removed action
 * can split a group as surely as an added one). Actions are compared by identity, as committed plans are frozen.
 */
export async function checkPlanAgainstLog(
  logs: LogStore,
  plan: CompactionPlan,
  parent: CompactionPlan | undefined,
  options?: CommitOptions,
): Promise<void> {
  const view = options?.checkedAgainst;
  if (view !== undefined && (await isStoredLog(logs, view, plan.threadId))) {
    // `validatePlan` remembers the plans it found valid for a log: for the engine's commits this costs nothing.
    const problems = validatePlan(plan, view);
    if (problems.length > 0) refuse(plan, problems);
    return;
  }
  const { added, removed } = changedActions(plan, parent);
  if (added.length === 0 && removed.length === 0 && plan.basedOnSeq <= (parent?.basedOnSeq ?? -1)) return;
  const threadId = plan.threadId;
  const length = await logs.length(threadId);
  const problems: PlanProblem[] = [];
  if (plan.basedOnSeq > length) {
    problems.push({
      code: "based_on_future",
      message: `plan is based on seq ${plan.basedOnSeq} but the stored log has only ${length} messages`,
    });
  } else {
    const named = await namedSeqs(logs, plan, added, removed, problems);
    if (problems.length === 0 && named.size > 0) {
      const window = new LogWindow(logs, threadId, length);
      const groups = await touchedGroups(window, named);
      checkGroups(plan, groups, (seq) => window.messages.get(seq)!.id, problems);
    }
  }
  if (problems.length > 0) refuse(plan, problems);
}

/**
 * Whether `view` is (a prefix of) the stored log of `threadId`: its last message is stored at the same seq (one
 * indexed lookup). A view of another thread, store or history is not taken; the plan is then checked by reading.
 */
async function isStoredLog(logs: LogStore, view: LogView, threadId: string): Promise<boolean> {
  if (view.threadId !== threadId) return false;
  // An empty log carries no span: validating against it refuses every id a plan names.
  if (view.length === 0) return true;
  const last = view.length - 1;
  const id = view.idAt(last);
  if (id === undefined) return false;
  return (await logs.seqsOf(threadId, [id])).get(id) === last;
}

/** The actions of `plan` not in `parent` (with their indices), and those of `parent` not in `plan`. */
function changedActions(
  plan: CompactionPlan,
  parent: CompactionPlan | undefined,
): { added: ReadonlyArray<number>; removed: ReadonlyArray<PlanAction> } {
  if (parent === undefined) return { added: plan.actions.map((_, i) => i), removed: [] };
  // The common case, an extension: the parent's actions, then new ones.
  let prefix = 0;
  while (prefix < parent.actions.length && plan.actions[prefix] === parent.actions[prefix]) prefix++;
  if (prefix === parent.actions.length) {
    return { added: plan.actions.slice(prefix).map((_, i) => prefix + i), removed: [] };
  }
  const before = new Set(parent.actions);
  const after = new Set(plan.actions);
  const added: number[] = [];
  plan.actions.forEach((action, i) => {
    if (!before.has(action)) added.push(i);
  });
  return { added, removed: parent.actions.filter((action) => !after.has(action)) };
}

function refuse(plan: CompactionPlan, problems: ReadonlyArray<PlanProblem>): never {
  const messageId = problems.find((p) => p.messageId !== undefined)?.messageId;
  throw new PlanValidationError(
    problems.map((p) => `${p.message} in the stored log`),
    { threadId: plan.threadId, ...(messageId === undefined ? {} : { messageId }) },
    plan.version,
  );
}

/**
 * The seq of every id the added actions name (unknown ids, ids not before `basedOnSeq` and repeats are
 * problems), and of the ids the removed actions named (in the log already: they were committed).
 */
async function namedSeqs(
  logs: LogStore,
  plan: CompactionPlan,
  added: ReadonlyArray<number>,
  removed: ReadonlyArray<PlanAction>,
  problems: PlanProblem[],
): Promise<Map<string, number>> {
  const ids = new Set<string>();
  for (const a of added) for (const id of plan.actions[a]!.span) ids.add(id);
  for (const action of removed) for (const id of action.span) ids.add(id);
  const seqs = ids.size === 0 ? new Map<string, number>() : await logs.seqsOf(plan.threadId, [...ids]);
  const named = new Map<string, number>();
  for (const a of added) {
    const action = plan.actions[a]!;
    const where = `action ${a} (${action.kind} by ${action.strategy})`;
    const inSpan = new Set<string>();
    for (const id of action.span) {
      const seq = seqs.get(id);
      const base = { actionIndex: a, messageId: id };
      if (inSpan.has(id)) {
        problems.push({ ...base, code: "duplicate_in_span", message: `${where} names ${id} twice` });
      } else if (seq === undefined) {
        problems.push({ ...base, code: "unknown_id", message: `${where} names unknown message ${id}` });
      } else if (seq >= plan.basedOnSeq) {
        problems.push({
          ...base,
          code: "future_id",
          message: `${where} names message ${id} (seq ${seq}) which is not before basedOnSeq ${plan.basedOnSeq}`,
        });
      } else named.set(id, seq);
      inSpan.add(id);
    }
  }
  for (const action of removed) {
    for (const id of action.span) {
      const seq = seqs.get(id);
      if (seq !== undefined) named.set(id, seq);
    }
  }
  return named;
}

/** A tool-call group as far as the commit check needs it: its messages and whether a call lacks a result. */
interface CallGroup {
  readonly seqs: Set<number>;
  pending: boolean;
}

/** The messages read so far, by seq, with the calls and results among them indexed by call id. */
class LogWindow {
  readonly messages = new Map<number, Message>();
  /** Call id → seq of the message making the call. */
  readonly callAt = new Map<string, number>();
  /** Call id → seqs of the messages answering it. */
  readonly resultsOf = new Map<string, number[]>();

  constructor(
    private readonly logs: LogStore,
    private readonly threadId: string,
    readonly length: number,
  ) {}

  async read(ranges: ReadonlyArray<SeqRange>): Promise<void> {
    const wanted = ranges
      .map((r) => ({ from: Math.max(0, r.from), to: Math.min(this.length, r.to) }))
      .filter((r) => r.from < r.to);
    if (wanted.length === 0) return;
    for (const { message } of await this.logs.readRanges(this.threadId, wanted)) {
      if (this.messages.has(message.seq)) continue;
      this.messages.set(message.seq, message);
      for (const part of message.parts) {
        if (part.type === "tool_call") this.callAt.set(part.callId, message.seq);
        else if (part.type === "tool_result") {
          const seqs = this.resultsOf.get(part.callId);
          if (seqs === undefined) this.resultsOf.set(part.callId, [message.seq]);
          else seqs.push(message.seq);
        }
      }
    }
  }
}

function callIdsOf(message: Message, type: "tool_call" | "tool_result"): string[] {
  const ids: string[] = [];
  for (const part of message.parts) if (part.type === type) ids.push(part.callId);
  return ids;
}

/**
 * The tool-call groups the named messages belong to. A call's results come after it and a result's call before
 * it; each side not yet read is read in windows that double until it is found or the log ends (a call still
 * without a result at the end is pending).
 */
async function touchedGroups(window: LogWindow, named: ReadonlyMap<string, number>): Promise<CallGroup[]> {
  await window.read(
    [...named.values()].map((seq) => ({ from: seq - FIRST_WINDOW, to: seq + FIRST_WINDOW + 1 })),
  );
  // Calls answered by a named result, whose call message has to be found before it.
  const resultSide = new Map<string, number>();
  const calls = new Set<string>();
  for (const seq of named.values()) {
    const message = window.messages.get(seq)!;
    for (const id of callIdsOf(message, "tool_call")) calls.add(id);
    for (const id of callIdsOf(message, "tool_result")) resultSide.set(id, seq);
  }
  await widen(window, resultSide, (id) => window.callAt.has(id), "back");
  // A call message found from one of its results: its parallel calls belong to the group too.
  for (const id of resultSide.keys()) {
    const seq = window.callAt.get(id);
    if (seq !== undefined)
      for (const other of callIdsOf(window.messages.get(seq)!, "tool_call")) calls.add(other);
  }
  const callSide = new Map<string, number>();
  for (const id of calls) callSide.set(id, window.callAt.get(id)!);
  await widen(window, callSide, (id) => window.resultsOf.has(id), "forward");
  return mergeGroups(window, calls);
}

/**
 * Reads outward from each open call id's seq (backward for a call, forward for results) in windows that double,
 * until `found` holds for it or the log's edge is reached.
 */
async function widen(
  window: LogWindow,
  open: ReadonlyMap<string, number>,
  found: (callId: string) => boolean,
  direction: "back" | "forward",
): Promise<void> {
  let span = FIRST_WINDOW;
  let left = [...open].filter(([id]) => !found(id));
  while (left.length > 0) {
    const next = span * 2;
    const reachable = left.filter(([, seq]) =>
      direction === "back" ? seq - span > 0 : seq + span + 1 < window.length,
    );
    if (reachable.length === 0) return;
    await window.read(
      reachable.map(([, seq]) =>
        direction === "back"
          ? { from: seq - next, to: seq - span }
          : { from: seq + span + 1, to: seq + next + 1 },
      ),
    );
    span = next;
    left = reachable.filter(([id]) => !found(id));
  }
}

/** One group per call message (parallel calls share it), with every result message answering its calls. */
function mergeGroups(window: LogWindow, calls: ReadonlySet<string>): CallGroup[] {
  const bySeq = new Map<number, CallGroup>();
  for (const id of calls) {
    const seq = window.callAt.get(id);
    if (seq === undefined) continue;
    const group = bySeq.get(seq) ?? { seqs: new Set([seq]), pending: false };
    const answers = window.resultsOf.get(id) ?? [];
    if (answers.length === 0) group.pending = true;
    for (const answer of answers) group.seqs.add(answer);
    bySeq.set(seq, group);
  }
  return [...bySeq.values()].filter((g) => g.pending || g.seqs.size > 1);
}

/**
 * The rules of `validatePlan` on the touched groups: a pending call's messages stay included, and the messages
 * of a call group are kept or removed together. Each message's action is the plan's strongest on it (precedence),
 * found in one pass over the plan's spans.
 */
function checkGroups(
  plan: CompactionPlan,
  groups: ReadonlyArray<CallGroup>,
  idAt: (seq: number) => string,
  problems: PlanProblem[],
): void {
  if (groups.length === 0) return;
  const kinds = new Map<string, ActionKind>();
  for (const group of groups) for (const seq of group.seqs) kinds.set(idAt(seq), "include");
  for (const action of plan.actions) {
    for (const id of action.span) {
      const kind = kinds.get(id);
      if (kind !== undefined && PRECEDENCE[action.kind] > PRECEDENCE[kind]) kinds.set(id, action.kind);
    }
  }
  const kindAt = (seq: number): ActionKind => kinds.get(idAt(seq)) ?? "include";
  for (const group of groups) {
    const seqs = [...group.seqs].sort((a, b) => a - b);
    if (group.pending) {
      const touched = seqs.find((seq) => kindAt(seq) !== "include");
      if (touched !== undefined) {
        problems.push({
          code: "pending_call_touched",
          messageId: idAt(touched),
          message: `message ${idAt(touched)} belongs to a tool call that has no result yet; pending calls are never compacted`,
        });
      }
      continue;
    }
    const removed = seqs.filter((seq) => !KEEPS_MESSAGE[kindAt(seq)]);
    if (removed.length === 0 || removed.length === seqs.length) continue;
    const stays = seqs.filter((seq) => KEEPS_MESSAGE[kindAt(seq)]);
    problems.push({
      code: "orphaning_split",
      messageId: idAt(removed[0]!),
      message: `span removes ${removed.map(idAt).join(", ")} but keeps ${stays.map(idAt).join(", ")} of the same tool-call group; a call and its results must stay or go together`,
    });
  }
}
