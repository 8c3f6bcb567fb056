import type { Part } from "../../log/message.js";
import { searchTextOf } from "../log-search.js";
import { all, column, runAll, type SqlStatement, type SqlWork } from "./sql-dialect.js";

/** The search text of one stored message, for the index. */
export interface SearchDoc {
  readonly seq: number;
  /** The message's words joined by spaces (`searchTextOf`), never empty. */
  readonly text: string;
}

/** Where a backfill has got to: the key of the last message it read. */
export interface BackfillCursor {
  readonly threadId: string;
  readonly seq: number;
}

/** A dialect's statements for indexing messages stored before the search index existed. */
export interface SearchBackfillSql {
  /** Up to `size` stored messages after `after` in key order (thread, seq): rows carry `thread_id`, `seq`, `body`. */
  page(after: BackfillCursor | undefined, size: number): SqlStatement;
  /** Indexes the search texts of messages of one thread that are already stored. */
  index(threadId: string, docs: ReadonlyArray<SearchDoc>): ReadonlyArray<SqlStatement>;
}

const PAGE = 500;

/** The parts of a stored message body, keeping only those whose indexed fields are strings. */
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

/**
 * Indexes every message already stored, page by page in key order, inside the migration that creates the index
 * (a transaction body: a migration that fails leaves neither the index nor half of it). The words are made by
 * `searchTextOf`, as on append, so old and new messages are found alike. Returns how many messages it read.
 */
export function* backfillSearch(
  sql: SearchBackfillSql,
  int: (row: unknown, column: string) => number,
): SqlWork<number> {
  let after: BackfillCursor | undefined;
  let read = 0;
  for (;;) {
    const rows = yield* all(sql.page(after, PAGE));
    if (rows.length === 0) return read;
    const byThread = new Map<string, SearchDoc[]>();
    for (const row of rows) {
      const threadId = String(column(row, "thread_id"));
      const seq = int(row, "seq");
      after = { threadId, seq };
      const text = searchTextOf({ parts: partsOfBody(column(row, "body")) });
      if (text === "") continue;
      const docs = byThread.get(threadId) ?? [];
      docs.push({ seq, text });
      byThread.set(threadId, docs);
    }
    for (const [threadId, docs] of byThread) yield* runAll(sql.index(threadId, docs));
    read += rows.length;
    if (rows.length < PAGE) return read;
  }
}
