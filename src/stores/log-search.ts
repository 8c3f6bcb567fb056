/**
 * Full-text search over a thread's log, as every backend does it: which words of a message are indexed, how a
 * query becomes words, and the arguments a search takes. Words are made here, in one place, and handed to the
 * backends already made (SQLite's FTS5 and PostgreSQL's `tsvector` only split them on spaces again), so a query
 * matches the same messages on every backend and does not depend on a database's locale or dictionaries.
 */

import { ValidationError } from "../errors/ledger-error.js";
import type { Part } from "../log/message.js";
import { checkSeq, checkThreadId, type LogSearchOptions } from "./log-store.js";

/** The checked arguments of a search, with its words. */
export interface SearchArguments {
  /** The query's distinct words, at most `SEARCH_MAX_TERMS`; a message matches when it holds any of them. */
  readonly terms: ReadonlyArray<string>;
  readonly limit: number;
  readonly seqs: ReadonlyArray<number> | undefined;
}

/** Most distinct words of a query that are searched; the rest are ignored. */
export const SEARCH_MAX_TERMS = 32;
/**
 * Characters of a message's words that are indexed (its first words, joined by spaces). It bounds what one
 * message costs the index (PostgreSQL refuses a `tsvector` over 1 MB) and is the same on every backend.
 */
export const SEARCH_TEXT_MAX_CHARS = 100_000;
/** Longer words (encoded blobs, hashes of hashes) are not indexed: no one searches for them. */
export const SEARCH_WORD_MAX_CHARS = 100;
const LIMIT_MAX = 1_000;

const SEPARATORS = /[^\p{L}\p{N}]+/u;
const MARKS = /\p{M}+/gu;

/**
 * The words of a text as search sees them: lower-cased, accents removed (`Café` → `cafe`), split at anything
 * that is not a letter or a digit (`parse_config.ts` → `parse config ts`), overlong words left out.
 */
export function searchWords(text: string): string[] {
  const folded = text.toLowerCase().normalize("NFKD").replace(MARKS, "");
  return folded.split(SEPARATORS).filter((w) => w.length > 0 && w.length <= SEARCH_WORD_MAX_CHARS);
}

/** The searchable text of a message: its text parts, tool-call names and arguments and tool-result content. */
function indexedText(parts: ReadonlyArray<Part>): string {
  const texts: string[] = [];
  for (const part of parts) {
    if (part.type === "text") texts.push(part.text);
    else if (part.type === "tool_call") texts.push(part.name, part.args);
    else if (part.type === "tool_result") texts.push(part.content);
  }
  return texts.join("\n");
}

/**
 * What the index holds of a message: its words joined by single spaces, at most `SEARCH_TEXT_MAX_CHARS`
 * characters of them (`""` when it has none: such a message is not indexed).
 */
export function searchTextOf(message: { readonly parts: ReadonlyArray<Part> }): string {
  const words = searchWords(indexedText(message.parts));
  let chars = 0;
  let n = 0;
  for (; n < words.length; n++) {
    chars += words[n]!.length + (n === 0 ? 0 : 1);
    if (chars > SEARCH_TEXT_MAX_CHARS) break;
  }
  return words.slice(0, n).join(" ");
}

/** The distinct words of a query, in the order they first appear, at most `SEARCH_MAX_TERMS`. */
export function searchTerms(query: string): ReadonlyArray<string> {
  return [...new Set(searchWords(query))].slice(0, SEARCH_MAX_TERMS);
}

/**
 * Checks a search's arguments: a thread id, a query with something besides whitespace, a limit from 1 to 1,000
 * and seqs that are non-negative integers. A query whose words are all unsearchable (only punctuation) is valid
 * and finds nothing.
 */
export function checkSearchArguments(
  threadId: string,
  query: string,
  options: LogSearchOptions = {},
): SearchArguments {
  checkThreadId(threadId);
  if (typeof query !== "string" || query.trim() === "") {
    throw new ValidationError("a search query must be a string with something besides whitespace", {
      threadId,
      field: "query",
    });
  }
  const limit = options.limit ?? 10;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > LIMIT_MAX) {
    throw new ValidationError(`limit must be an integer from 1 to ${LIMIT_MAX}, got ${String(limit)}`, {
      threadId,
      field: "limit",
    });
  }
  if (options.seqs !== undefined) for (const seq of options.seqs) checkSeq(threadId, seq, "seqs");
  return { terms: searchTerms(query), limit, seqs: options.seqs };
}
