import { ValidationError } from "../errors/ledger-error.js";
import {
  chainedTokens,
  type LogLinkContent,
  logGenesis,
  logLink,
  type PlanLinkContent,
  planGenesis,
  planLink,
} from "./ledger-chain.js";

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

/**
 * The rows' bodies as the store that read them parsed them already (`LogStore.readWithChain`), so the check does
 * not parse each body again to learn the seq it says.
 */
export interface ParsedLogBodies {
  /**
   * Per row, index for index, the `seq` its body holds (`undefined` when it holds no numeric seq): exactly what
   * `JSON.parse(row.body).seq` gives when that is a number.
   */
  readonly bodySeqs: ReadonlyArray<number | undefined>;
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
 * What the generic walk needs to know about one kind of chain (log rows, plan versions). `C` is what a link covers
 * of a row, worked out once per row however many links of it the walk computes.
 */
interface ChainSpec<R, C> {
  /** The first position: seq 0, plan version 1. */
  readonly first: number;
  /** The genesis with the verifier's key, and without one (to tell a chain written without the key). */
  readonly genesis: string;
  readonly keylessGenesis: string;
  position(row: R): number;
  /** The row named in a finding: thread, seq and message id, or plan version. */
  where(row: R): string;
  /** The finding for positions `from` to `to` (inclusive) missing. */
  missing(from: number, to: number): string;
  /** The position the body of the row at `index` says it is at, when it says one. */
  bodyPosition(row: R, index: number): number | undefined;
  /** The finding for a body that says another position. */
  moved(bodyPosition: number, position: number): string;
  /** What a link covers of the row. */
  content(row: R): C;
  link(previous: string, content: C, key: string | undefined): string;
  /** "rows" or "versions", as in "although rows before it have". */
  readonly rows: string;
  /** What a broken link means was changed, e.g. "its message body, seq or token counts". */
  readonly changed: string;
  /** Any other finding about the row (a changed appended token count). */
  extra?(row: R): string | undefined;
}

/** Said with the first finding when no row verifies from the first one on: the usual cause is the key, not an edit. */
export const WRONG_KEY_HINT =
  "the chain does not verify from its first row: written with a different ledger key (or none)? set CONTEXT_LEDGER_LEDGER_KEY / the engine's ledgerKey";

/**
 * Walks a chain from its genesis, one check for both chains so they cannot drift. Each link is checked against
 * the stored hash of the row before it, so a finding names the row that changed rather than every row after it.
 */
function walkChain<R, C>(
  threadId: string,
  spec: ChainSpec<R, C>,
  rows: ReadonlyArray<R>,
  key?: string,
): ChainCheck {
  const findings = new Findings(threadId);
  const heads: string[] = [spec.genesis];
  let previousStored: string | undefined = spec.genesis;
  let chainedSeen = false;
  let unchained = 0;
  let expected = spec.first;
  // For the wrong-key hint: the first row's link finding, and whether any chained row verified.
  let firstLinkFinding: number | undefined;
  let anyVerified = false;
  rows.forEach((row, index) => {
    const position = spec.position(row);
    // Only a finding names the row: an intact chain never builds the name.
    const where = () => spec.where(row);
    if (position > expected) {
      findings.add(expected, spec.missing(expected, position - 1));
      // The recomputed heads stop at the gap: a call that saw the missing rows cannot match anything.
      while (heads.length + spec.first <= position) heads.push(`missing:${heads.length}`);
      previousStored = undefined;
    }
    expected = position + 1;
    const bodyPosition = spec.bodyPosition(row, index);
    if (bodyPosition !== undefined && bodyPosition !== position) {
      findings.add(position, `${where()} ${spec.moved(bodyPosition, position)}`);
    }
    const content = spec.content(row);
    const head = heads[heads.length - 1]!;
    const recomputed = spec.link(head, content, key);
    const stored = chainHashOf(row);
    if (stored === null) {
      unchained++;
      if (chainedSeen) {
        findings.add(
          position,
          `${where()} has no chain hash although ${spec.rows} before it have: it was removed`,
        );
      }
    } else {
      chainedSeen = true;
      // Along an intact chain the stored hash before the row is the recomputed head: the link is the same one.
      const local: string | undefined =
        previousStored === undefined
          ? undefined
          : previousStored === head
            ? recomputed
            : spec.link(previousStored, content, key);
      if (local === stored) anyVerified = true;
      else if (bodyPosition === undefined || bodyPosition === position) {
        if (position === spec.first) firstLinkFinding = findings.count;
        findings.add(position, `${where()} ${brokenLink(spec, row, content, previousStored, stored, key)}`);
      }
    }
    const extra = spec.extra?.(row);
    if (extra !== undefined) findings.add(position, `${where()} ${extra}`);
    heads.push(recomputed);
    previousStored = stored ?? recomputed;
  });
  if (firstLinkFinding !== undefined && !anyVerified) findings.amend(firstLinkFinding, `; ${WRONG_KEY_HINT}`);
  return { findings: findings.list(), heads, unchained };
}

const chainHashOf = (row: unknown): string | null => (row as { chainHash: string | null }).chainHash;

/** Why a link does not verify, in words: a changed row, or a chain written (or rewritten) without the key. */
function brokenLink<R, C>(
  spec: ChainSpec<R, C>,
  row: R,
  content: C,
  previous: string | undefined,
  stored: string,
  key: string | undefined,
): string {
  // The first row follows the genesis, which is keyed too: a keyless chain starts from the keyless genesis.
  const keylessPrevious = spec.position(row) === spec.first ? spec.keylessGenesis : previous;
  if (
    keylessPrevious !== undefined &&
    key !== undefined &&
    spec.link(keylessPrevious, content, undefined) === stored
  ) {
    return "has a chain hash computed without the ledger key: the chain was rewritten (or written) by someone without the key";
  }
  return `no longer matches its chain hash: ${spec.changed} changed after it was written, or a row before it was replaced`;
}

/**
 * Checks a thread's stored log rows (in seq order) against their chain. Each link is checked against the stored
 * hash of the row before it, so a finding names the row that changed rather than every row after it: an edited
 * row, a missing seq (a deleted row), a row whose body says another seq or whose seq moved (reordered or inserted
 * rows), changed appended token counts, a chain hash removed, and a chain recomputed without the ledger key.
 */
export function checkLogChain(
  threadId: string,
  rows: ReadonlyArray<LogChainRow>,
  key?: string,
  parsed?: ParsedLogBodies,
): ChainCheck {
  const thread = `thread ${quote(threadId)}`;
  const bodySeqs = parsed?.bodySeqs;
  if (bodySeqs !== undefined && bodySeqs.length !== rows.length) {
    throw new ValidationError(
      `checkLogChain got ${bodySeqs.length} parsed body seqs for ${rows.length} rows: give one per row, in order`,
      { threadId, field: "parsed.bodySeqs" },
    );
  }
  return walkChain(
    threadId,
    {
      first: 0,
      genesis: logGenesis(threadId, key),
      keylessGenesis: logGenesis(threadId),
      position: (row) => row.seq,
      where: (row) => `${thread} seq ${row.seq} (message ${quote(row.messageId)})`,
      missing: (from, to) =>
        `${thread}: ${from === to ? `seq ${from} is` : `seqs ${from}–${to} are`} missing from the log: rows were deleted`,
      bodyPosition: (row, index) => (bodySeqs === undefined ? seqInBody(row.body) : bodySeqs[index]),
      moved: (bodySeq, seq) =>
        `holds a message whose body says seq ${bodySeq}: ${
          bodySeq > seq
            ? "rows before it were deleted, or rows were reordered"
            : "rows were inserted before it, or rows were reordered"
        }`,
      content: (row): LogLinkContent => ({
        seq: row.seq,
        body: row.body,
        tokens: chainedTokens(row.appendedTokens ?? row.tokens),
      }),
      link: logLink,
      rows: "rows",
      changed: "its message body, seq or token counts",
      extra: (row) => {
        const id = changedTokenCount(row.appendedTokens, row.tokens);
        return id === undefined
          ? undefined
          : `has its ${quote(id)} token count changed from the one it was appended with`;
      },
    },
    rows,
    key,
  );
}

/** Checks a thread's stored plan versions (ascending) against their chain, as `checkLogChain` does the log. */
export function checkPlanChain(
  threadId: string,
  rows: ReadonlyArray<PlanChainRow>,
  key?: string,
): ChainCheck {
  const thread = `thread ${quote(threadId)}`;
  return walkChain(
    threadId,
    {
      first: 1,
      genesis: planGenesis(threadId, key),
      keylessGenesis: planGenesis(threadId),
      position: (row) => row.version,
      where: (row) => `${thread} plan version ${row.version}`,
      missing: (from, to) =>
        `${thread}: plan ${from === to ? `version ${from} is` : `versions ${from}–${to} are`} missing: rows were deleted`,
      bodyPosition: (row) => versionInBody(row.kind, row.body),
      moved: (bodyVersion) =>
        `holds a plan whose body says version ${bodyVersion}: versions were reordered or renumbered`,
      content: (row): PlanLinkContent => row,
      link: planLink,
      rows: "versions",
      changed: "its body (actions, reasons, strategies), kind or commit time",
    },
    rows,
    key,
  );
}

/** The number a stored JSON body says at `field` (a message's seq, a plan's version), if it says one. */
function numberInBody(body: string, field: "seq" | "version"): number | undefined {
  try {
    const value = (JSON.parse(body) as Record<string, unknown> | null)?.[field];
    return typeof value === "number" ? value : undefined;
  } catch {
    return undefined;
  }
}

const seqInBody = (body: string): number | undefined => numberInBody(body, "seq");

// A delta's body holds only what it adds, no version.
const versionInBody = (kind: string, body: string): number | undefined =>
  kind === "full" ? numberInBody(body, "version") : undefined;

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
  /** How many findings are named so far (the index the next one gets). */
  get count(): number {
    return this.#list.length;
  }
  /** Adds `suffix` to the text of the named finding at `index`. */
  amend(index: number, suffix: string): void {
    const finding = this.#list[index];
    if (finding !== undefined) this.#list[index] = { ...finding, text: `${finding.text}${suffix}` };
  }
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
