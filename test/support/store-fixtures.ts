import { hashMessageContent } from "../../src/log/canonical-json.js";
import { deepFreeze } from "../../src/log/deep-freeze.js";
import type { Message, Part } from "../../src/log/message.js";
import { type CompactionPlan, createPlan } from "../../src/plan/compaction-plan.js";
import type { StoredMessage } from "../../src/stores/log-store.js";

/** The counter id the fixtures store token counts under. */
export const COUNTER = "estimate:chars/4+neutral";

/** A stored user message at `seq` with a text part (and optional extra parts / meta). */
export function stored(
  seq: number,
  id: string,
  text = `message ${id}`,
  meta: Message["meta"] = {},
): StoredMessage {
  const parts: ReadonlyArray<Part> = [{ type: "text", text }];
  const message: Message = { id, seq, role: "user", parts, meta, hash: hashMessageContent("user", parts) };
  return deepFreeze({ message, tokens: { [COUNTER]: Math.ceil(text.length / 4) + 4 } });
}

/** A batch of stored messages with the given ids, starting at `seq`. */
export function batch(seq: number, ids: ReadonlyArray<string>, pad = 0): ReadonlyArray<StoredMessage> {
  return ids.map((id, i) => stored(seq + i, id, `message ${id} ${"x".repeat(pad)}`));
}

/** A plan version that drops `span`, proposed by `strategy` (so a test can tell who committed it). */
export function dropPlan(
  threadId: string,
  version: number,
  basedOnSeq: number,
  span: ReadonlyArray<string>,
  strategy: string,
): CompactionPlan {
  return createPlan({
    threadId,
    version,
    basedOnSeq,
    actions: [
      { kind: "drop", span, record: { kind: "drop", reason: "test" }, strategy, reason: `by ${strategy}` },
    ],
  });
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
