/**
 * Which lines of a text are worth keeping when the rest goes: lines carrying words that are rare in the thread
 * (inverse document frequency over its messages), errors, test outcomes, `key: value` statements and file paths.
 * Pure: the thread's word statistics come in as a `Rarity`, so any corpus (a thread, a span, a test fixture) works.
 */

/** How rare words are in a corpus of documents (a thread's messages). Words are `wordsOf`'s normalized form. */
export interface Rarity {
  /** Number of documents. */
  readonly documents: number;
  /** Number of documents containing `word` (0 for a word never seen). */
  documentFrequency(word: string): number;
}

/** Options of `salientLines`. */
export interface SalientLineOptions {
  /** Most lines returned; default 6. */
  readonly maxLines?: number;
  /** Most tokens of the returned lines together (one line break each); default 120. */
  readonly maxTokens?: number;
  /** Counts tokens of a text; default one per 4 characters. */
  readonly countTokens?: (text: string) => number;
  /** Longer lines are cut to this many characters (an ellipsis marks the cut); default 200. */
  readonly maxLineChars?: number;
  /** Lines scoring below this are never returned; default 1.5 (a thread-rare word or an error/test pattern). */
  readonly minScore?: number;
}

/** Words common in any text that say nothing about it. Short words (under 3 characters) are skipped anyway. */
const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    "the and for with that this from are was were not but have has had you your will would can could should " +
    "into than then there their they them which what when where who whom all any each its our out use used " +
    "using also only more most some such other about after before over under true false null none self " +
    "return def class import function const let var else elif while done line file files see get set new " +
    "one two may must been being does did just like here how why yes via per"
  ).split(" "),
);

const WORD = /[\p{L}\p{N}_]+(?:[-.][\p{L}\p{N}_]+)*/gu;

/** The distinct words of a text that count for rarity: lower-cased, 3+ characters, not stop words. */
export function wordsOf(text: string): ReadonlySet<string> {
  const words = new Set<string>();
  for (const match of text.matchAll(WORD)) {
    const word = match[0].toLowerCase();
    if (word.length >= 3 && !STOP_WORDS.has(word)) words.add(word);
  }
  return words;
}

/** A `Rarity` over documents given as their word sets (see `wordsOf`). */
export function rarityOf(documents: Iterable<ReadonlySet<string>>): Rarity {
  const df = new Map<string, number>();
  let count = 0;
  for (const words of documents) {
    count++;
    for (const word of words) df.set(word, (df.get(word) ?? 0) + 1);
  }
  return { documents: count, documentFrequency: (word) => df.get(word) ?? 0 };
}

const ERROR =
  /\b(?:error|errors|exception|traceback|failed|failure|fatal|panic|denied|cannot|unable|invalid|refused|timed? ?out)\b|\bnot found\b/i;
const TEST_OUTCOME =
  /\b\d+\s+(?:passed|failed|errors?|skipped|xfailed|xpassed|tests?|warnings?|deselected)\b|\b(?:PASSED|FAILED|OK|FAIL)\b/;
const KEY_VALUE = /^[\w.-]{2,40}\s*(?::|=)\s*\S/;
const PATH = /(?:^|[\s'"(=:])(?:\.{0,2}\/)?[\w.-]+(?:\/[\w.-]+)+\.\w{1,6}\b/;
const NUMBER = /^[\d.-]+$/;

/**
 * How telling each word of a line is: inverse document frequency, with words in at most two documents counted
 * in full and common ones at a fraction; a word repeated on many lines of the same text is discounted (a rare
 * name filling every line of a listing does not make every line salient), and bare numbers count little.
 */
function wordWeight(word: string, rarity: Rarity, linesWithWord: number): number {
  const df = Math.max(1, rarity.documentFrequency(word));
  const idf = Math.log((rarity.documents + 1) / df);
  const rare = df <= 2 ? idf + 1 : idf * 0.3;
  const numeric = NUMBER.test(word) ? 0.3 : 1;
  return (rare * numeric) / Math.sqrt(linesWithWord);
}

/** The score of one line: its two most telling words, plus what its shape says (error, test outcome, …). */
function lineScore(
  line: string,
  words: ReadonlySet<string>,
  rarity: Rarity,
  spread: ReadonlyMap<string, number>,
): number {
  let best = 0;
  let second = 0;
  for (const word of words) {
    const w = wordWeight(word, rarity, spread.get(word) ?? 1);
    if (w > best) [best, second] = [w, best];
    else if (w > second) second = w;
  }
  let score = best + 0.5 * second;
  if (ERROR.test(line)) score += 2;
  if (TEST_OUTCOME.test(line)) score += 2.5;
  if (KEY_VALUE.test(line)) score += 0.5;
  if (PATH.test(line)) score += 0.5;
  return score;
}

function clip(line: string, max: number): string {
  if (line.length <= max) return line;
  let end = max - 1;
  const code = line.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return `${line.slice(0, end)}…`;
}

/**
 * The most telling lines of `text`, in their original order: each line is scored by its rarest words in the
 * corpus `rarity` describes (document frequency 1–2 counts most), plus errors, test outcomes (`3 passed, 1
 * failed`), `key: value` / `key=value` statements and file paths; lines are trimmed, cut to `maxLineChars`,
 * de-duplicated, and taken best first while they fit `maxLines` and `maxTokens`. Empty when no line scores
 * `minScore`.
 *
 * @example
 * salientLines(result.content, rarityOf(thread.map((m) => wordsOf(textOf(m)))), { maxLines: 4 });
 */
export function salientLines(
  text: string,
  rarity: Rarity,
  options: SalientLineOptions = {},
): ReadonlyArray<string> {
  const maxLines = options.maxLines ?? 6;
  const maxTokens = options.maxTokens ?? 120;
  const count = options.countTokens ?? ((t: string) => Math.ceil(t.length / 4));
  const maxChars = options.maxLineChars ?? 200;
  const candidates: Array<{ line: string; words: ReadonlySet<string>; index: number }> = [];
  const seen = new Set<string>();
  const spread = new Map<string, number>();
  for (const raw of text.split("\n")) {
    const line = clip(raw.trim(), maxChars);
    if (line === "" || seen.has(line)) continue;
    seen.add(line);
    const words = wordsOf(line);
    for (const word of words) spread.set(word, (spread.get(word) ?? 0) + 1);
    candidates.push({ line, words, index: candidates.length });
  }
  const scored = candidates
    .map((c) => ({ ...c, score: lineScore(c.line, c.words, rarity, spread) }))
    .filter((c) => c.score >= (options.minScore ?? 1.5))
    .sort((a, b) => b.score - a.score || a.index - b.index);
  const chosen: typeof scored = [];
  let tokens = 0;
  for (const c of scored) {
    if (chosen.length >= maxLines) break;
    const cost = count(c.line) + 1;
    if (tokens + cost > maxTokens) continue;
    tokens += cost;
    chosen.push(c);
  }
  return chosen.sort((a, b) => a.index - b.index).map((c) => c.line);
}
