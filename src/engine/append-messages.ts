import { ValidationError, VersionConflictError } from "../errors/ledger-error.js";
import { generatedId } from "../log/append-batch.js";
import type { MessageInput } from "../log/message.js";
import type { ThreadLog } from "../log/thread-log.js";
import type { StoredMessage } from "../stores/log-store.js";
import {
  type LoadFallback,
  loadThread,
  observed,
  withConflictRetries,
  withFullLoadFallback,
} from "./compaction-steps.js";
import type { EngineCore } from "./engine-core.js";

/** What `append` wrote. */
export interface AppendResult {
  readonly threadId: string;
  /** Seq of the first appended message. */
  readonly fromSeq: number;
  /** The log's length after the append. */
  readonly logSeq: number;
  /** Ids of the appended messages (generated ones included), in order. */
  readonly ids: ReadonlyArray<string>;
}

/**
 * Appends messages to a thread: the batch is validated by building the new log value (a bad batch throws a
 * `ValidationError` naming the message and field, and nothing is written), each message is stored with its
 * token count by the engine's counter, and the write names the log length it extends. When another writer
 * appended first, the engine reloads and validates the batch again on top of theirs (bounded retries; ids are
 * generated from seqs, so they follow the new position).
 */
export function appendMessages(
  core: EngineCore,
  threadId: string,
  messages: ReadonlyArray<MessageInput>,
): Promise<AppendResult> {
  return observed(core, "append", threadId, async () => {
    if (!Array.isArray(messages)) {
      throw new ValidationError("append takes an array of messages", { threadId, field: "messages" });
    }
    return core.locks.run(threadId, () =>
      withConflictRetries(core, (attempt) =>
        withFullLoadFallback(core, threadId, (fallback) =>
          appendOnce(core, threadId, messages, attempt, fallback),
        ),
      ),
    );
  });
}

async function appendOnce(
  core: EngineCore,
  threadId: string,
  messages: ReadonlyArray<MessageInput>,
  attempt: number,
  fallback?: LoadFallback,
): Promise<AppendResult> {
  const t0 = performance.now();
  const state = await loadThread(core, threadId, fallback);
  const from = state.log.length;
  if (state.log.projected) await lookUpIds(core, state.log, messages);
  const log = state.log.append(messages);
  const entries: StoredMessage[] = [];
  for (let seq = from; seq < log.length; seq++) {
    const message = log.at(seq)!;
    entries.push({
      message,
      tokens: { [core.counter.id]: core.counter.countMessage(message, message.hash) },
    });
  }
  if (entries.length > 0) {
    try {
      await core.stores.log.append(threadId, from, entries);
    } catch (error) {
      if (error instanceof VersionConflictError) {
        core.events.emit("version_conflict", threadId, {
          operation: "append",
          store: "log",
          expected: error.expected,
          actual: error.actual,
          attempt,
        });
      }
      throw error;
    }
  }
  core.cache.remember(threadId, { log, plan: state.plan });
  core.events.emit("appended", threadId, {
    messages: entries.length,
    logSeq: log.length,
    durationMs: performance.now() - t0,
  });
  return { threadId, fromSeq: from, logSeq: log.length, ids: entries.map((e) => e.message.id) };
}

/**
 * A log restored from a checkpoint knows the ids of the messages it does not hold only from the checkpoint's
 * tail: ask the store about the batch's ids instead (supplied ones, and the one generated for each message
 * without), so that the append reads no tail. A generated id already taken needs the tail after all.
 */
async function lookUpIds(
  core: EngineCore,
  log: ThreadLog,
  messages: ReadonlyArray<MessageInput>,
): Promise<void> {
  const ids = messages.map((m, i) => {
    const id = (m as { id?: unknown } | null)?.id;
    return typeof id === "string" ? id : generatedId(log.length + i);
  });
  log.noteStoredIds(ids, await core.stores.log.seqsOf(log.threadId, ids));
}
