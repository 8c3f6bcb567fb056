import type { Message } from "./message.js";
import type { CallRef } from "./thread-log.js";

/** Kinds of atomic groups: the units compaction may remove or replace without breaking provider rules. */
export type GroupKind = "system" | "user" | "assistant_text" | "tool_call";

/**
 * An atomic group. A `tool_call` group is the assistant message holding calls (with its reasoning parts) plus
 * every tool message answering those calls, wherever they appear; parallel calls in one message form one group.
 */
export interface Group {
  readonly index: number;
  readonly kind: GroupKind;
  /** Ascending seqs of the group's messages. */
  readonly seqs: ReadonlyArray<number>;
  readonly messageIds: ReadonlyArray<string>;
  /** True when a call of the group has no result yet. */
  readonly pending: boolean;
}

/** What `computeGroups` needs of a log. */
export interface GroupSource {
  readonly length: number;
  readonly pendingCalls: ReadonlyMap<string, CallRef>;
  at(seq: number): Message | undefined;
  answersOf(seq: number): ReadonlyArray<number>;
}

function kindOf(message: Message): GroupKind {
  if (message.role === "system") return "system";
  if (message.role === "user") return "user";
  return message.parts.some((p) => p.type === "tool_call") ? "tool_call" : "assistant_text";
}

/** Computes the atomic groups of a log, ordered by their first message. */
export function computeGroups(log: GroupSource): ReadonlyArray<Group> {
  const groupOf = new Int32Array(log.length);
  const members: number[][] = [];
  const kinds: GroupKind[] = [];
  for (let seq = 0; seq < log.length; seq++) {
    const message = log.at(seq)!;
    if (message.role !== "tool") {
      groupOf[seq] = members.length;
      members.push([seq]);
      kinds.push(kindOf(message));
      continue;
    }
    const answered = log.answersOf(seq);
    const target = groupOf[answered[0]!]!;
    groupOf[seq] = target;
    members[target]!.push(seq);
    // A tool message answering calls of two assistant messages fuses their groups: neither can go alone.
    for (const callSeq of answered.slice(1)) mergeInto(target, groupOf[callSeq]!, groupOf, members);
  }
  const pendingSeqs = new Set([...log.pendingCalls.values()].map((c) => c.seq));
  const groups: Group[] = [];
  members.forEach((seqs, g) => {
    if (seqs.length === 0) return;
    seqs.sort((a, b) => a - b);
    groups.push(
      Object.freeze({
        index: groups.length,
        kind: kinds[g]!,
        seqs: Object.freeze(seqs),
        messageIds: Object.freeze(seqs.map((s) => log.at(s)!.id)),
        pending: seqs.some((s) => pendingSeqs.has(s)),
      }),
    );
  });
  return Object.freeze(groups);
}

function mergeInto(target: number, other: number, groupOf: Int32Array, members: number[][]): void {
  if (other === target) return;
  const [keep, gone] = target < other ? [target, other] : [other, target];
  for (const seq of members[gone]!) {
    groupOf[seq] = keep;
    members[keep]!.push(seq);
  }
  members[gone] = [];
}

/** Maps every seq to the index of its group. */
export function groupIndexBySeq(groups: ReadonlyArray<Group>, length: number): Int32Array {
  const out = new Int32Array(length);
  for (const group of groups) for (const seq of group.seqs) out[seq] = group.index;
  return out;
}
