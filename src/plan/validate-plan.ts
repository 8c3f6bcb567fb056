import { PlanValidationError } from "../errors/ledger-error.js";
import { type Group, pendingCandidates } from "../log/groups.js";
import type { LogView } from "../log/log-view.js";
import type { Message } from "../log/message.js";
import { type ActionKind, type CompactionPlan, type PlanAction, parentOf } from "./compaction-plan.js";
import { decisionAt, resolveForLog, type SeqResolution } from "./resolve-for-log.js";

/** One reason a plan cannot be applied to a log, as data. */
export interface PlanProblem {
  readonly code:
    | "thread_mismatch"
    | "based_on_future"
    | "unknown_id"
    | "future_id"
    | "duplicate_in_span"
    | "record_mismatch"
    | "orphaning_split"
    | "pending_call_touched"
    | "bad_excerpt"
    | "bad_part";
  readonly message: string;
  readonly actionIndex?: number;
  readonly messageId?: string;
}

/** Whether an action leaves a message in the request as a real message (so its calls/results still pair). */
export const KEEPS_MESSAGE: Readonly<Record<ActionKind, boolean>> = {
  include: true,
  clear: true,
  summarize: false,
  externalize: false,
  drop: false,
};
const keepsMessage = KEEPS_MESSAGE;

// Plans known valid for a log. Appending to a log never invalidates a valid plan (new messages are included by
// default, and a new result only joins a pending group, whose messages a valid plan leaves included), so a plan
// valid for a log is valid for every log that extends it.
const validFor = new WeakMap<CompactionPlan, LogView>();

function knownValid(plan: CompactionPlan, log: LogView): boolean {
  const checked = validFor.get(plan);
  return checked !== undefined && log.extends(checked);
}

/**
 * Records that `plan` is valid for `log` without checking it: for a plan restored from a thread checkpoint,
 * written only for a plan validated against that log (docs/decisions/0009).
 */
export function trustValid(plan: CompactionPlan, log: LogView): void {
  validFor.set(plan, log);
}

/**
 * Checks a plan against a log and returns every problem found (empty when valid): unknown ids, ids at or after
 * `basedOnSeq`, records that do not match their action, spans that would separate a tool call from its result,
 * and any action other than include on a pending (unanswered) call. A plan extending a parent already found valid
 * only has its new actions and the groups they touch checked.
 */
export function validatePlan(plan: CompactionPlan, log: LogView): ReadonlyArray<PlanProblem> {
  if (knownValid(plan, log)) return [];
  const parent = parentOf(plan);
  const problems =
    parent !== undefined &&
    plan.threadId === log.threadId &&
    plan.basedOnSeq <= log.length &&
    knownValid(parent, log)
      ? validateAdded(plan, parent.actions.length, log)
      : validateWhole(plan, log);
  if (problems.length === 0) validFor.set(plan, log);
  return problems;
}

function validateAdded(plan: CompactionPlan, from: number, log: LogView): ReadonlyArray<PlanProblem> {
  const resolved = resolveForLog(plan, log);
  const problems = describeIssues(plan, resolved, from);
  if (problems.length === 0) checkExcerpts(plan, log, from, problems);
  if (problems.length === 0) checkGroups(touchedGroups(plan, log, from), log, resolved, problems);
  return problems;
}

function validateWhole(plan: CompactionPlan, log: LogView): ReadonlyArray<PlanProblem> {
  const problems: PlanProblem[] = [];
  if (plan.threadId !== log.threadId) {
    problems.push({
      code: "thread_mismatch",
      message: `plan is for thread ${JSON.stringify(plan.threadId)} but the log is ${JSON.stringify(log.threadId)}`,
    });
    return problems;
  }
  if (plan.basedOnSeq > log.length) {
    problems.push({
      code: "based_on_future",
      message: `plan is based on seq ${plan.basedOnSeq} but the log has only ${log.length} messages`,
    });
  }
  if (problems.length > 0) return problems;
  const resolved = resolveForLog(plan, log);
  problems.push(...describeIssues(plan, resolved, 0));
  if (problems.length === 0) checkExcerpts(plan, log, 0, problems);
  if (problems.length > 0) return problems;
  // A plan naming many messages is checked in one sweep over contiguous tables; reading thousands of scattered
  // group objects costs far more than reading every seq once.
  let named = 0;
  for (const action of plan.actions) named += action.span.length;
  if (named * 8 > log.length) sweepGroups(log, resolved, problems);
  else checkGroups(touchedGroups(plan, log, 0), log, resolved, problems);
  return problems;
}

