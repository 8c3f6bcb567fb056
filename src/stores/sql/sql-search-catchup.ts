import type { Part } from "../../log/message.js";
import { searchTextOf } from "../log-search.js";
import { all, column, isNull, run, runAll, type SqlStatement, type SqlWork } from "./sql-dialect.js";

/** The search text of one stored message, for the index. */
export interface SearchDoc {
  readonly seq: number;
  /** The message's words joined by spaces (`searchTextOf`), never empty. */
  readonly text: string;
}

/**
 * A dialect's statements on the search index and on `search_progress`, the mark per thread below which every
 * message is indexed. Locking mirrors `ThreadSql`: `lock` (none on SQLite, whose write transaction holds the
 * database) then `locked`, which reads the mark so that no other catch-up of the thread gets past it meanwhile.
 */
export interface SearchSql {
  /** The thread's mark, outside a transaction: a row with `indexed_upto`, or none (nothing indexed). */
  indexed(threadId: string): SqlStatement;
  /** Statements that make the thread's progress row lockable (may be none). */
  lock(threadId: string): ReadonlyArray<SqlStatement>;
  /** The thread's mark, locked for the rest of the transaction: a row with `indexed_upto`, or none. */
  locked(threadId: string): SqlStatement;
  /** Sets the thread's mark. */
  setIndexed(threadId: string, upto: number): SqlStatement;
  /** Messages with `from` ≤ seq < `to`, in seq order: rows carry `seq` and `body`. */
  page(threadId: string, from: number, to: number): SqlStatement;
  /** Indexes the search texts of stored messages of the thread, none indexed before. */
  index(threadId: string, docs: ReadonlyArray<SearchDoc>): ReadonlyArray<SqlStatement>;
}

/** Messages read and indexed per statement round: 100,000 messages never make one giant statement. */
export const CATCH_UP_PAGE = 500;

/** The parts of a stored message body whose indexed fields are strings (the body is not validated here). */
function partsOfBody(body: unknown): ReadonlyArray<Part> {
  let parsed: unknown;
  try {
    parsed = typeof body === "string" ? JSON.parse(body) : body;
  } catch {
    return [];
  }
  const parts = (parsed as { parts?: unknown } | null)?.parts;
  if (!Array.isArray(parts)) return [];
  return parts.filter((p: Record<string, unknown> | null) => {
    if (p === null || typeof p !== "object") return false;
    if (p.type === "text") return typeof p.text === "string";
    if (p.type === "tool_call") return typeof p.name === "string" && typeof p.args === "string";
    return p.type === "tool_result" && typeof p.content === "string";
  }) as Part[];
}

/** A thread's mark from a `indexed`/`locked` row set (no row: nothing indexed). */
export function markOf(rows: ReadonlyArray<unknown>, int: (row: unknown, column: string) => number): number {
  const [row] = rows;
  return row === undefined || isNull(row, "indexed_upto") ? 0 : int(row, "indexed_upto");
}

/**
 * Brings a thread's search index up to `length` (its log length, read before): locks the thread's mark, indexes
 * the messages from the mark to `length` page by page and moves the mark, in the caller's write transaction. A
 * second catch-up of the thread waits on the lock and then finds the mark moved, so no seq is indexed twice;
 * appends lock the thread, not the mark, and go on meanwhile. Words are made by `searchTextOf`, as for a query.
 */
export function* catchUpSearch(
  sql: SearchSql,
  int: (row: unknown, column: string) => number,
  threadId: string,
  length: number,
): SqlWork<void> {
  yield* runAll(sql.lock(threadId));
  const from = markOf(yield* all(sql.locked(threadId)), int);
  if (from >= length) return;
  for (let at = from; at < length; at += CATCH_UP_PAGE) {
    const docs: SearchDoc[] = [];
    for (const row of yield* all(sql.page(threadId, at, Math.min(at + CATCH_UP_PAGE, length)))) {
      const text = searchTextOf({ parts: partsOfBody(column(row, "body")) });
      if (text !== "") docs.push({ seq: int(row, "seq"), text });
    }
    if (docs.length > 0) yield* runAll(sql.index(threadId, docs));
  }
  yield* run(sql.setIndexed(threadId, length));
}
