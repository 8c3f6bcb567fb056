/**
 * Cutting a text that is too large to send whole: its head and its tail, with a marker in between saying what was
 * left out (and, when the full text lives in an artifact, which one). Pure and deterministic: the same text and
 * allowance always give the same excerpt, so a strategy can record it in a plan and a replay shows the same bytes.
 */

import type { MessageCounter } from "../tokens/tokenizer.js";

/** How much of a text may be sent, and how the excerpt is shaped. */
export interface ExcerptOptions {
  /** Most tokens the excerpt may count with `countTokens` (marker included). */
  readonly maxTokens?: number;
  /** Most characters the excerpt may have (marker included). */
  readonly maxChars?: number;
  /** Counts the tokens of a text; default: one token per 4 characters, rounded up. */
  readonly countTokens?: (text: string) => number;
  /** Tokens of the whole text when the caller knows them (saves counting it once). */
  readonly totalTokens?: number;
  /** Share of the kept characters taken from the head; the rest comes from the tail. Default 0.5. */
  readonly headShare?: number;
  /** The artifact holding the full text, named in the marker so the model can ask for it. */
  readonly artifactId?: string;
  /** How the model can have the whole text again (e.g. `recall callId "c1"`), said in the marker. */
  readonly wayBack?: string;
  /**
   * Picks lines of the omitted middle worth sending anyway (a strategy passes the lines with the thread's rarest
   * words, errors and paths), given the middle and about how many characters they may take together; they go
   * after the marker, closed by `[…]`. Default: none, only head and tail.
   */
  readonly keyLines?: (middle: string, maxChars: number) => ReadonlyArray<string>;
  /** Share of the kept characters offered to `keyLines` (the rest is head and tail). Default 0.25. */
  readonly keyLineShare?: number;
}

/** What was left out of a text. */
export interface Omitted {
  readonly chars: number;
  /** Line breaks in the omitted middle (whole lines, when the cut fell on line ends). */
  readonly lines: number;
  /** Tokens of the whole text minus those of the kept head and tail (absent when no count was asked for). */
  readonly tokens?: number;
}

/** An excerpt: the text to send, and what it left out (`undefined` when the text fits whole). */
export interface TextExcerpt {
  readonly text: string;
  readonly omitted?: Omitted;
}

/** The default token estimate: one token per 4 characters. */
export const estimateTokens = (text: string): number => Math.ceil(text.length / 4);

/**
 * The marker standing for the omitted middle of a text; `wayBack` says how to have it whole again, `keyLines` how
 * many of its lines follow the marker.
 */
export function omissionMarker(
  omitted: Omitted,
  artifactId?: string,
  wayBack?: string,
  keyLines = 0,
): string {
  const tokens = omitted.tokens === undefined ? "" : `, ~${omitted.tokens} tokens`;
  const where = artifactId === undefined ? "" : `; full text in artifact ${artifactId}`;
  const how = wayBack === undefined ? "" : `; ${wayBack}`;
  const kept = keyLines === 0 ? "" : `; ${keyLines} key line${keyLines === 1 ? "" : "s"} of it below`;
  return `[… ${omitted.chars} chars (${omitted.lines} lines${tokens}) omitted${where}${how}${kept} …]`;
}

/** A cut that does not split a UTF-16 surrogate pair: moves `at` back by one when it would. */
function safeCut(text: string, at: number): number {
  if (at <= 0 || at >= text.length) return Math.max(0, Math.min(at, text.length));
  const code = text.charCodeAt(at - 1);
  return code >= 0xd800 && code <= 0xdbff ? at - 1 : at;
}

/** End of a head of about `size` chars: after the last line break in its final quarter, if there is one. */
function headEnd(text: string, size: number): number {
  if (size <= 0) return 0;
  const end = safeCut(text, size);
  const newline = text.lastIndexOf("\n", end - 1);
  return newline >= 0 && newline + 1 >= end - Math.ceil(end / 4) ? newline + 1 : end;
}

/** Start of a tail of about `size` chars: after the first line break in its first quarter, if there is one. */
function tailStart(text: string, size: number, headEndsAt: number): number {
  const start = Math.max(headEndsAt, safeCut(text, text.length - size));
  const newline = text.indexOf("\n", start);
  return newline >= 0 && newline < start + Math.ceil((text.length - start) / 4) ? newline + 1 : start;
}

