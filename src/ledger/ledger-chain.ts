import { createHmac, hash } from "node:crypto";
import { canonicalJson } from "../log/canonical-json.js";

/**
 * The tamper-evident ledger (docs/decisions/0018): a thread's log rows form one hash chain, its plan versions a
 * second. Each link covers the row's stored content and the link before it, starting from a genesis value bound
 * to the thread id, so an edit, a deletion, an insertion or a move of any row breaks every link from there on.
 * With a key the links are HMAC-SHA-256, so someone who can rewrite every row but not read the key cannot
 * recompute a chain that verifies.
 */

/** Options of a write that extends a chain (an append, a plan commit). */
export interface LedgerWriteOptions {
  /**
   * The ledger key (HMAC-SHA-256) the thread's chains are written with; absent: plain SHA-256. Every writer and
   * verifier of a database must use the same key (docs/decisions/0018).
   */
  readonly ledgerKey?: string;
}

/** A log row as the chain covers it: its seq, the message body as stored (JSON text) and its appended counts. */
export interface LogLinkContent {
  readonly seq: number;
  /** The stored message JSON, byte for byte (id, seq, role, parts, meta, content hash). */
  readonly body: string;
  /** Canonical JSON of the token counts the message was appended with. */
  readonly tokens: string;
}

/** A plan version as the chain covers it: the stored row (`full` or `delta` body, with every reason and strategy). */
export interface PlanLinkContent {
  readonly version: number;
  readonly kind: string;
  /** The stored canonical JSON body. */
  readonly body: string;
  /** ISO time the version was committed, as stored. */
  readonly committedAt: string;
}

function digest(key: string | undefined, parts: ReadonlyArray<string>): string {
  // Fields are joined by NUL: none but the last (a body, which is JSON and so holds no raw NUL either) can hold one.
  // Hashed as one string: the same bytes as feeding the fields and separators one by one (a separator between
  // them, each field's UTF-8 is its own), in one call rather than one per field: about half the time per row.
  const text = parts.join("\0");
  if (key === undefined) return hash("sha256", text, "hex");
  return createHmac("sha256", key).update(text).digest("hex");
}

/** The value before a thread's first log row. */
export function logGenesis(threadId: string, key?: string): string {
  return digest(key, ["context-ledger log chain v1", threadId]);
}

/** The value before a thread's first plan version (what version 0, the empty plan, is chained as). */
export function planGenesis(threadId: string, key?: string): string {
  return digest(key, ["context-ledger plan chain v1", threadId]);
}

/** The chain hash of one log row after `previous`. */
export function logLink(previous: string, row: LogLinkContent, key?: string): string {
  return digest(key, [previous, String(row.seq), row.tokens, row.body]);
}

/** The chain hash of one plan version after `previous`. */
export function planLink(previous: string, row: PlanLinkContent, key?: string): string {
  return digest(key, [previous, String(row.version), row.kind, row.committedAt, row.body]);
}

/** Canonical JSON of token counts, as the chain covers them (a database may reorder a JSON object's keys). */
export function chainedTokens(tokens: unknown): string {
  return canonicalJson(tokens);
}

/**
 * Chains a batch of log rows after `previous` and returns each row's hash, in order: the incremental step of an
 * append, which never reads more of the thread than the head before it.
 */
export function chainLogRows(
  previous: string,
  rows: ReadonlyArray<LogLinkContent>,
  key?: string,
): ReadonlyArray<string> {
  const out: string[] = [];
  let head = previous;
  for (const row of rows) {
    head = logLink(head, row, key);
    out.push(head);
  }
  return out;
}
