import {
  checkAppendBatch,
  checkSeq,
  checkThreadId,
  checkTokenUpdates,
  duplicateIdError,
  type LogStore,
  logConflict,
  normalizeRanges,
  type SeqRange,
  type StoredMessage,
  storedFromRow,
  type TokenCountUpdate,
} from "../log-store.js";
import { guarded, unknownSeqError } from "../store-errors.js";
import { column, immediateTransaction, intColumn, type SqliteDatabase } from "./sqlite-driver.js";

const END = Number.MAX_SAFE_INTEGER;

/**
 * A `LogStore` on SQLite. An append checks the thread's length and inserts the batch inside one
 * `BEGIN IMMEDIATE` transaction, so writers in other processes serialize on the database lock and a stale one
 * sees the new length and gets `VersionConflictError`; a crash mid-append leaves nothing of the batch.
 *
 * @example
 * const log = createSqliteLogStore(db); // db already migrated
 * await log.append("t1", 0, entries);
 */
export function createSqliteLogStore(db: SqliteDatabase): LogStore {
  const sql = {
    length: db.prepare("SELECT log_length AS n FROM threads WHERE thread_id = ?"),
    setLength: db.prepare(
      `INSERT INTO threads (thread_id, log_length) VALUES (?, ?)
       ON CONFLICT (thread_id) DO UPDATE SET log_length = excluded.log_length`,
    ),
    insert: db.prepare(
      "INSERT INTO messages (thread_id, seq, message_id, body, tokens) VALUES (?, ?, ?, ?, ?)",
    ),
    range: db.prepare(
      "SELECT body, tokens FROM messages WHERE thread_id = ? AND seq >= ? AND seq < ? ORDER BY seq",
    ),
    seqsOf: db.prepare(
      `SELECT message_id AS id, seq FROM messages
       WHERE thread_id = ? AND message_id IN (SELECT value FROM json_each(?))`,
    ),
    patchTokens: db.prepare(
      "UPDATE messages SET tokens = json_patch(tokens, ?) WHERE thread_id = ? AND seq = ?",
    ),
    threads: db.prepare("SELECT thread_id AS id FROM threads WHERE log_length > 0"),
  };
  const lengthOf = (threadId: string): number => {
    const row = sql.length.get(threadId);
    return row === undefined ? 0 : intColumn(row, "n");
  };
  const readRange = (threadId: string, from: number, to: number): StoredMessage[] =>
    sql.range
      .all(threadId, from, to)
      .map((row) => storedFromRow(threadId, column(row, "body"), column(row, "tokens")));
  const seqsOf = (threadId: string, ids: ReadonlyArray<string>): Map<string, number> => {
    const out = new Map<string, number>();
    for (const row of sql.seqsOf.all(threadId, JSON.stringify(ids)))
      out.set(String(column(row, "id")), intColumn(row, "seq"));
    return out;
  };

  function append(threadId: string, expectedSeq: number, batch: ReadonlyArray<StoredMessage>): void {
    checkAppendBatch(threadId, expectedSeq, batch);
    immediateTransaction(db, () => {
      const actual = lengthOf(threadId);
      if (actual !== expectedSeq) throw logConflict(threadId, expectedSeq, actual);
      const taken = seqsOf(
        threadId,
        batch.map((e) => e.message.id),
      );
      const first = batch.find((e) => taken.has(e.message.id));
      if (first !== undefined) throw duplicateIdError(threadId, first.message.id);
      for (const { message, tokens } of batch) {
        sql.insert.run(threadId, message.seq, message.id, JSON.stringify(message), JSON.stringify(tokens));
      }
      if (batch.length > 0) sql.setLength.run(threadId, expectedSeq + batch.length);
    });
  }

  function setTokenCounts(threadId: string, updates: ReadonlyArray<TokenCountUpdate>): void {
    checkTokenUpdates(threadId, updates);
    immediateTransaction(db, () => {
      for (const { seq, tokens } of updates) {
        const { changes } = sql.patchTokens.run(JSON.stringify(tokens), threadId, seq);
        if (Number(changes) === 0) throw unknownSeqError(threadId, seq);
      }
    });
  }

  function read(threadId: string, fromSeq = 0, toSeq = END): ReadonlyArray<StoredMessage> {
    checkThreadId(threadId);
    checkSeq(threadId, fromSeq, "fromSeq");
    checkSeq(threadId, toSeq, "toSeq");
    return Object.freeze(readRange(threadId, fromSeq, toSeq));
  }

  function readRanges(threadId: string, ranges: ReadonlyArray<SeqRange>): ReadonlyArray<StoredMessage> {
    checkThreadId(threadId);
    const out: StoredMessage[] = [];
    for (const r of normalizeRanges(threadId, ranges)) out.push(...readRange(threadId, r.from, r.to));
    return Object.freeze(out);
  }

  const op = <T>(name: string, threadId: string | undefined, run: () => T) =>
    guarded("SQLite", name, threadId, run);
  return Object.freeze({
    append: (threadId: string, expectedSeq: number, batch: ReadonlyArray<StoredMessage>) =>
      op("append", threadId, () => append(threadId, expectedSeq, batch)),
    length: (threadId: string) =>
      op("length", threadId, () => {
        checkThreadId(threadId);
        return lengthOf(threadId);
      }),
    read: (threadId: string, fromSeq?: number, toSeq?: number) =>
      op("read", threadId, () => read(threadId, fromSeq, toSeq)),
    readRanges: (threadId: string, ranges: ReadonlyArray<SeqRange>) =>
      op("readRanges", threadId, () => readRanges(threadId, ranges)),
    seqsOf: (threadId: string, ids: ReadonlyArray<string>) =>
      op("seqsOf", threadId, () => {
        checkThreadId(threadId);
        return seqsOf(threadId, ids) as ReadonlyMap<string, number>;
      }),
    setTokenCounts: (threadId: string, updates: ReadonlyArray<TokenCountUpdate>) =>
      op("setTokenCounts", threadId, () => setTokenCounts(threadId, updates)),
    threads: () =>
      op("threads", undefined, () =>
        Object.freeze(
          sql.threads
            .all()
            .map((row) => String(column(row, "id")))
            .sort(),
        ),
      ),
  });
}