function countLineBreaks(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = text.indexOf("\n", from); i >= 0 && i < to; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

/** The excerpt keeping about `keep` characters of `text`: head and tail, and key lines of the middle if asked. */
function build(text: string, keep: number, o: ExcerptOptions, total: number | undefined): TextExcerpt {
  const headShare = o.headShare ?? 0.5;
  const ends = o.keyLines === undefined ? keep : Math.floor(keep * (1 - (o.keyLineShare ?? 0.25)));
  const head = headEnd(text, Math.floor(ends * headShare));
  const tail = tailStart(text, ends - head, head);
  const kept = text.slice(0, head);
  const ending = text.slice(tail);
  const count = o.countTokens ?? estimateTokens;
  const lines =
    o.keyLines !== undefined && tail > head ? o.keyLines(text.slice(head, tail), keep - ends) : [];
  const omitted: Omitted = {
    chars: tail - head,
    lines: countLineBreaks(text, head, tail),
    ...(total === undefined ? {} : { tokens: Math.max(0, total - count(kept) - count(ending)) }),
  };
  const before = kept === "" || kept.endsWith("\n") ? kept : `${kept}\n`;
  const middle = lines.length === 0 ? "" : `\n${lines.join("\n")}\n[…]`;
  const after = ending === "" ? "" : `\n${ending}`;
  const marker = omissionMarker(omitted, o.artifactId, o.wayBack, lines.length);
  return { text: `${before}${marker}${middle}${after}`, omitted };
}

/**
 * Cuts `text` to fit `maxTokens` (counted with `countTokens`) and `maxChars`: the head and the tail (cut at line
 * ends where one is near), with a marker between them saying how many characters, lines and tokens were left out
 * and, given `artifactId`, where the full text is. A text that fits comes back whole (`omitted` undefined). When
 * even the marker alone does not fit, the marker alone is returned: the caller's count decides what to do then.
 *
 * @example
 * excerptText(log, { maxTokens: 2000, countTokens: (t) => tokenizer.count(t), headShare: 0.4 }).text;
 * // "…first lines…\n[… 801234 chars (10422 lines, ~198000 tokens) omitted …]\n…last lines…"
 */
export function excerptText(text: string, options: ExcerptOptions = {}): TextExcerpt {
  const maxChars = options.maxChars ?? Number.POSITIVE_INFINITY;
  const maxTokens = options.maxTokens;
  const count = options.countTokens ?? estimateTokens;
  const total = maxTokens === undefined ? undefined : (options.totalTokens ?? count(text));
  if (text.length <= maxChars && (total === undefined || total <= maxTokens!)) return { text };
  let keep = Math.min(text.length, maxChars);
  if (maxTokens !== undefined && total! > 0)
    keep = Math.min(keep, Math.floor((maxTokens * text.length) / total!));
  let excerpt = build(text, keep, options, total);
  // Each round shrinks what is kept by the overshoot it measured; a few rounds settle it.
  for (let round = 0; round < 16; round++) {
    const overChars = excerpt.text.length - maxChars;
    const tokens = maxTokens === undefined ? 0 : count(excerpt.text);
    const overTokens = maxTokens === undefined ? 0 : tokens - maxTokens;
    if (overChars <= 0 && overTokens <= 0) return excerpt;
    if (keep === 0) return excerpt;
    const byChars = overChars > 0 ? keep - overChars : keep;
    const byTokens = overTokens > 0 ? Math.floor(keep * (maxTokens! / tokens) * 0.98) : keep;
    keep = Math.max(0, Math.min(byChars, byTokens, keep - 1));
    excerpt = build(text, keep, options, total);
  }
  return build(text, 0, options, total);
}

/**
 * Counts the tokens of a plain text with a message counter: a text message's count less an empty one's (the
 * framing), so excerpts are sized with the very tokenizer the renderer counts with.
 */
export function textTokenCounter(counter: MessageCounter): (text: string) => number {
  const framing = counter.countMessage({ role: "user", parts: [{ type: "text", text: "" }] });
  return (text) =>
    Math.max(0, counter.countMessage({ role: "user", parts: [{ type: "text", text }] }) - framing);
}
