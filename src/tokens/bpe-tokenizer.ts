import { BoundedCache } from "./bounded-cache.js";
import { bpeMerge } from "./bpe-merge.js";
import { type BpeRanks, loadBpeRanks } from "./bpe-ranks.js";
import { type CountStore, countStoreFor } from "./count-store.js";
import type { EncodingName } from "./encoding-data.js";
import type { Tokenizer } from "./tokenizer.js";
import { utf8Binary } from "./utf8-binary.js";
import { vocabularyCacheDir } from "./vocabulary-cache.js";

/** A {@link Tokenizer} that can also return token ids (used to prove exactness against tiktoken). */
export interface BpeTokenizer extends Tokenizer {
  readonly encoding: EncodingName;
  /** The token ids of `text`, special-token strings encoded as ordinary text. */
  encode(text: string): number[];
}

/** Options of {@link createBpeTokenizer}. */
export interface BpeTokenizerOptions {
  /** Pre-tokenizer pieces whose counts are remembered per generation (default 50,000; 0 disables). */
  readonly cacheSize?: number;
}

/** Pieces longer than this (in UTF-16 units) are not cached: they rarely repeat and would pin memory. */
const MAX_CACHED_PIECE = 128;

/**
 * Counts one pre-tokenizer piece: tiktoken's whole-piece shortcut first, then the byte-pair merge.
 */
function countPiece(piece: string, vocab: BpeRanks): number {
  const bytes = utf8Binary(piece);
  if (bytes.length === 1 || vocab.rankOf(bytes) >= 0) return 1;
  return bpeMerge(bytes, vocab);
}

function encodePiece(piece: string, vocab: BpeRanks, out: number[]): void {
  const bytes = utf8Binary(piece);
  const whole = vocab.rankOf(bytes);
  if (whole >= 0) out.push(whole);
  else bpeMerge(bytes, vocab, out);
}

/**
 * Our own exact BPE tokenizer for `o200k_base` / `cl100k_base`: identical counts to tiktoken on every input,
 * with a per-piece count cache and an O(n log n) merge so no input is pathological. The vocabulary is parsed
 * once per process, on the first count.
 *
 * @example
 * const tokenizer = createBpeTokenizer("o200k_base");
 * tokenizer.count("hello world"); // 2
 */
export function createBpeTokenizer(encoding: EncodingName, options: BpeTokenizerOptions = {}): BpeTokenizer {
  const cache = new BoundedCache<string, number>(options.cacheSize ?? 50_000);
  let vocab: BpeRanks | undefined;
  let splitter: RegExp | undefined;
  const load = (): [BpeRanks, RegExp] => {
    vocab ??= loadBpeRanks(encoding);
    splitter ??= new RegExp(vocab.pattern, "gu");
    return [vocab, splitter];
  };
  // With a cache directory (the CLI's), whole-text counts come from and go to disk: see count-store.ts.
  let storeDir: string | undefined;
  let store: CountStore | undefined;
  const countStore = (): CountStore | undefined => {
    const dir = vocabularyCacheDir();
    if (dir !== storeDir) {
      storeDir = dir;
      store = countStoreFor(encoding);
    }
    return store;
  };
  const countText = (text: string): number => {
    const [v, re] = load();
    let total = 0;
    re.lastIndex = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      const piece = m[0];
      const hit = cache.get(piece);
      if (hit !== undefined) {
        total += hit;
        continue;
      }
      const n = countPiece(piece, v);
      if (piece.length <= MAX_CACHED_PIECE) cache.set(piece, n);
      total += n;
    }
    return total;
  };
  return {
    id: `bpe:${encoding}`,
    encoding,
    count(text: string): number {
      const stored = countStore();
      return stored === undefined ? countText(text) : stored.countOr(text, countText);
    },
    encode(text: string): number[] {
      const [v, re] = load();
      const out: number[] = [];
      for (const m of text.matchAll(re)) encodePiece(m[0], v, out);
      return out;
    },
  };
}
