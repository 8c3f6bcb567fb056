import { ValidationError, VersionConflictError } from "../errors/ledger-error.js";
import type { LedgerWriteOptions } from "../ledger/ledger-chain.js";
import type { LogChainRow } from "../ledger/verify-chain.js";
import { validatedOnAppend } from "../log/append-batch.js";
import { deepFreeze } from "../log/deep-freeze.js";
import type { Message } from "../log/message.js";
import { formatIssuePath, idProblem, nulProblem } from "../log/message-schema.js";
import {
  checkValue,
  isStoredMessage,
  isTokenCounts,
  parseRow,
  storedMessageSchema,
  tokenCountsSchema,
} from "./store-row-schemas.js";
import type { ThreadAccess } from "./thread-tenancy.js";

/** Token counts of one message, keyed by counter id (`MessageCounter.id`). */
export type TokenCounts = Readonly<Record<string, number>>;

/** A log message as stored: the message plus its token counts, so a worker never tokenizes it again. */
export interface StoredMessage {
  readonly message: Message;
  readonly tokens: TokenCounts;
}

/** A thread's rows as `LogStore.readWithChain` reads them: the messages and the chain rows, one of each per row. */
export interface ChainedLogRead {
  /** The messages, as `read` gives them: `entries[i].message` is the body of `chain[i]` parsed. */
  readonly entries: ReadonlyArray<StoredMessage>;
  /** The same rows as stored, as `chainRows` gives them. */
  readonly chain: ReadonlyArray<LogChainRow>;
}

/** A half-open range of seqs: `from` ≤ seq < `to`. */
export interface SeqRange {
  readonly from: number;
  readonly to: number;
}

/** New token counts for the message at `seq`; they are merged into the counts already stored. */
export interface TokenCountUpdate {
  readonly seq: number;
  readonly tokens: TokenCounts;
}

/**
 * The durable thread log. `append` is optimistic: the caller names the log length it saw (`expectedSeq`), and
 * when another writer got there first the whole batch is refused with `VersionConflictError`, so a batch is
 * either appended entirely at the expected position or not at all. Reads are by seq range (or several ranges,
 * so a stateless worker loads only what its plan renders); `seqsOf` maps plan-span ids to seqs without
 * loading message bodies. Every message handed out is frozen.
 *
 * @example
 * const log = ThreadLog.empty("t1").append([{ role: "user", parts: [{ type: "text", text: "hi" }] }]);
 * const entries = log.messages.map((message) => ({ message, tokens: { [counter.id]: counter.countMessage(message) } }));
 * await store.append("t1", 0, entries);
 * await store.read("t1", 0); // the same messages with their counts
 */
