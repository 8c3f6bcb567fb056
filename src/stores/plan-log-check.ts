/**
 * What `PlanStore.commit` checks of a plan against the thread's stored log (issue 18): a plan the log cannot carry
 * (an id the log does not hold, a call removed without its results, a pending call compacted, a clear naming a
 * part it cannot change) would make every later render of the thread throw, or send a request the provider
 * refuses, so it is refused before it is written. The rules and the groups are `validatePlan`'s own (`groupProblem`,
 * `computeGroups`, `checkClearParts`); what differs is the reading. A store cannot hold every thread's log in
 * memory, and a commit is on the path of every compacting turn, so only what the changed actions name is read:
 * their ids' seqs and the stretches of the log around them, widened (in doubling steps) until every group they
 * touch lies whole inside a stretch read, which is then grouped exactly as the whole log would be. The log is
 * append-only, so what is read before the commit's transaction still holds when it writes. A commit that brings
 * the log the plan was validated against (the engine's) is validated on that log instead, by `validatePlan`.
 */
import { PlanValidationError } from "../errors/ledger-error.js";
import { type CallRef, computeGroups, type Group, type GroupSource } from "../log/groups.js";
import type { LogView } from "../log/log-view.js";
import type { Message } from "../log/message.js";
import {
  type ActionKind,
  type CompactionPlan,
  type PlanAction,
  PRECEDENCE,
} from "../plan/compaction-plan.js";
import { checkClearParts, groupProblem, type PlanProblem, validatePlan } from "../plan/validate-plan.js";
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
      await window.read(
        [...named.values()].map((seq) => ({ from: seq - FIRST_WINDOW, to: seq + FIRST_WINDOW + 1 })),
      );
      await checkClears(plan, added, named, window, problems);
      if (problems.length === 0) {
        const groups = await touchedGroups(window, new Set(named.values()));
        checkGroups(plan, groups, problems);
      }
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

/** The messages read so far, by seq. */
class LogWindow {
  readonly messages = new Map<number, Message>();

  constructor(
    private readonly logs: LogStore,
    private readonly threadId: string,
    readonly length: number,
  ) {}

  /** Reads the messages of `ranges` not read yet; returns how many were new. */
  async read(ranges: ReadonlyArray<SeqRange>): Promise<number> {
    const wanted = mergeRanges(
      ranges.map((r) => ({ from: Math.max(0, r.from), to: Math.min(this.length, r.to) })),
    ).filter((r) => r.from < r.to && !this.#holdsAll(r));
    if (wanted.length === 0) return 0;
    let added = 0;
    for (const { message } of await this.logs.readRanges(this.threadId, wanted)) {
      if (this.messages.has(message.seq)) continue;
      this.messages.set(message.seq, message);
      added++;
    }
    return added;
  }

  #holdsAll(range: SeqRange): boolean {
    for (let seq = range.from; seq < range.to; seq++) if (!this.messages.has(seq)) return false;
    return true;
  }

  /** The stretches of consecutive seqs read, ascending, as `[from, to)`. */
  stretches(): SeqRange[] {
    const seqs = [...this.messages.keys()].sort((a, b) => a - b);
    const out: SeqRange[] = [];
    for (const seq of seqs) {
      const last = out[out.length - 1];
      if (last !== undefined && last.to === seq) out[out.length - 1] = { from: last.from, to: seq + 1 };
      else out.push({ from: seq, to: seq + 1 });
    }
    return out;
  }
}

/** Ranges sorted and merged where they overlap or touch. */
function mergeRanges(ranges: ReadonlyArray<SeqRange>): SeqRange[] {
  const sorted = [...ranges].sort((a, b) => a.from - b.from);
  const out: SeqRange[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && r.from <= last.to)
      out[out.length - 1] = { from: last.from, to: Math.max(last.to, r.to) };
    else out.push(r);
  }
  return out;
}

