import { type EncodingName, loadEncodingData } from "./encoding-data.js";
import { PairRankMemo } from "./pair-rank-memo.js";
import { parseBpeRanks, type TokenTable } from "./token-table.js";
import { readCachedVocabulary, writeCachedVocabulary } from "./vocabulary-cache.js";

/**
 * A parsed BPE vocabulary and what the merge loop needs. Token bytes travel as binary strings (one char per
 * byte) on the way in; the vocabulary itself lives in typed arrays, so loading it is one pass over the rank
 * data with no per-token allocation (a `Map` of 200,000 strings took most of a CLI command's time).
 */
export interface BpeRanks {
  readonly encoding: EncodingName;
  /** Number of rank slots (the highest rank + 1; unused ranks have no bytes). */
  readonly size: number;
  /** Number of tokens (ranks that have bytes). */
  readonly count: number;
  /** Length in bytes of the longest token; longer byte runs need no lookup. */
  readonly maxTokenBytes: number;
  /** Rank of each single byte (every byte is a token in these encodings). */
  readonly byteRanks: Int32Array;
  /** Memoized pair → merged-token lookups, shared by every tokenizer of this encoding. */
  readonly pairs: PairRankMemo;
  /** The pre-tokenizer regex source (js-tiktoken's `pat_str`), used with the `gu` flags. */
  readonly pattern: string;
  /** The rank of the token spelled by `bytes` (a binary string), or -1. */
  rankOf(bytes: string): number;
  /** The rank of the token spelled by token `a`'s bytes then token `b`'s, or {@link NO_MERGE}. */
  rankOfPair(a: number, b: number): number;
  /** Length in bytes of the token with this rank (0 for an unused rank). */
  tokenLength(rank: number): number;
  /** The bytes of the token with this rank, as a binary string (`""` for an unused rank). */
  tokenBytes(rank: number): string;
}

function byteRanksOf(table: TokenTable): Int32Array {
  const out = new Int32Array(256);
  for (let b = 0; b < 256; b++) {
    const rank = table.rankOf(String.fromCharCode(b));
    if (rank < 0) throw new Error(`vocabulary has no token for byte ${b}`);
    out[b] = rank;
  }
  return out;
}

/** A loaded encoding: the token table plus the per-encoding parts the tokenizer needs. */
class Vocabulary implements BpeRanks {
  readonly size: number;
  readonly count: number;
  readonly maxTokenBytes: number;
  readonly byteRanks: Int32Array;
  readonly pairs: PairRankMemo;

  constructor(
    readonly encoding: EncodingName,
    private readonly table: TokenTable,
    readonly pattern: string,
  ) {
    this.size = table.size;
    this.count = table.count;
    this.maxTokenBytes = table.maxTokenBytes;
    this.byteRanks = byteRanksOf(table);
    this.pairs = new PairRankMemo(table);
  }

  rankOf(bytes: string): number {
    return this.table.rankOf(bytes);
  }

  rankOfPair(a: number, b: number): number {
    return this.table.rankOfPair(a, b);
  }

  tokenLength(rank: number): number {
    return this.table.tokenLength(rank);
  }

  tokenBytes(rank: number): string {
    return this.table.tokenBytes(rank);
  }
}

const cache = new Map<EncodingName, BpeRanks>();

/** The parsed vocabulary of an encoding, built on first use and shared by every tokenizer in the process. */
export function loadBpeRanks(encoding: EncodingName): BpeRanks {
  const hit = cache.get(encoding);
  if (hit !== undefined) return hit;
  let stored = readCachedVocabulary(encoding);
  if (stored === undefined) {
    const data = loadEncodingData(encoding);
    stored = { table: parseBpeRanks(data.bpe_ranks), pattern: data.pat_str };
    writeCachedVocabulary(encoding, stored);
  }
  const parsed = new Vocabulary(encoding, stored.table, stored.pattern);
  cache.set(encoding, parsed);
  return parsed;
}
