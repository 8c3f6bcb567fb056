import { type EncodingName, loadEncodingData } from "./encoding-data.js";
import { PairRankMemo } from "./pair-rank-memo.js";

/** A parsed BPE vocabulary: token bytes (as a binary string) → rank, plus what the merge loop needs. */
export interface BpeRanks {
  readonly encoding: EncodingName;
  /** Binary-string token bytes → rank (lower merges first). */
  readonly ranks: ReadonlyMap<string, number>;
  /** Token bytes by rank (`""` for unused ranks). */
  readonly tokens: ReadonlyArray<string>;
  /** Length in bytes of the longest token; longer byte runs need no lookup. */
  readonly maxTokenBytes: number;
  /** Rank of each single byte (every byte is a token in these encodings). */
  readonly byteRanks: Int32Array;
  /** Memoized pair → merged-token lookups, shared by every tokenizer of this encoding. */
  readonly pairs: PairRankMemo;
  /** The pre-tokenizer regex source (js-tiktoken's `pat_str`), used with the `gu` flags. */
  readonly pattern: string;
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const SEXTET = new Int8Array(128).fill(-1);
for (let i = 0; i < BASE64.length; i++) SEXTET[BASE64.charCodeAt(i)] = i;

/** Decodes standard base64 (with `=` padding) straight into a binary string, skipping any byte array. */
export function base64ToBinary(b64: string): string {
  let out = "";
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < b64.length; i++) {
    const v = SEXTET[b64.charCodeAt(i)] ?? -1;
    if (v < 0) break; // padding ends the data
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += String.fromCharCode((acc >> bits) & 0xff);
    }
  }
  return out;
}

/** The vocabulary tables parsed from js-tiktoken's compressed `bpe_ranks` text. */
export interface ParsedRanks {
  readonly ranks: Map<string, number>;
  readonly tokens: string[];
  readonly maxTokenBytes: number;
}

/** Parses js-tiktoken's compressed `bpe_ranks` text into a rank map, a rank → bytes table and the longest token. */
export function parseBpeRanks(compressed: string): ParsedRanks {
  const ranks = new Map<string, number>();
  const tokens: string[] = [];
  let maxTokenBytes = 1;
  for (const line of compressed.split("\n")) {
    if (line === "") continue;
    const fields = line.split(" ");
    const offset = Number.parseInt(fields[1] ?? "", 10);
    if (!Number.isInteger(offset)) throw new Error(`malformed bpe_ranks line starting ${line.slice(0, 40)}`);
    for (let i = 2; i < fields.length; i++) {
      const token = base64ToBinary(fields[i] ?? "");
      ranks.set(token, offset + i - 2);
      while (tokens.length < offset + i - 2) tokens.push("");
      tokens[offset + i - 2] = token;
      if (token.length > maxTokenBytes) maxTokenBytes = token.length;
    }
  }
  return { ranks, tokens, maxTokenBytes };
}

function byteRanksOf(ranks: ReadonlyMap<string, number>): Int32Array {
  const out = new Int32Array(256);
  for (let b = 0; b < 256; b++) {
    const rank = ranks.get(String.fromCharCode(b));
    if (rank === undefined) throw new Error(`vocabulary has no token for byte ${b}`);
    out[b] = rank;
  }
  return out;
}

const cache = new Map<EncodingName, BpeRanks>();

/** The parsed vocabulary of an encoding, built on first use and shared by every tokenizer in the process. */
export function loadBpeRanks(encoding: EncodingName): BpeRanks {
  const hit = cache.get(encoding);
  if (hit !== undefined) return hit;
  const data = loadEncodingData(encoding);
  const { ranks, tokens, maxTokenBytes } = parseBpeRanks(data.bpe_ranks);
  const parsed: BpeRanks = {
    encoding,
    ranks,
    tokens,
    maxTokenBytes,
    byteRanks: byteRanksOf(ranks),
    pairs: new PairRankMemo(tokens, ranks, maxTokenBytes),
    pattern: data.pat_str,
  };
  cache.set(encoding, parsed);
  return parsed;
}