export interface LogStore {
  /**
   * Appends a batch whose first message has seq `expectedSeq`; throws `VersionConflictError` when stale. Each row
   * is chained to the one before it (the ledger, docs/decisions/0018), with `options.ledgerKey` when given.
   */
  append(
    threadId: string,
    expectedSeq: number,
    entries: ReadonlyArray<StoredMessage>,
    options?: LedgerWriteOptions,
  ): Promise<void>;
  /** Number of messages in the thread (0 for an unknown thread). */
  length(threadId: string): Promise<number>;
  /** Messages with `fromSeq` ≤ seq < `toSeq` (default: to the end), in seq order. */
  read(threadId: string, fromSeq?: number, toSeq?: number): Promise<ReadonlyArray<StoredMessage>>;
  /** Messages in any of the ranges, each once, in seq order. */
  readRanges(threadId: string, ranges: ReadonlyArray<SeqRange>): Promise<ReadonlyArray<StoredMessage>>;
  /** The seq of each known id; unknown ids are absent from the map. */
  seqsOf(threadId: string, ids: ReadonlyArray<string>): Promise<ReadonlyMap<string, number>>;
  /** Merges token counts (e.g. of a counter the thread was not appended with) into stored messages. */
  setTokenCounts(threadId: string, updates: ReadonlyArray<TokenCountUpdate>): Promise<void>;
  /**
   * The stored chain hash of the row at `seq - 1`, the log's chain head after `seq` rows (`undefined` for a row
   * without one, written before the chain, or for `seq` 0: the head there is the genesis). Optional: a store
   * without it keeps no ledger, and calls recorded on it carry no head.
   */
  chainHead?(threadId: string, seq: number): Promise<string | undefined>;
  /** The rows with seq below `toSeq` as stored, for verifying the chain (optional, with `chainHead`). */
  chainRows?(threadId: string, toSeq: number): Promise<ReadonlyArray<LogChainRow>>;
  /**
   * The rows with seq below `toSeq` read once, for an audit that checks both their content hashes and their chain:
   * what `read(threadId, 0, toSeq)` and `chainRows(threadId, toSeq)` give, from one scan that parses each body
   * once. A row that does not read throws as `read` does. Optional, with `chainRows`: a replay on a store without
   * it reads the rows twice. A store spread into a wrapper that replaces `read` or `chainRows` but keeps this
   * method is read through the replaced methods (`oneReadOf`); a wrapper that replaces this method answers for it.
   */
  readWithChain?(threadId: string, toSeq: number): Promise<ChainedLogRead>;
  /** Ids of every thread with at least one message, sorted. */
  threads(): Promise<ReadonlyArray<string>>;
  /**
   * Full-text search of the thread's messages (their text, tool-call names and arguments, tool-result content,
   * as `searchTextOf` makes words of them): the best matches of any of the query's words, best first, the later
   * message first among equals. `append` does not index: a search first indexes what the thread gained since
   * it was last indexed (as `indexForSearch`), then answers over the whole thread. An empty or whitespace query
   * is a `ValidationError`. Optional, so a store written before it still fits: the memory, SQLite and PostgreSQL
   * backends have it, and without it the engine searches the loaded log itself.
   */
  search?(threadId: string, query: string, options?: LogSearchOptions): Promise<ReadonlyArray<LogSearchHit>>;
  /**
   * Indexes the thread's messages appended since it was last indexed, up to its current length, each once
   * however many callers race. The engine calls it in the background after an append, so a search rarely has
   * anything left to index. Optional, with `search`.
   */
  indexForSearch?(threadId: string): Promise<void>;
  /**
   * The tenant this store acts for (a store of `createMemoryStores`, `openSqliteStores` or `openPostgresStores`:
   * `default` unless bound with `Stores.forTenant`). A bound store claims a thread for its tenant at the first
   * append, and every read, search or append of another tenant's thread throws `ThreadAccessError` (the thread
   * reads as denied, never as empty). Optional: a store without it keeps no tenants.
   */
  readonly tenant?: string;
  /** What the thread is to this store's tenant: its own, not yet claimed, or another tenant's (`denied`). */
  access?(threadId: string): Promise<ThreadAccess>;
}

/** The `read` and `chainRows` each store's own `readWithChain` reads like (see `pairedReads`). */
const readsOfOneRead = new WeakMap<object, Pick<LogStore, "read" | "chainRows">>();

/**
 * Marks `readWithChain` as a store's own, reading what its `read` and `chainRows` read: a backend calls it on the
 * method it hands out, so `oneReadOf` can tell when a wrapper replaced one of those two and kept this one.
 */
export function pairedReads<F extends NonNullable<LogStore["readWithChain"]>>(
  readWithChain: F,
  reads: Pick<LogStore, "read" | "chainRows">,
): F {
  readsOfOneRead.set(readWithChain, reads);
  return readWithChain;
}

/**
 * The log store's `readWithChain` when a replay may use it in place of `read` and `chainRows`: absent when the store
 * has none, or when it is a backend's own but the store's `read` or `chainRows` is not (a wrapper spread the store
 * and replaced them, e.g. to see what `read` returns): the replaced methods then say what the rows are.
 */
