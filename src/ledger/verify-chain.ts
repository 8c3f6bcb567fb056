import { canonicalJson } from "../log/canonical-json.js";
import { logGenesis, logLink, planGenesis, planLink } from "./ledger-chain.js";

/** A log row as a store reads it back for verification: the raw stored columns, nothing parsed away. */
export interface LogChainRow {
  readonly seq: number;
  /** The `message_id` column (names the row in a finding). */
  readonly messageId: string;
  /** The stored message JSON, byte for byte. */
  readonly body: string;
  /** The token counts the row holds now (counts of other counters may have been merged in since). */
  readonly tokens: unknown;
  /** The counts the row was appended (and chained) with; `null` for a row written before the chain. */
  readonly appendedTokens: unknown;
  /** The stored chain hash; `null` for a row written before the chain and not yet backfilled. */
  readonly chainHash: string | null;
}

/** A plan version as a store reads it back for verification. */
export interface PlanChainRow {
  readonly version: number;
  readonly kind: string;
  readonly body: string;
  readonly committedAt: string;
  readonly chainHash: string | null;
}

/** One finding: where in the chain (seq or plan version) and what is wrong, in a sentence naming the row. */
export interface ChainFinding {
  readonly position: number;
  readonly text: string;
}

/**
 * A chain checked from its genesis: every finding, and per length n the head recomputed over the stored content
 * of the first n rows (`heads[0]` is the genesis), so a call rendered from n rows compares its recorded head with
 * `heads[n]`. `unchained` counts the rows without a stored chain hash (written before the chain).
 */
export interface ChainCheck {
  readonly findings: ReadonlyArray<ChainFinding>;
  readonly heads: ReadonlyArray<string>;
  readonly unchained: number;
}

/** The most rows named one by one in a check; the rest are counted in one more finding. */
const MAX_NAMED = 20;

const quote = (s: string): string => JSON.stringify(s);

/**
 * Checks a thread's stored log rows (in seq order) against their chain. Each link is checked against the stored
 * hash of the row before it, so a finding names the row that changed rather than every row after it: an edited
 * row, a missing seq (a deleted row), a row whose body says another seq or whose seq moved (reordered or inserted
 * rows), changed appended token counts, a chain hash removed, and a chain recomputed without the ledger key.
 */
export function checkLogChain(threadId: string, rows: ReadonlyArray<LogChainRow>, key?: string): ChainCheck {
  const findings = new Findings(threadId);
  const heads: string[] = [logGenesis(threadId, key)];
  let previousStored: string | undefined = heads[0];
  let chainedSeen = false;
  let unchained = 0;
  let expected = 0;
  for (const row of rows) {
    const where = `thread ${quote(threadId)} seq ${row.seq} (message ${quote(row.messageId)})`;
    if (row.seq > expected) {
      const gap = row.seq === expected + 1 ? `seq ${expected} is` : `seqs ${expected}–${row.seq - 1} are`;
      findings.add(expected, `thread ${quote(threadId)}: ${gap} missing from the log: rows were deleted`);
      // The recomputed heads stop at the gap: a call that saw the missing rows cannot match anything.
      while (heads.length <= row.seq) heads.push(`missing:${heads.length}`);
      previousStored = undefined;
    }
    expected = row.seq + 1;
    const bodySeq = seqInBody(row.body);
    if (bodySeq !== undefined && bodySeq !== row.seq) {
      findings.add(
        row.seq,
        `${where} holds a message whose body says seq ${bodySeq}: ${
          bodySeq > row.seq
            ? "rows before it were deleted, or rows were reordered"
            : "rows were inserted before it, or rows were reordered"
        }`,
      );
    }
    const appended = row.appendedTokens ?? row.tokens;
    const content = { seq: row.seq, body: row.body, tokens: canonicalJson(appended) };
    const recomputed = logLink(heads[heads.length - 1]!, content, key);
    if (row.chainHash === null) {
      unchained++;
      if (chainedSeen) {
        findings.add(row.seq, `${where} has no chain hash although rows before it have: it was removed`);
      }
    } else {
      chainedSeen = true;
      const local = previousStored === undefined ? undefined : logLink(previousStored, content, key);
      if (local !== row.chainHash && bodySeq === row.seq) {
        findings.add(row.seq, `${where} ${brokenLink(previousStored, content, row.chainHash, key, "log")}`);
      }
    }
    const changedCount = changedTokenCount(row.appendedTokens, row.tokens);
    if (changedCount !== undefined) {
      findings.add(
        row.seq,
        `${where} has its ${quote(changedCount)} token count changed from the one it was appended with`,
      );
    }
    heads.push(recomputed);
    previousStored = row.chainHash ?? recomputed;
  }
  return { findings: findings.list(), heads, unchained };
}