/** Throws `PlanValidationError` listing every problem when the plan cannot be applied to the log. */
export function assertPlanValid(plan: CompactionPlan, log: LogView): void {
  const problems = validatePlan(plan, log);
  if (problems.length > 0) {
    throw new PlanValidationError(
      problems.map((p) => p.message),
      { threadId: log.threadId, ...(problems[0]!.messageId ? { messageId: problems[0]!.messageId } : {}) },
    );
  }
}

/** The span defects resolution found in actions `from` on, as problems a person can read. */
function describeIssues(plan: CompactionPlan, resolved: SeqResolution, from: number): PlanProblem[] {
  const problems: PlanProblem[] = [];
  for (const issue of resolved.spanIssues) {
    if (issue.actionIndex < from) continue;
    const action = plan.actions[issue.actionIndex]!;
    const where = `action ${issue.actionIndex} (${action.kind} by ${action.strategy})`;
    const base = {
      code: issue.code,
      actionIndex: issue.actionIndex,
      ...(issue.messageId === undefined ? {} : { messageId: issue.messageId }),
    };
    const message = {
      record_mismatch: `${where} carries a ${action.record.kind} record; it needs a ${action.kind} record`,
      unknown_id: `${where} names unknown message ${issue.messageId}`,
      duplicate_in_span: `${where} names ${issue.messageId} twice`,
      future_id: `${where} names message ${issue.messageId} (seq ${issue.seq}) which is not before basedOnSeq ${plan.basedOnSeq}`,
    }[issue.code];
    problems.push({ ...base, message });
  }
  return problems;
}

/**
 * What the checks of a clear's excerpts and `onlyParts` read of a log: messages by id and seq, and whether a
 * message is in the turn in progress. A `LogView` answers it (`partsSourceOf`); the store's commit check answers
 * it from the messages it read.
 */
export interface ClearPartsSource {
  seqOf(id: string): number | undefined;
  /** Whether the message at `seq` is at hand (a message that is not is not looked into). */
  holds(seq: number): boolean;
  at(seq: number): Message | undefined;
  /** True when no user message follows the message at `seq`: it is in the turn in progress. */
  inTurnInProgress(seq: number): boolean;
}

/** A log view as a {@link ClearPartsSource}. */
export function partsSourceOf(log: LogView): ClearPartsSource {
  return {
    seqOf: (id) => log.seqOf(id),
    holds: (seq) => log.holds(seq),
    at: (seq) => log.at(seq),
    inTurnInProgress: (seq) => seq > log.lastUserSeq,
  };
}

function checkExcerpts(plan: CompactionPlan, log: LogView, from: number, problems: PlanProblem[]): void {
  const indices: number[] = [];
  for (let a = from; a < plan.actions.length; a++) if (plan.actions[a]!.kind === "clear") indices.push(a);
  if (indices.length > 0) checkClearParts(plan, indices, partsSourceOf(log), problems);
}

/**
 * The excerpts and `onlyParts` of the clear actions at `indices`: excerpts must name each part of their span's
 * messages once at most, and only a part that can show one (a tool result or a text); `onlyParts` the same, and
 * only a part a clear changes. Messages the source does not hold are not looked into: the log they were checked
 * against held them.
 */
