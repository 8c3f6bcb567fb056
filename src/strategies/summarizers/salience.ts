/**
 * Salience: how much a line of text is worth keeping in a summary, judged by how rare its words are in the
 * thread. A word seen in one or two messages carries a fact (a name, a number, an identifier, a made-up label);
 * a word seen everywhere (code identifiers that recur, harness boilerplate repeated every turn) carries none.
 * A word the kept verbatim tail still shows needs no room in the summary, so it weighs nothing. The index is
 * pure and deterministic: the same documents always give the same weights.
 */

/** Words of a text, lowercased: runs of letters, digits and `_`, joined by inner `-` or `.` (`kx-48213`, `a.py`). */
export function wordsOf(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

const WORD = /[a-z0-9_]+(?:[-.][a-z0-9_]+)*/g;

// Function words carry no fact however rarely a short thread uses them.
const STOP = new Set(
  (
    "the and for that this with from are was were not but you your our has have had his her its they them " +
    "their there then than what when where which who whom why how all any can could would should will shall " +
    "may might must been being into onto over under about above after again also just only very some such " +
    "each other more most much many few own same both too out off now here well yes let please one two use " +
    "used using get got make made see seen need needs like want does did done doing upon within without"
  ).split(" "),
);

const NUMERIC = /^[0-9._-]+$/;
const SENTENCE_BREAK = /(?<=[.!?;:])\s+/;
const oneLine = (text: string): string => text.replace(/\s+/g, " ").trim();

/** Weights of words by their rarity in a thread; build it with {@link buildSalienceIndex}. */
export interface SalienceIndex {
  /** 1 for a word in one message (used at most twice), falling as more messages use it; 0 for stop words and words the tail shows. */
  weight(word: string): number;
  /** True when `text` (a line or sentence) is shown verbatim by the visible text: as a fact it needs no room. */
  shows(text: string): boolean;
  /**
   * No word of `documents[document]` weighs more than this, so no line or sentence cut from that text peaks
   * higher (its words are among the text's): the weight of its heaviest word used in one or two messages, or
   * {@link COMMON_CEILING} when that is more (1, the most any word weighs, for an unknown document).
   */
  ceiling(document: number): number;
}

/** The most a word used in three or more messages can weigh (see {@link SalienceIndex.weight}). */
export const COMMON_CEILING = 0.25;

/**
 * Indexes `documents` (one text per message, plus one per earlier summary) for rarity; words that occur in
 * `visible` (the text kept verbatim after the span) weigh 0.
 */
export function buildSalienceIndex(
  documents: ReadonlyArray<string>,
  visible: ReadonlyArray<string> = [],
): SalienceIndex {
  // One entry per word, found once per occurrence: a whole thread's first summary reads millions of words.
  const tallies = new Map<string, Tally>();
  documents.forEach((text, doc) => {
    for (const word of wordsOf(text)) {
      // A word under three characters weighs nothing whatever its counts.
      if (word.length < 3) continue;
      const tally = tallies.get(word);
      if (tally === undefined)
        tallies.set(word, { messages: 1, uses: 1, firstDoc: doc, lastDoc: doc, weight: UNWEIGHED });
      else {
        tally.uses++;
        if (tally.lastDoc !== doc) {
          tally.lastDoc = doc;
          tally.messages++;
        }
      }
    }
  });
  const shown = new Set<string>();
  const shownLines = new Set<string>();
  for (const text of visible) {
    for (const word of wordsOf(text)) shown.add(word);
    for (const line of text.split(/\r?\n/)) {
      shownLines.add(oneLine(line));
      for (const sentence of line.split(SENTENCE_BREAK)) shownLines.add(oneLine(sentence));
    }
  }
  const weigh = (word: string, tally: Tally | undefined): number => {
    if (word.length < 3 || STOP.has(word) || shown.has(word)) return 0;
    const d = tally?.messages ?? 1;
    const n = tally?.uses ?? 1;
    // Messages using the word: 1 → 1, 2 → 0.75, then fast decay; a word repeated within its message (an
    // identifier in a code listing) is worth less than one said once.
    const rarity = d <= 1 ? 1 : d === 2 ? 0.75 : 0.5 / (d - 1);
    const repeated = n <= 2 ? 1 : 2 / n;
    // Bare numbers are everywhere in output (line numbers, sizes, times): half weight.
    const numeric = NUMERIC.test(word) ? 0.5 : 1;
    return rarity * repeated * numeric;
  };
  const weightOf = (word: string, tally: Tally): number => {
    // Every line of the thread is weighed word by word: each word's weight is worked out once.
    if (tally.weight < 0) tally.weight = weigh(word, tally);
    return tally.weight;
  };
  let ceilings: Float64Array | undefined;
  return {
    shows: (text) => shownLines.has(oneLine(text)),
    weight(word: string): number {
      const tally = tallies.get(word);
      return tally === undefined ? weigh(word, undefined) : weightOf(word, tally);
    },
    ceiling(document: number): number {
      if (ceilings === undefined) {
        // Only a word in one or two messages weighs more than the common ceiling; its messages are known.
        ceilings = new Float64Array(documents.length).fill(COMMON_CEILING);
        const table = ceilings;
        tallies.forEach((tally, word) => {
          if (tally.messages > 2) return;
          const w = weightOf(word, tally);
          if (w > table[tally.firstDoc]!) table[tally.firstDoc] = w;
          if (w > table[tally.lastDoc]!) table[tally.lastDoc] = w;
        });
      }
      return ceilings[document] ?? 1;
    },
  };
}

/**
 * A tally's weight before it is worked out. Not an integer: a number field that first holds small integers and
 * then fractions makes V8 migrate every tally object to a new layout (half a second for 500,000 words).
 */
const UNWEIGHED = -0.5;

/** What the index knows of one word: messages using it, uses in all, and its weight once asked for. */
interface Tally {
  messages: number;
  uses: number;
  /** The first and the last document using the word (the only two when `messages` is at most 2). */
  firstDoc: number;
  lastDoc: number;
  weight: number;
}

/** A line's salience and the word that makes it salient. */
export interface LineSalience {
  /** 0 (nothing rare, or code-like) to 1 (a prose sentence carrying a thread-unique word). */
  readonly score: number;
  /** The weight of its rarest word (see {@link SalienceIndex.weight}). */
  readonly peak: number;
  /** The rarest word, for cutting a long line to the part around it. */
  readonly peakWord: string | undefined;
}

const SENTENCE = /^["'(]?[A-Z].*[.!?]["')]?$/;
// Characters that mark code, markup and structured output rather than prose.
const SYMBOLS = /[{}()[\]<>=;|\\/`"'*#$%&+@^~_:]/g;

/**
 * How worth keeping one line is: the weight of its rarest word, scaled down for code-like lines (many symbols,
 * deep indentation) and fragments, so a prose sentence with a thread-unique word beats a code line whose
 * identifiers recur.
 */
export function lineSalience(line: string, index: SalienceIndex): LineSalience {
  let peak = 0;
  let second = 0;
  let peakWord: string | undefined;
  const words = wordsOf(line);
  for (const word of words) {
    const w = index.weight(word);
    if (w > peak) {
      second = peak;
      peak = w;
      peakWord = word;
    } else if (w > second && word !== peakWord) second = w;
  }
  if (peak === 0) return { score: 0, peak: 0, peakWord: undefined };
  const trimmed = line.trim();
  const symbols = trimmed.match(SYMBOLS)?.length ?? 0;
  let prose = Math.max(0, 1 - (5 * symbols) / Math.max(1, trimmed.length));
  // A statement reads as a sentence (capital first, closing punctuation) or as `key: value`.
  if (!SENTENCE.test(trimmed)) prose *= 0.8;
  if (/^(?:\s{4,}|\t)/.test(line)) prose *= 0.7;
  if (words.length < 3) prose *= 0.5;
  const raw = Math.min(1, peak + 0.2 * second);
  return { score: raw * (0.35 + 0.65 * prose), peak, peakWord };
}
