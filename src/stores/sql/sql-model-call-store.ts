import { checkThreadId } from "../log-store.js";
import {
  callFromRow,
  callNotFound,
  checkCallId,
  checkCallRecord,
  checkLimit,
  checkUsage,
  duplicateCallError,
  type ModelCallRecord,
  type ModelCallStore,
  type ModelUsage,
} from "../model-call-store.js";
import { column, type SqlDialect, type SqlStatement, storeOperations } from "./sql-dialect.js";

/** A call's columns as the insert binds them (record and usage as JSON, usage NULL when absent). */
export interface ModelCallColumns {
  readonly callId: string;
  readonly threadId: string;
  readonly model: string | null;
  readonly record: string;
  readonly usage: string | null;
}

/** A dialect's statements on `model_calls`; rows read carry `record` and `usage`. */
export interface ModelCallSql {
  /** Inserts a call; a call id already stored is left alone (no row changed). */
  insert(call: ModelCallColumns): SqlStatement;
  get(callId: string): SqlStatement;
  /** Sets a call's usage (JSON); no row changed for an unknown call id. */
  setUsage(callId: string, usage: string): SqlStatement;
  /** A thread's calls in recording order. */
  list(threadId: string): SqlStatement;
  /** A thread's last `limit` calls, in recording order. */
  recent(threadId: string, limit: number): SqlStatement;
  /** A model's newest `limit` calls with usage, newest first. */
  listWithUsage(model: string, limit: number): SqlStatement;
}

/**
 * The `ModelCallStore` on a SQL database: one row per call id (a unique column decides races between
 * workers), usage in its own column so it can be attached later, and an insertion counter that `list` and
 * `listWithUsage` order by.
 *
 * @example
 * const calls = createSqlModelCallStore(sqliteDialect(db), sqliteModelCallSql); // db already migrated
 * await calls.record(record);
 */
export function createSqlModelCallStore(dialect: SqlDialect, sql: ModelCallSql): ModelCallStore {
  const op = storeOperations(dialect);
  const fromRows = (rows: ReadonlyArray<unknown>): ReadonlyArray<ModelCallRecord> =>
    Object.freeze(rows.map((row) => callFromRow(column(row, "record"), column(row, "usage"))));

  async function record(input: ModelCallRecord): Promise<void> {
    const checked = checkCallRecord(input);
    const { usage, ...rest } = checked;
    const inserted = await dialect.run(
      sql.insert({
        callId: checked.callId,
        threadId: checked.threadId,
        model: checked.model ?? null,
        record: JSON.stringify(rest),
        usage: usage === undefined ? null : JSON.stringify(usage),
      }),
    );
    if (inserted === 0) throw duplicateCallError(checked);
  }

  async function setUsage(callId: string, usage: ModelUsage): Promise<void> {
    checkCallId(callId);
    const checked = checkUsage(callId, usage);
    if ((await dialect.run(sql.setUsage(callId, JSON.stringify(checked)))) === 0) throw callNotFound(callId);
  }

  return Object.freeze({
    record: (input: ModelCallRecord) => op("model call record", input?.threadId, () => record(input)),
    get: (callId: string) =>
      op("model call get", undefined, async () => {
        checkCallId(callId);
        return fromRows(await dialect.all(sql.get(callId)))[0];
      }),
    setUsage: (callId: string, usage: ModelUsage) =>
      op("model call setUsage", undefined, () => setUsage(callId, usage)),
    list: (threadId: string) =>
      op("model call list", threadId, async () => {
        checkThreadId(threadId);
        return fromRows(await dialect.all(sql.list(threadId)));
      }),
    recent: (threadId: string, limit: number) =>
      op("model call recent", threadId, async () => {
        checkThreadId(threadId);
        checkLimit(limit);
        return fromRows(await dialect.all(sql.recent(threadId, limit)));
      }),
    listWithUsage: (model: string, limit: number) =>
      op("model call listWithUsage", undefined, async () => {
        checkLimit(limit);
        return fromRows(await dialect.all(sql.listWithUsage(model, limit)));
      }),
  });
}