export function checkClearParts(
  plan: CompactionPlan,
  indices: Iterable<number>,
  log: ClearPartsSource,
  problems: PlanProblem[],
): void {
  for (const a of indices) {
    const action = plan.actions[a]!;
    if (action.kind !== "clear") continue;
    if (action.record.onlyParts !== undefined) checkOnlyParts(action, a, log, problems);
    if (action.record.excerpts === undefined) continue;
    const span = new Set(action.span);
    const seen = new Set<string>();
    action.record.excerpts.forEach((excerpt, i) => {
      const partIndex = excerpt.partIndex ?? 0;
      const why = excerptProblem(log, excerpt.messageId, partIndex, span, seen);
      if (why === undefined) return;
      problems.push({
        code: "bad_excerpt",
        actionIndex: a,
        messageId: excerpt.messageId,
        message: `action ${a} (clear by ${action.strategy}) excerpt ${i} (message ${excerpt.messageId}, part ${partIndex}) ${why}`,
      });
    });
  }
}

/**
 * The `onlyParts` of a clear action name each part of their span's messages once at most, and only a part a
 * clear changes (a tool result, a call, a text, a reasoning part). The reasoning of the turn in progress (no user
 * message after it) stays: its tool-use cycle may still be running, and Anthropic refuses a tool_use whose signed
 * thinking was left out (a message of reasoning only would not be sent at all, and the calls after it would be).
 * Parts of messages outside the span or not held are not looked into, as for excerpts.
 */
function checkOnlyParts(
  action: PlanAction & { kind: "clear" },
  a: number,
  log: ClearPartsSource,
  problems: PlanProblem[],
): void {
  const span = new Set(action.span);
  const seen = new Set<string>();
  action.record.onlyParts!.forEach((ref, i) => {
    if (!span.has(ref.messageId)) return;
    const key = `${ref.partIndex}\u0000${ref.messageId}`;
    let why: string | undefined;
    if (seen.has(key)) why = "repeats a part";
    seen.add(key);
    const seq = log.seqOf(ref.messageId);
    if (why === undefined && seq !== undefined && log.holds(seq)) {
      const parts = log.at(seq)!.parts;
      const part = parts[ref.partIndex];
      if (part === undefined) why = `names a part the message lacks (it has ${parts.length})`;
      else if (part.type === "media") why = "names a media part, which a clear does not change";
      else if (part.type === "reasoning" && log.inTurnInProgress(seq))
        why =
          "names reasoning of the turn in progress (no user message after it); its tool calls need their signed thinking sent with them";
    }
    if (why === undefined) return;
    problems.push({
      code: "bad_part",
      actionIndex: a,
      messageId: ref.messageId,
      message: `action ${a} (clear by ${action.strategy}) onlyParts ${i} (message ${ref.messageId}, part ${ref.partIndex}) ${why}`,
    });
  });
}

/** What is wrong with one excerpt of a clear action (`seen` collects the parts named so far), if anything. */
function excerptProblem(
  log: ClearPartsSource,
  messageId: string,
  partIndex: number,
  span: ReadonlySet<string>,
  seen: Set<string>,
): string | undefined {
  // An excerpt of a message the action does not govern shows nowhere (`normalizePlan` trims spans, not records).
  if (!span.has(messageId)) return undefined;
  const key = `${partIndex}\u0000${messageId}`;
  if (seen.has(key)) return "repeats an excerpt of the same part";
  seen.add(key);
  const seq = log.seqOf(messageId);
  if (seq === undefined || !log.holds(seq)) return undefined;
  const parts = log.at(seq)!.parts;
  const part = parts[partIndex];
  if (part === undefined) return `names a part the message lacks (it has ${parts.length})`;
  if (part.type !== "tool_result" && part.type !== "text") {
    return `names a ${part.type} part; only tool results and texts can show an excerpt`;
  }
  return undefined;
}

/** Indices of the groups that actions `from` on name (only those can break a group rule). */
function touchedGroups(plan: CompactionPlan, log: LogView, from: number): number[] {
  const touched = new Set<number>();
  for (let a = from; a < plan.actions.length; a++) {
    const action = plan.actions[a]!;
    // A projected log holds every group with a message that renders as itself, so a group it does not hold
    // renders none (summarized, externalized or dropped whole): an action removing more of it cannot split it.
    const removes = !keepsMessage[action.kind];
    let hint = -1;
    for (const id of action.span) {
      hint = log.seqOf(id, hint + 1)!;
      if (removes && !log.holds(hint)) continue;
      touched.add(log.groupIndexOf(hint));
    }
  }
  return [...touched];
}

