import type { Message } from "./message.js";

/** Where a tool call lives: the assistant message's seq and the part index inside it. */
export interface CallRef {
  readonly seq: number;
  readonly partIndex: number;
  readonly callId: string;
  readonly name: string;
}

/** Kinds of atomic groups: the units compaction may remove or replace without breaking provider rules. */
export type GroupKind = "system" | "user" | "assistant_text" | "tool_call";

/**
 * An atomic group. A `tool_call` group is the assistant message holding calls (with its reasoning parts) plus
 * every tool message answering those calls, wherever they appear; parallel calls in one message form one group.
 * A reasoning-only assistant message right before the message holding calls (the shape streamed Responses and
 * the Microsoft Agent Framework produce) is the reasoning that led to them: it opens their group, so no window
 * or fallback can keep the calls and drop it (Anthropic refuses a tool_use whose signed thinking is gone).
 */
export interface Group {
  readonly index: number;
  readonly kind: GroupKind;
  /** Ascending seqs of the group's messages. */
  readonly seqs: ReadonlyArray<number>;
  readonly messageIds: ReadonlyArray<string>;
  /**
   * True when the group may still change as the log grows: a call of the group has no result yet, or the group
   * is a reasoning-only message that ends the log (the calls it led to may come next and join it). Compaction
   * never touches a pending group, so appending never invalidates a valid plan.
   */
  readonly pending: boolean;
}

/** What `computeGroups` needs of a log. */
export interface GroupSource {
  readonly length: number;
  readonly pendingCalls: ReadonlyMap<string, CallRef>;
  at(seq: number): Message | undefined;
  answersOf(seq: number): ReadonlyArray<number>;
}

/** The kind of group a non-tool message starts. */
export function groupKindOf(message: Message): GroupKind {
  if (message.role === "system") return "system";
  if (message.role === "user") return "user";
  return message.parts.some((p) => p.type === "tool_call") ? "tool_call" : "assistant_text";
}

/** True for an assistant message that holds reasoning parts and nothing else. */
export function isReasoningOnly(message: Message | undefined): boolean {
  return (
    message !== undefined &&
    message.role === "assistant" &&
    message.parts.length > 0 &&
    message.parts.every((p) => p.type === "reasoning")
  );
}

/** True when the group of `seqs` is a reasoning-only message ending a log of `length` (see `Group.pending`). */
export function awaitsCalls(log: GroupSource, seqs: ReadonlyArray<number>, length: number): boolean {
  return seqs.length === 1 && seqs[0] === length - 1 && isReasoningOnly(log.at(seqs[0]));
}

/**
 * Seqs whose groups are the only ones that can be pending (see `Group.pending`): each message holding a pending
 * call, and the last message. Whether one of those groups is pending is read from the group; this only saves a
 * caller from reading every group to find the few that are.
 */
export function pendingCandidates(log: Pick<GroupSource, "length" | "pendingCalls">): number[] {
  const seqs = [...log.pendingCalls.values()].map((call) => call.seq);
  if (log.length > 0) seqs.push(log.length - 1);
  return seqs;
}

/** Groups of a log value computed from scratch, plus the seq → group index. */
export interface GroupsSnapshot {
  readonly length: number;
  readonly groups: ReadonlyArray<Group>;
  readonly indexBySeq: Int32Array;
}

function finishGroup(
  log: GroupSource,
  index: number,
  kind: GroupKind,
  seqs: number[],
  pending: ReadonlySet<number>,
): Group {
  return Object.freeze({
    index,
    kind,
    seqs: Object.freeze(seqs),
    messageIds: Object.freeze(seqs.map((s) => log.at(s)!.id)),
    pending: seqs.some((s) => pending.has(s)) || awaitsCalls(log, seqs, log.length),
  });
}

/** Computes the atomic groups of a log from scratch, ordered by their first message. */
export function computeGroups(log: GroupSource): GroupsSnapshot {
  const groupOf = new Int32Array(log.length);
  const members: number[][] = [];
  const kinds: GroupKind[] = [];
  for (let seq = 0; seq < log.length; seq++) {
    const message = log.at(seq)!;
    const kind = message.role === "tool" ? undefined : groupKindOf(message);
    const before = seq > 0 ? members[groupOf[seq - 1]!] : undefined;
    if (kind === "tool_call" && before?.length === 1 && isReasoningOnly(log.at(seq - 1))) {
      // The reasoning that led to these calls opens their group (see `Group`).
      groupOf[seq] = groupOf[seq - 1]!;
      before.push(seq);
      kinds[groupOf[seq]!] = "tool_call";
      continue;
    }
    if (kind !== undefined) {
      groupOf[seq] = members.length;
      members.push([seq]);
      kinds.push(kind);
      continue;
    }
    const answered = log.answersOf(seq);
    const target = groupOf[answered[0]!]!;
    groupOf[seq] = target;
    members[target]!.push(seq);
    // A tool message answering calls of two assistant messages fuses their groups: neither can go alone.
    let into = target;
    for (const callSeq of answered.slice(1)) into = mergeInto(into, groupOf[callSeq]!, groupOf, members);
  }
  const pending = new Set([...log.pendingCalls.values()].map((c) => c.seq));
  const groups: Group[] = [];
  const indexBySeq = new Int32Array(log.length);
  members.forEach((seqs, g) => {
    if (seqs.length === 0) return;
    seqs.sort((a, b) => a - b);
    for (const seq of seqs) indexBySeq[seq] = groups.length;
    groups.push(finishGroup(log, groups.length, kinds[g]!, seqs, pending));
  });
  return { length: log.length, groups: Object.freeze(groups), indexBySeq };
}

/** Moves the later of two groups into the earlier one and returns the index that survives. */
function mergeInto(target: number, other: number, groupOf: Int32Array, members: number[][]): number {
  if (other === target) return target;
  const [keep, gone] = target < other ? [target, other] : [other, target];
  for (const seq of members[gone]!) {
    groupOf[seq] = keep;
    members[keep]!.push(seq);
  }
  members[gone] = [];
  return keep;
}