/**
 * One stretch of the log read, `[from, to)`, as a `GroupSource` with seqs counted from `from`: results pair with
 * the call of their id before them (an id is never reused while its call is pending, so that is the call a whole
 * log pairs them with). A tool message whose calls are not all in the stretch is marked `cut`; one with none of
 * them there stands as a message of its own (it cannot join a group of the stretch), so it can still be grouped.
 * A call left without a result is pending in the stretch: in the log too when the stretch reaches its end.
 */
class Stretch implements GroupSource {
  readonly length: number;
  readonly pendingCalls = new Map<string, CallRef>();
  readonly #messages: Message[] = [];
  readonly #answers: number[][] = [];
  /** Relative seqs of tool messages answering a call made before the stretch. */
  readonly cut = new Set<number>();

  constructor(
    readonly from: number,
    to: number,
    messages: ReadonlyMap<number, Message>,
  ) {
    this.length = to - from;
    for (let i = 0; i < this.length; i++) {
      const message = messages.get(from + i)!;
      const answers = new Set<number>();
      message.parts.forEach((part, partIndex) => {
        if (part.type === "tool_call") {
          this.pendingCalls.set(part.callId, { seq: i, partIndex, callId: part.callId, name: part.name });
        } else if (part.type === "tool_result") {
          const call = this.pendingCalls.get(part.callId);
          if (call === undefined) this.cut.add(i);
          else {
            answers.add(call.seq);
            this.pendingCalls.delete(part.callId);
          }
        }
      });
      this.#answers.push([...answers].sort((a, b) => a - b));
      this.#messages.push(
        message.role === "tool" && answers.size === 0 ? { ...message, role: "user", parts: [] } : message,
      );
    }
  }

  at(seq: number): Message | undefined {
    return this.#messages[seq];
  }

  answersOf(seq: number): ReadonlyArray<number> {
    return this.#answers[seq] ?? [];
  }
}

/** A group of a stretch, in the log's seqs, and whether it may reach past the stretch (then more is read). */
interface StretchGroup {
  readonly group: Group;
  /** The group may hold messages before the stretch. */
  readonly openBefore: boolean;
  /** The group may hold messages after the stretch. */
  readonly openAfter: boolean;
}

/** The groups of a stretch (`computeGroups`, the log's own grouping), in the log's seqs. */
function groupsOf(stretch: Stretch, logLength: number): StretchGroup[] {
  const to = stretch.from + stretch.length;
  return computeGroups(stretch).groups.map((group) => {
    const first = group.seqs[0]!;
    // Calls at the stretch's start may join reasoning just before it; a result may answer a call before it.
    const openBefore =
      stretch.from > 0 &&
      ((first === 0 && stretch.at(0)!.parts.some((p) => p.type === "tool_call")) ||
        group.seqs.some((seq) => stretch.cut.has(seq)));
    // Pending in the stretch: a call answered after it, or reasoning whose calls come after it.
    const openAfter = to < logLength && group.pending;
    const seqs = group.seqs.map((seq) => seq + stretch.from);
    return {
      group: Object.freeze({ ...group, seqs: Object.freeze(seqs) }),
      openBefore,
      openAfter,
    };
  });
}

/**
 * The groups of the seqs in `touched`, as the whole log groups them. The stretches read around them are widened
 * in doubling steps on the side where one of their groups may go on, until none may (or the log's edge is met).
 */
async function touchedGroups(window: LogWindow, touched: ReadonlySet<number>): Promise<Group[]> {
  const sorted = [...touched].sort((a, b) => a - b);
  for (let step = FIRST_WINDOW; ; step *= 2) {
    const groups: Group[] = [];
    const wider: SeqRange[] = [];
    let next = 0;
    for (const range of window.stretches()) {
      // Stretches and touched seqs both ascend: skip the seqs before this stretch, then see whether one is in it.
      while (next < sorted.length && sorted[next]! < range.from) next++;
      if (next === sorted.length || sorted[next]! >= range.to) continue;
      const stretch = new Stretch(range.from, range.to, window.messages);
      for (const found of groupsOf(stretch, window.length)) {
        if (!found.group.seqs.some((seq) => touched.has(seq))) continue;
        groups.push(found.group);
        if (found.openBefore) wider.push({ from: range.from - step, to: range.from });
        if (found.openAfter) wider.push({ from: range.to, to: range.to + step });
      }
    }
    // A store that returns nothing more (it has to: the seqs are below its length) cannot be read further.
    if (wider.length === 0 || (await window.read(wider)) === 0) return groups;
  }
}