export function oneReadOf(log: LogStore): LogStore["readWithChain"] {
  const one = log.readWithChain;
  const paired = one === undefined ? undefined : readsOfOneRead.get(one);
  if (paired !== undefined && (paired.read !== log.read || paired.chainRows !== log.chainRows))
    return undefined;
  return one;
}

/** The conflict raised when an append names a stale log length. */
export function logConflict(threadId: string, expectedSeq: number, actual: number): VersionConflictError {
  return new VersionConflictError(
    `append to the log of thread ${JSON.stringify(threadId)} (its version is its length)`,
    expectedSeq,
    actual,
    { threadId },
  );
}

/**
 * Checks a batch before any backend writes it: a valid thread id and expected seq, messages that match the
 * schema, seqs that continue at `expectedSeq`, ids unique within the batch and well-formed token counts.
 * Throws `ValidationError` naming the batch index, message id and field; nothing has been written then.
 */
export function checkAppendBatch(
  threadId: string,
  expectedSeq: number,
  entries: ReadonlyArray<StoredMessage>,
): void {
  checkThreadId(threadId);
  checkSeq(threadId, expectedSeq, "expectedSeq");
  const ids = new Set<string>();
  entries.forEach((entry, index) => {
    const rawId = (entry?.message as { id?: unknown } | undefined)?.id;
    const source = {
      what: "appended message",
      threadId,
      index,
      ...(typeof rawId === "string" ? { messageId: rawId } : {}),
    };
    // A message the engine's log built has been validated on its way in; anything else is checked here.
    const checked = validatedOnAppend(entry?.message);
    const message = checked ? entry.message : checkValue(storedMessageSchema, entry?.message, source);
    const where = { threadId, index, messageId: message.id };
    if (!checked) {
      checkIds(message, where);
      checkMeta(message.meta, where);
    }
    if (message.seq !== expectedSeq + index) {
      throw new ValidationError(
        `message seq ${message.seq} does not continue the batch (expected ${expectedSeq + index})`,
        { ...where, field: "seq" },
      );
    }
    if (ids.has(message.id)) {
      throw new ValidationError(`duplicate message id ${JSON.stringify(message.id)} in the batch`, {
        ...where,
        field: "id",
      });
    }
    ids.add(message.id);
    checkValue(tokenCountsSchema, entry.tokens, { ...source, messageId: message.id, fieldPrefix: "tokens" });
  });
}

/**
 * The metadata rule of `ThreadLog.append` (`metaInputSchema`) for a message appended straight to a store: no NUL
 * in any string or key. Rows read back are not held to it, so a row written before the rule still reads.
 */
function checkMeta(meta: unknown, where: { threadId: string; index: number; messageId: string }): void {
  const nul = nulProblem(meta);
  if (nul !== undefined) {
    throw new ValidationError(`invalid message: ${nul.message}`, {
      ...where,
      field: formatIssuePath(["meta", ...nul.path]),
    });
  }
}

/**
 * The id rules of `idProblem` for a message appended straight to a store (the engine's log checked its own): its
 * id and its parts' call ids. Rows read back are not held to them, so a row written before the rules still reads.
 */
function checkIds(
  message: Pick<Message, "id"> & { readonly parts: ReadonlyArray<{ type: string; callId?: string }> },
  where: { threadId: string; index: number; messageId: string },
): void {
  const problem = idProblem(message.id);
  if (problem !== undefined) throw new ValidationError(`message id ${problem}`, { ...where, field: "id" });
  message.parts.forEach((part, i) => {
    if (part.type !== "tool_call" && part.type !== "tool_result") return;
    const bad = idProblem(part.callId);
    if (bad !== undefined) {
      throw new ValidationError(`call id ${bad}`, { ...where, field: `parts[${i}].callId` });
    }
  });
}

