import type { Group } from "./groups.js";
import type { LogView } from "./log-view.js";
import type { Message, Sensitivity } from "./message.js";

/** Sensitivity classes from the least to the most sensitive. */
const RANK: Readonly<Record<Sensitivity, number>> = Object.freeze({
  public: 0,
  internal: 1,
  confidential: 2,
  restricted: 3,
});

/** Whether a reader with `clearance` may read content of class `sensitivity` (the default clearance is `internal`). */
export function mayRead(sensitivity: Sensitivity, clearance: Sensitivity = "internal"): boolean {
  return RANK[sensitivity] <= RANK[clearance];
}

/** The class of a message: its `meta.sensitivity`, `internal` when it names none. */
export function sensitivityOfMessage(message: { readonly meta?: Message["meta"] | undefined }): Sensitivity {
  return message.meta?.sensitivity ?? "internal";
}

/** The stricter of two classes. */
export function stricterOf(a: Sensitivity, b: Sensitivity): Sensitivity {
  return RANK[a] >= RANK[b] ? a : b;
}

/**
 * The strictest class among a group's messages, a message that names none counting as `internal`: what a
 * collapse line or a pointer standing for the group (and its artifact) is classed as.
 */
export function sensitivityOfGroup(log: LogView, group: Group): Sensitivity {
  let out: Sensitivity = "public";
  for (const seq of group.seqs) out = stricterOf(out, sensitivityOfMessage(log.at(seq)!));
  return out;
}