/** The kind of action governing each seq of `groups`: the plan's strongest on its id (precedence). */
function kindsOf(plan: CompactionPlan, groups: ReadonlyArray<Group>): (seq: number) => ActionKind {
  const kinds = new Map<string, ActionKind>();
  const idAt = new Map<number, string>();
  for (const group of groups) {
    group.seqs.forEach((seq, i) => {
      idAt.set(seq, group.messageIds[i]!);
      kinds.set(group.messageIds[i]!, "include");
    });
  }
  for (const action of plan.actions) {
    for (const id of action.span) {
      const kind = kinds.get(id);
      if (kind !== undefined && PRECEDENCE[action.kind] > PRECEDENCE[kind]) kinds.set(id, action.kind);
    }
  }
  return (seq) => kinds.get(idAt.get(seq)!) ?? "include";
}

/** The group rules of `validatePlan` (`groupProblem`) on the groups the changed actions touch. */
function checkGroups(plan: CompactionPlan, groups: ReadonlyArray<Group>, problems: PlanProblem[]): void {
  if (groups.length === 0) return;
  const kindAt = kindsOf(plan, groups);
  for (const group of groups) {
    const problem = groupProblem(group, kindAt);
    if (problem !== undefined) problems.push(problem);
  }
}

/**
 * The part rules of `validatePlan` (`checkClearParts`) on the added clears: their messages are read already (they
 * are named); whether one is in the turn in progress is found by reading on from it until a user message.
 */
async function checkClears(
  plan: CompactionPlan,
  added: ReadonlyArray<number>,
  named: ReadonlyMap<string, number>,
  window: LogWindow,
  problems: PlanProblem[],
): Promise<void> {
  const clears = added.filter((a) => plan.actions[a]!.kind === "clear");
  if (clears.length === 0) return;
  const asked = new Set<number>();
  for (const a of clears) {
    const record = plan.actions[a]!.record;
    if (record.kind !== "clear") continue;
    for (const ref of record.onlyParts ?? []) {
      const seq = named.get(ref.messageId);
      if (seq !== undefined && window.messages.get(seq)?.parts[ref.partIndex]?.type === "reasoning")
        asked.add(seq);
    }
  }
  const inProgress = await turnsInProgress(window, asked);
  checkClearParts(
    plan,
    clears,
    {
      seqOf: (id) => named.get(id),
      holds: (seq) => window.messages.has(seq),
      at: (seq) => window.messages.get(seq),
      inTurnInProgress: (seq) => inProgress.has(seq),
    },
    problems,
  );
}

/** Those of `seqs` that no user message follows, read on from each in doubling steps. */
async function turnsInProgress(window: LogWindow, seqs: ReadonlySet<number>): Promise<Set<number>> {
  const userIn = (from: number, to: number): boolean => {
    for (let s = from; s < Math.min(to, window.length); s++)
      if (window.messages.get(s)?.role === "user") return true;
    return false;
  };
  let open = [...seqs];
  let done = 0;
  for (let reach = FIRST_WINDOW; open.some((seq) => seq + 1 + done < window.length); reach *= 2) {
    const ranges = open.map((seq) => ({ from: seq + 1 + done, to: seq + 1 + reach }));
    await window.read(ranges);
    open = open.filter((seq) => !userIn(seq + 1 + done, seq + 1 + reach));
    done = reach;
  }
  return new Set(open);
}
