import { ValidationError, VersionConflictError } from "../errors/ledger-error.js";
import { generatedId } from "../log/append-batch.js";
import type { MessageInput } from "../log/message.js";
import type { ThreadLog } from "../log/thread-log.js";
import type { StoredMessage } from "../stores/log-store.js";
import { observed, onThread } from "./compaction-steps.js";
import type { EngineCore } from "./engine-core.js";
import type { LoadedThread } from "./thread-cache.js";

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
    return onThread(core, "append", threadId, (state, attempt) => appendOnce(core, state, messages, attempt));
  });
}

async function appendOnce(
  core: EngineCore,
  state: LoadedThread,
  messages: ReadonlyArray<MessageInput>,
  attempt: number,
): Promise<AppendResult> {
  const t0 = performance.now();
  const threadId = state.log.threadId;
  const from = state.log.length;
  await core.loader.beforeAppend(state.log, batchIds(state.log, messages));
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
      const key = core.settings.ledgerKey;
      await core.stores.log.append(
        threadId,
        from,
        entries,
        key === undefined ? undefined : { ledgerKey: key },
      );
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
  core.loader.remember(threadId, { log, plan: state.plan });
  if (entries.length > 0) core.indexer.afterAppend(threadId);
  core.events.emit("appended", threadId, {
    messages: entries.length,
    logSeq: log.length,
    durationMs: performance.now() - t0,
  });
  return { threadId, fromSeq: from, logSeq: log.length, ids: entries.map((e) => e.message.id) };
}

/** The ids a batch will take: the supplied ones, and the one generated for each message without. */
function batchIds(log: ThreadLog, messages: ReadonlyArray<MessageInput>): string[] {
  return messages.map((m, i) => {
    const id = (m as { id?: unknown } | null)?.id;
    return typeof id === "string" ? id : generatedId(log.length + i);
  });
}
