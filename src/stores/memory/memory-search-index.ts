import type { SearchArguments } from "../log-search.js";
import type { LogSearchHit } from "../log-store.js";

// BM25's usual constants, as SQLite's FTS5 uses them.
const K1 = 1.2;
const B = 0.75;

/**
 * An inverted index over one thread's messages, ranked with BM25 like SQLite's FTS5: for each word, the seqs of
 * the messages holding it and how often. The log only grows, so postings only grow, in seq order, and adding a
 * message costs its own words. The memory log store keeps one per thread; the engine builds one over a loaded
 * log when a custom store has no `search`.
 *
 * @example
 * const index = new SearchIndex();
 * index.add(0, "m0", searchTextOf(message));
 * index.search({ terms: ["parser"], limit: 5, seqs: undefined }); // [{ seq: 0, messageId: "m0", score }]
 */
export class SearchIndex {
  /** Per word: flat pairs of seq and the word's count in that message. */
  readonly #postings = new Map<string, number[]>();
  readonly #lengths = new Map<number, number>();
  readonly #ids = new Map<number, string>();
  #totalLength = 0;

  /** Indexes the message at `seq` from its search text (`searchTextOf`); a message without words is skipped. */
  add(seq: number, messageId: string, text: string): void {
    if (text === "") return;
    const counts = new Map<string, number>();
    const words = text.split(" ");
    for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1);
    for (const [word, count] of counts) {
      const list = this.#postings.get(word);
      if (list === undefined) this.#postings.set(word, [seq, count]);
      else list.push(seq, count);
    }
    this.#lengths.set(seq, words.length);
    this.#ids.set(seq, messageId);
    this.#totalLength += words.length;
  }

  /** The best `limit` messages holding any of the terms, best first (ties: the later message first). */
  search({ terms, limit, seqs }: SearchArguments): ReadonlyArray<LogSearchHit> {
    const docs = this.#lengths.size;
    if (docs === 0 || terms.length === 0 || seqs?.length === 0) return [];
    const allowed = seqs === undefined ? undefined : new Set(seqs);
    const averageLength = this.#totalLength / docs;
    const scores = new Map<number, number>();
    for (const term of terms) {
      const list = this.#postings.get(term);
      if (list === undefined) continue;
      const holding = list.length / 2;
      // FTS5 floors a term found in most messages at a tiny positive weight instead of a negative one.
      const idf = Math.max(1e-6, Math.log((docs - holding + 0.5) / (holding + 0.5)));
      for (let i = 0; i < list.length; i += 2) {
        const seq = list[i]!;
        if (allowed !== undefined && !allowed.has(seq)) continue;
        const tf = list[i + 1]!;
        const norm = K1 * (1 - B + (B * this.#lengths.get(seq)!) / averageLength);
        scores.set(seq, (scores.get(seq) ?? 0) + (idf * tf * (K1 + 1)) / (tf + norm));
      }
    }
    return [...scores]
      .sort((a, b) => b[1] - a[1] || b[0] - a[0])
      .slice(0, limit)
      .map(([seq, score]) => Object.freeze({ seq, messageId: this.#ids.get(seq)!, score }));
  }
}