/** The error raised when a batch reuses an id the thread already holds. */
export function duplicateIdError(threadId: string, messageId: string): ValidationError {
  return new ValidationError(
    `duplicate message id ${JSON.stringify(messageId)}: the thread already holds it, ids must be unique`,
    { threadId, messageId, field: "id" },
  );
}

/** Checks token-count updates: known seqs are the backend's job, shapes are checked here. */
export function checkTokenUpdates(threadId: string, updates: ReadonlyArray<TokenCountUpdate>): void {
  checkThreadId(threadId);
  for (const update of updates) {
    checkSeq(threadId, update.seq, "seq");
    const source = { what: `token counts of seq ${update.seq}`, threadId, fieldPrefix: "tokens" };
    checkValue(tokenCountsSchema, update.tokens, source);
  }
}

/** Checks the arguments of `read`: the thread id, `fromSeq` and `toSeq` when given. */
export function checkReadArguments(threadId: string, fromSeq: number, toSeq: number | undefined): void {
  checkThreadId(threadId);
  checkSeq(threadId, fromSeq, "fromSeq");
  if (toSeq !== undefined) checkSeq(threadId, toSeq, "toSeq");
}

/**
 * Throws `ValidationError` unless the thread id is an id every backend can store (non-empty, at most
 * `MAX_ID_LENGTH` characters, no NUL): the same answer on every backend, never a database error.
 */
export function checkThreadId(threadId: string): void {
  const problem = idProblem(threadId);
  if (problem !== undefined) {
    const shown = typeof threadId === "string" ? ` ${JSON.stringify(threadId.slice(0, 80))}` : "";
    throw new ValidationError(`thread id${shown} ${problem}`, { field: "threadId" });
  }
}

/** Throws `ValidationError` unless `seq` is a non-negative integer. */
export function checkSeq(threadId: string, seq: number, field: string): void {
  if (!Number.isSafeInteger(seq) || seq < 0) {
    throw new ValidationError(`${field} must be a non-negative integer, got ${String(seq)}`, {
      threadId,
      field,
    });
  }
}

/** Sorts ranges, drops empty ones and merges overlapping or touching ones, so each seq is read once. */
export function normalizeRanges(threadId: string, ranges: ReadonlyArray<SeqRange>): ReadonlyArray<SeqRange> {
  for (const r of ranges) {
    checkSeq(threadId, r.from, "from");
    checkSeq(threadId, r.to, "to");
  }
  const sorted = ranges.filter((r) => r.to > r.from).sort((a, b) => a.from - b.from);
  const merged: SeqRange[] = [];
  for (const r of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && r.from <= last.to)
      merged[merged.length - 1] = { from: last.from, to: Math.max(last.to, r.to) };
    else merged.push(r);
  }
  return merged;
}

/** Validates a message row read back from a database and returns it frozen with its counts. */
export function storedFromRow(threadId: string, body: unknown, tokens: unknown): StoredMessage {
  const source = { what: "stored message row", threadId };
  const message = parseRow(storedMessageSchema, body, source, isStoredMessage) as Message;
  const where = { what: "token counts row", threadId, messageId: message.id };
  const counts = parseRow(tokenCountsSchema, tokens, where, isTokenCounts);
  return Object.freeze({ message: deepFreeze(message), tokens: Object.freeze(counts) });
}

/** One message a search found: where it is and how well it matched. */
export interface LogSearchHit {
  readonly seq: number;
  readonly messageId: string;
  /**
   * Higher is better. The scale is the backend's (BM25 in memory and SQLite, `ts_rank` in PostgreSQL): compare
   * scores within one answer, not across backends.
   */
  readonly score: number;
}

/** How many hits a search returns, and where it looks. */
export interface LogSearchOptions {
  /** Most hits returned (1 to 1,000; default 10). */
  readonly limit?: number;
  /** Only these seqs are searched (default: the whole thread); an empty list finds nothing. */
  readonly seqs?: ReadonlyArray<number>;
}