/**
 * The group rules for the whole log in one pass over seqs: a group whose messages are partly kept and partly
 * removed is split; the groups that may be pending are checked member by member (there are few).
 */
function sweepGroups(log: LogView, resolved: SeqResolution, problems: PlanProblem[]): void {
  const groupOf = log.groupIndexTable();
  const { actionAt, decisions } = resolved;
  const state = new Int8Array(log.groupCount); // 0 unseen, 1 kept, 2 removed, 3 split
  const split: number[] = [];
  // 1 kept / 2 removed per action index, so the sweep reads typed arrays only.
  const keptBy = new Uint8Array(decisions.length);
  for (let a = 0; a < decisions.length; a++) keptBy[a] = keepsMessage[decisions[a]!.kind] ? 1 : 2;
  const covered = Math.min(actionAt.length, log.length);
  for (let seq = 0; seq < log.length; seq++) {
    const action = seq < covered ? actionAt[seq]! : -1;
    const kept = action < 0 ? 1 : keptBy[action]!;
    const group = groupOf[seq]!;
    const seen = state[group]!;
    if (seen === 0) state[group] = kept;
    else if (seen !== kept && seen !== 3) {
      state[group] = 3;
      split.push(group);
    }
  }
  // Whether a group is pending is the group's to say (`Group.pending`); `checkGroups` reads it from each suspect.
  const pending = pendingCandidates(log).map((seq) => log.groupIndexOf(seq));
  const suspects = [...new Set([...pending, ...split])].sort((a, b) => a - b);
  checkGroups(suspects, log, resolved, problems);
}

/** True when one action (or none) governs every message of a group: such a group is never split. */
function governedByOneAction(seqs: ReadonlyArray<number>, resolved: SeqResolution): boolean {
  const table = resolved.actionAt;
  const first = seqs[0]! < table.length ? table[seqs[0]!]! : -1;
  for (let i = 1; i < seqs.length; i++) {
    const seq = seqs[i]!;
    if ((seq < table.length ? table[seq]! : -1) !== first) return false;
  }
  return true;
}

function checkGroups(
  touched: ReadonlyArray<number>,
  log: LogView,
  resolved: SeqResolution,
  problems: PlanProblem[],
): void {
  const kindAt = (seq: number): ActionKind => decisionAt(resolved, seq)?.kind ?? "include";
  for (const index of touched) {
    const group = log.groupAt(index);
    if (!group.pending && governedByOneAction(group.seqs, resolved)) continue;
    const problem = groupProblem(group, kindAt);
    if (problem !== undefined) problems.push(problem);
  }
}

/**
 * The group rules for one group, given the kind of action governing each of its seqs: a pending group (`pending`
 * says so) stays included whole, and a tool-call group is kept or removed whole. Shared with the store's commit
 * check, so both refuse the same plans.
 */
export function groupProblem(group: Group, kindAt: (seq: number) => ActionKind): PlanProblem | undefined {
  if (group.pending) {
    const touched = group.seqs.findIndex((seq) => kindAt(seq) !== "include");
    if (touched < 0) return undefined;
    const id = group.messageIds[touched]!;
    return {
      code: "pending_call_touched",
      messageId: id,
      message:
        group.kind === "tool_call"
          ? `message ${id} belongs to a tool call that has no result yet; pending calls are never compacted`
          : `message ${id} is reasoning that ends the log; the calls it led to may still join it, so it is never compacted yet`,
    };
  }
  if (group.kind !== "tool_call" || group.seqs.length < 2) return undefined;
  const first = keepsMessage[kindAt(group.seqs[0]!)];
  if (group.seqs.every((seq) => keepsMessage[kindAt(seq)] === first)) return undefined;
  const removed = group.messageIds.filter((_, i) => !keepsMessage[kindAt(group.seqs[i]!)]);
  const stays = group.messageIds.filter((_, i) => keepsMessage[kindAt(group.seqs[i]!)]);
  return {
    code: "orphaning_split",
    messageId: removed[0]!,
    message: `span removes ${removed.join(", ")} but keeps ${stays.join(", ")} of the same tool-call group; a call and its results must stay or go together`,
  };
}
