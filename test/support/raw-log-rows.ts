// Rewriting a thread's stored message rows behind the store's back, as someone with write access to the database
// would: by SQL on SQLite and PostgreSQL, through the raw rows of a memory store. The ledger and replay tests use it
// to edit, delete, insert, reorder and unchain rows and check what replay finds.
import type { Message } from "../../src/log/message.js";
import { MEMORY_ROWS, type MemoryLogRows } from "../../src/stores/memory/memory-log-store.js";
import type { Stores } from "../../src/stores/stores.js";
import { rawSql } from "./store-cases-plan.js";
import type { StoreTarget } from "./store-target.js";

/** One message row as stored: every column as text, so an edit can change the bytes, not only the values. */
export interface RawLogRow {
  seq: number;
  /** The `message_id` column. */
  id: string;
  /** The message JSON. */
  body: string;
  /** The token counts JSON. */
  tokens: string;
  /** The counts the row was chained with (JSON), `null` for a row written before the chain. */
  chained: string | null;
  /** The chain hash, `null` for none. */
  hash: string | null;
}

/** Replaces the thread's message rows with `edit(rows)` (rows in seq order; the result's order does not matter). */
export async function rewriteLogRows(
  stores: Stores,
  target: StoreTarget,
  threadId: string,
  edit: (rows: RawLogRow[]) => RawLogRow[],
): Promise<void> {
  if (target.kind === "memory") {
    const raw = (stores.log as unknown as Record<symbol, (t: string) => MemoryLogRows>)[MEMORY_ROWS]!(
      threadId,
    );
    const rows = edit(
      raw.entries.map((e, seq) => ({
        seq,
        id: e.message.id,
        body: JSON.stringify(e.message),
        tokens: JSON.stringify(e.tokens),
        chained: raw.chainedTokens[seq] ?? null,
        hash: raw.chain[seq] ?? null,
      })),
    ).sort((a, b) => a.seq - b.seq);
    raw.entries.splice(
      0,
      Infinity,
      ...rows.map((r) => ({ message: JSON.parse(r.body) as Message, tokens: JSON.parse(r.tokens) })),
    );
    raw.chain.splice(0, Infinity, ...rows.map((r) => r.hash ?? ""));
    raw.chainedTokens.splice(0, Infinity, ...rows.map((r) => r.chained ?? "null"));
    return;
  }
  const before = await rawSql(
    target,
    "SELECT seq, message_id, body, tokens, chained_tokens, chain_hash FROM {messages} WHERE thread_id = ? ORDER BY seq",
    threadId,
  );
  const rows = edit(
    before.map((r) => ({
      seq: Number(r.seq),
      id: String(r.message_id),
      body: String(r.body),
      tokens: typeof r.tokens === "string" ? r.tokens : JSON.stringify(r.tokens),
      chained: (r.chained_tokens as string | null) ?? null,
      hash: (r.chain_hash as string | null) ?? null,
    })),
  );
  await rawSql(target, "DELETE FROM {messages} WHERE thread_id = ?", threadId);
  for (const r of rows) {
    await rawSql(
      target,
      `INSERT INTO {messages} (thread_id, seq, message_id, body, tokens, chained_tokens, chain_hash)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
      threadId,
      r.seq,
      r.id,
      r.body,
      r.tokens,
      r.chained,
      r.hash,
    );
  }
}
