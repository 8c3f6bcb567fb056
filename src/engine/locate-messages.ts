import { ValidationError } from "../errors/ledger-error.js";
import type { EngineCore } from "./engine-core.js";

/** Where some message ids sit in a thread's log, and where the log ends. */
export interface MessageLocations {
  /** How many messages the log holds (0 for a thread the stores do not know). */
  readonly length: number;
  /** The id of the log's last message (absent when the log is empty). */
  readonly lastId?: string;
  /** The seq of each asked id the log holds; an id it does not hold is absent. */
  readonly seqs: ReadonlyMap<string, number>;
}

/**
 * Which of `ids` a thread's log holds, its length and its last id: what a framework adapter reads to append
 * each message once. It reads the stores (never the in-process cache, which another process's appends may have
 * outrun) and only the rows it needs, so it costs an index lookup per id rather than `explain`'s whole log and
 * plan. A thread that was never appended to is an empty log, not an error.
 */
export async function locateMessages(
  core: EngineCore,
  threadId: string,
  ids: ReadonlyArray<string>,
): Promise<MessageLocations> {
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === "string")) {
    throw new ValidationError("locateMessages takes an array of message ids (strings)", {
      threadId,
      field: "ids",
    });
  }
  const log = core.stores.log;
  const [length, seqs] = await Promise.all([
    log.length(threadId),
    ids.length === 0 ? new Map<string, number>() : log.seqsOf(threadId, ids),
  ]);
  if (length === 0) return { length, seqs };
  const [last] = await log.read(threadId, length - 1, length);
  return last === undefined ? { length, seqs } : { length, lastId: last.message.id, seqs };
}
