/**
 * The texts `recall` answers with, cut to the engine's cap: one artifact's content, or the matches of a query
 * sharing the cap so that small matches come whole and large ones are cut alike (head and tail with a marker).
 */

import type { Message, Role } from "../log/message.js";
import type { MessageFate } from "../plan/final-states.js";
import { excerptText } from "../texts/text-excerpt.js";

/** What became of a message that a query may find: anything but kept. */
export type CompactedFate = Exclude<MessageFate, "kept">;

/** A message a query found, as the model reads it. */
export interface RecallMatch {
  readonly messageId: string;
  readonly seq: number;
  readonly role: Role;
  /** What the current plan does with the message (it is out of the request, or only a stub or summary is in). */
  readonly fate: CompactedFate;
  /** The message's text, tool calls and tool results; cut in the middle when `truncated`. */
  readonly text: string;
  readonly truncated: boolean;
}

/** A found message before cutting. */
export interface FoundMessage {
  readonly message: Message;
  readonly fate: CompactedFate;
}

/** Counts the tokens of a text with the engine's counter. */
export type CountText = (text: string) => number;

/** The smallest share of the cap a cut match gets: below it, lower-ranked matches are left out instead. */
const MIN_MATCH_TOKENS = 48;

/** A message as plain text: text parts, tool calls as `name(arguments)`, tool results; not reasoning or media. */
export function recallTextOf(message: Message): string {
  const lines: string[] = [];
  for (const part of message.parts) {
    if (part.type === "text") lines.push(part.text);
    else if (part.type === "tool_call") lines.push(`${part.name}(${part.args})`);
    else if (part.type === "tool_result")
      lines.push(part.isError === true ? `[error] ${part.content}` : part.content);
  }
  return lines.join("\n");
}

/** An artifact's content within `maxTokens`: whole, or head and tail with a marker of what was left out. */
export function fitContent(content: string, maxTokens: number, count: CountText) {
  const excerpt = excerptText(content, { maxTokens, countTokens: count });
  return { content: excerpt.text, truncated: excerpt.omitted !== undefined };
}

const header = (id: string, role: Role, fate: CompactedFate) => `[message ${id} · ${role} · ${fate}]`;

function intro(query: string, shown: number, found: number): string {
  if (found === 0) return `No compacted earlier message matches ${JSON.stringify(query)}.`;
  const left = found > shown ? `; ${found - shown} more left out to stay within the size limit` : "";
  return `Earlier messages matching ${JSON.stringify(query)}, best first (${shown}${left}):`;
}

/** One result of a tool call, as the log holds it. */
export interface FoundResult {
  readonly messageId: string;
  readonly content: string;
  readonly isError: boolean;
}

const resultBody = (r: FoundResult) => (r.isError ? `[error] ${r.content}` : r.content);

/**
 * The results of one call within `maxTokens`: a single result as its content (cut to head and tail when too
 * large); several (a thread that reused the call id) each under a header line, sharing the cap by max-min
 * fairness like query matches.
 */
export function fitResults(
  callId: string,
  results: ReadonlyArray<FoundResult>,
  maxTokens: number,
  count: CountText,
) {
  if (results.length === 1) return fitContent(resultBody(results[0]!), maxTokens, count);
  const headers = results.map(
    (r, i) =>
      `[result ${i + 1} of ${results.length} for call ${JSON.stringify(callId)} · message ${r.messageId}]`,
  );
  const bodies = results.map(resultBody);
  const sizes = bodies.map(count);
  const framing = headers.reduce((n, h) => n + count(h) + 2, 0);
  for (let slack = 0; ; ) {
    const level = waterLevel(sizes, Math.max(0, maxTokens - framing - slack));
    const cut = bodies.map((body, i) =>
      sizes[i]! <= level
        ? body
        : excerptText(body, { maxTokens: level, countTokens: count, totalTokens: sizes[i]! }).text,
    );
    const content = headers.map((h, i) => `${h}\n${cut[i]}`).join("\n\n");
    const over = count(content) - maxTokens;
    // Pieces counted apart can count a few tokens more together: take them off the allowance and cut again.
    if (over > 0 && slack < maxTokens) {
      slack += over;
      continue;
    }
    return { content, truncated: sizes.some((size) => size > level) };
  }
}

/** The tool result of a query: an intro line, then each match under a header line. */
export function queryContent(query: string, matches: ReadonlyArray<RecallMatch>, found: number): string {
  const blocks = matches.map((m) => `${header(m.messageId, m.role, m.fate)}\n${m.text}`);
  return [intro(query, matches.length, found), ...blocks].join("\n\n");
}

/**
 * The largest allowance `level` with Σ min(size, level) ≤ `budget`: each text gets at most that many tokens,
 * and what the small ones do not use goes to the large ones (max-min fairness). Infinity when all fit whole.
 */
export function waterLevel(sizes: ReadonlyArray<number>, budget: number): number {
  const sorted = [...sizes].sort((a, b) => a - b);
  let remaining = budget;
  for (let i = 0; i < sorted.length; i++) {
    const share = Math.floor(remaining / (sorted.length - i));
    if (sorted[i]! > share) return Math.max(0, share);
    remaining -= sorted[i]!;
  }
  return Number.POSITIVE_INFINITY;
}

interface Candidate extends FoundMessage {
  readonly text: string;
  readonly tokens: number;
  /** Tokens of its header line and the blank line before it. */
  readonly framing: number;
}

function cut(candidate: Candidate, level: number, count: CountText): RecallMatch {
  const { message, fate, text, tokens } = candidate;
  const fits = tokens <= level;
  return {
    messageId: message.id,
    seq: message.seq,
    role: message.role,
    fate,
    text: fits ? text : excerptText(text, { maxTokens: level, countTokens: count, totalTokens: tokens }).text,
    truncated: !fits,
  };
}

/**
 * The matches of a query, best first, within `maxTokens` for the whole answer (intro and headers included):
 * every match whole when they fit; else the large ones cut to one allowance (the small ones stay whole); and when
 * that allowance would be too small to be useful, the lowest-ranked matches left out.
 */
export function fitMatches(
  query: string,
  found: ReadonlyArray<FoundMessage>,
  maxTokens: number,
  count: CountText,
) {
  const candidates = found.map((f): Candidate => {
    const text = recallTextOf(f.message);
    const framing = count(header(f.message.id, f.message.role, f.fate)) + 2;
    return { ...f, text, tokens: count(text), framing };
  });
  let shown = candidates.length;
  let slack = 0;
  for (;;) {
    const kept = candidates.slice(0, shown);
    const fixed = count(intro(query, shown, found.length)) + kept.reduce((n, c) => n + c.framing, 0);
    const level = waterLevel(
      kept.map((c) => c.tokens),
      maxTokens - fixed - slack,
    );
    if (level < MIN_MATCH_TOKENS && shown > 1) {
      shown--;
      continue;
    }
    const matches = kept.map((c) => cut(c, level, count));
    const content = queryContent(query, matches, found.length);
    const over = count(content) - maxTokens;
    // Pieces counted apart can count a few tokens more together: take them off the allowance and cut again.
    if (over > 0 && slack < maxTokens) {
      slack += over;
      continue;
    }
    const truncated = shown < found.length || matches.some((m) => m.truncated);
    return { matches, content, truncated };
  }
}