/** Checks a thread's stored plan versions (ascending) against their chain, as `checkLogChain` does the log. */
export function checkPlanChain(
  threadId: string,
  rows: ReadonlyArray<PlanChainRow>,
  key?: string,
): ChainCheck {
  const findings = new Findings(threadId);
  const heads: string[] = [planGenesis(threadId, key)];
  let previousStored: string | undefined = heads[0];
  let chainedSeen = false;
  let unchained = 0;
  let expected = 1;
  for (const row of rows) {
    const where = `thread ${quote(threadId)} plan version ${row.version}`;
    if (row.version > expected) {
      const gap =
        row.version === expected + 1
          ? `version ${expected} is`
          : `versions ${expected}–${row.version - 1} are`;
      findings.add(expected, `thread ${quote(threadId)}: plan ${gap} missing: rows were deleted`);
      while (heads.length <= row.version) heads.push(`missing:${heads.length}`);
      previousStored = undefined;
    }
    expected = row.version + 1;
    const bodyVersion = versionInBody(row.kind, row.body);
    if (bodyVersion !== undefined && bodyVersion !== row.version) {
      findings.add(
        row.version,
        `${where} holds a plan whose body says version ${bodyVersion}: versions were reordered or renumbered`,
      );
    }
    const content = { version: row.version, kind: row.kind, body: row.body, committedAt: row.committedAt };
    const recomputed = planLink(heads[heads.length - 1]!, content, key);
    if (row.chainHash === null) {
      unchained++;
      if (chainedSeen)
        findings.add(
          row.version,
          `${where} has no chain hash although versions before it have: it was removed`,
        );
    } else {
      chainedSeen = true;
      const local = previousStored === undefined ? undefined : planLink(previousStored, content, key);
      if (local !== row.chainHash && (bodyVersion === undefined || bodyVersion === row.version)) {
        findings.add(
          row.version,
          `${where} ${brokenLink(previousStored, content, row.chainHash, key, "plan")}`,
        );
      }
    }
    heads.push(recomputed);
    previousStored = row.chainHash ?? recomputed;
  }
  return { findings: findings.list(), heads, unchained };
}

/** Why a link does not verify, in words: a changed row, or a chain written (or rewritten) without the key. */
function brokenLink(
  previous: string | undefined,
  content: Parameters<typeof logLink>[1] | Parameters<typeof planLink>[1],
  stored: string,
  key: string | undefined,
  chain: "log" | "plan",
): string {
  const link = (prev: string, k: string | undefined) =>
    chain === "log"
      ? logLink(prev, content as Parameters<typeof logLink>[1], k)
      : planLink(prev, content as Parameters<typeof planLink>[1], k);
  if (previous !== undefined && key !== undefined && link(previous, undefined) === stored) {
    return "has a chain hash computed without the ledger key: the chain was rewritten (or written) by someone without the key";
  }
  const what =
    chain === "log"
      ? "its message body, seq or token counts"
      : "its body (actions, reasons, strategies), kind or commit time";
  return `no longer matches its chain hash: ${what} changed after it was written, or a row before it was replaced`;
}

function seqInBody(body: string): number | undefined {
  try {
    const seq = (JSON.parse(body) as { seq?: unknown } | null)?.seq;
    return typeof seq === "number" ? seq : undefined;
  } catch {
    return undefined;
  }
}

function versionInBody(kind: string, body: string): number | undefined {
  if (kind !== "full") return undefined; // a delta's body holds only what it adds
  try {
    const version = (JSON.parse(body) as { version?: unknown } | null)?.version;
    return typeof version === "number" ? version : undefined;
  } catch {
    return undefined;
  }
}

/** The first counter id whose count differs from the one the row was appended with, if any. */
function changedTokenCount(appended: unknown, now: unknown): string | undefined {
  if (appended === null || typeof appended !== "object" || now === null || typeof now !== "object")
    return undefined;
  const current = now as Record<string, unknown>;
  for (const [id, n] of Object.entries(appended as Record<string, unknown>)) if (current[id] !== n) return id;
  return undefined;
}

class Findings {
  readonly #list: ChainFinding[] = [];
  #more = 0;
  #firstMore = 0;
  constructor(readonly threadId: string) {}
  add(position: number, text: string): void {
    if (this.#list.length < MAX_NAMED) this.#list.push({ position, text });
    else if (this.#more++ === 0) this.#firstMore = position;
  }
  list(): ReadonlyArray<ChainFinding> {
    if (this.#more === 0) return this.#list;
    return [
      ...this.#list,
      {
        position: this.#firstMore,
        text: `thread ${quote(this.threadId)}: ${this.#more} more rows do not verify`,
      },
    ];
  }
}
