/**
 * The token table behind a BPE vocabulary: token bytes ↔ rank in typed arrays. Loading it is one pass over the
 * rank text with no per-token allocation (a `Map` of 200,000 strings took most of a short CLI command's time).
 */
import { NO_MERGE } from "./pair-rank-memo.js";

/** The arrays a {@link TokenTable} is made of: token bytes, rank → offset, and the hash slots (`rank + 1`). */
export interface TokenTableParts {
  readonly bytes: Uint8Array;
  readonly start: Int32Array;
  readonly slots: Int32Array;
}

const SEXTET = new Int8Array(128).fill(-1);
{
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (let i = 0; i < alphabet.length; i++) SEXTET[alphabet.charCodeAt(i)] = i;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/**
 * The vocabulary tables: every token's bytes back to back in `bytes`, token `r` at `start[r]` up to
 * `start[r + 1]`, and an open-addressing table of `rank + 1` (0 = empty) keyed by an FNV-1a hash of the bytes.
 */
export class TokenTable {
  readonly size: number;
  readonly count: number;
  readonly maxTokenBytes: number;
  private readonly bytes: Uint8Array;
  private readonly start: Int32Array;
  private readonly slots: Int32Array;
  private readonly mask: number;

  /**
   * Builds the hash slots.
   *
   * @param bytes every token's bytes, back to back
   * @param start rank → offset of its bytes; one more entry than there are ranks
   * @param hashes rank → the FNV-1a hash of its bytes (computed while decoding, so the bytes are read once)
   */
  static build(bytes: Uint8Array, start: Int32Array, hashes: Int32Array): TokenTable {
    let count = 0;
    for (let r = 0; r + 1 < start.length; r++) if (start[r + 1]! > start[r]!) count++;
    let capacity = 1024;
    while (capacity < count * 2) capacity *= 2;
    const table = new TokenTable({ bytes, start, slots: new Int32Array(capacity) });
    const { slots, mask } = table;
    for (let r = 0; r < table.size; r++) {
      const from = start[r]!;
      const to = start[r + 1]!;
      if (from === to) continue;
      let slot = hashes[r]! & mask;
      for (;;) {
        const held = slots[slot]! - 1;
        if (held < 0) break;
        if (table.sameBytes(held, from, to))
          throw new Error(`bpe_ranks holds the bytes of rank ${held} twice`);
        slot = (slot + 1) & mask;
      }
      slots[slot] = r + 1;
    }
    return table;
  }

  /** A table over arrays {@link TokenTable.parts} returned earlier (a cache file): nothing is rehashed. */
  constructor(parts: TokenTableParts) {
    this.bytes = parts.bytes;
    this.start = parts.start;
    this.slots = parts.slots;
    this.mask = parts.slots.length - 1;
    this.size = parts.start.length - 1;
    let count = 0;
    let max = 1;
    for (let r = 0; r < this.size; r++) {
      const len = this.start[r + 1]! - this.start[r]!;
      if (len === 0) continue;
      count++;
      if (len > max) max = len;
    }
    this.count = count;
    this.maxTokenBytes = max;
  }

  rankOf(text: string): number {
    const n = text.length;
    if (n === 0 || n > this.maxTokenBytes) return -1;
    let h = FNV_OFFSET;
    for (let i = 0; i < n; i++) h = Math.imul(h ^ text.charCodeAt(i), FNV_PRIME);
    const { bytes, start, slots, mask } = this;
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const r = slots[slot]! - 1;
      if (r < 0) return -1;
      const from = start[r]!;
      if (start[r + 1]! - from !== n) continue;
      let i = 0;
      while (i < n && bytes[from + i] === text.charCodeAt(i)) i++;
      if (i === n) return r;
    }
  }

  rankOfPair(a: number, b: number): number {
    const { bytes, start, slots, mask } = this;
    const aFrom = start[a]!;
    const aLen = start[a + 1]! - aFrom;
    const bFrom = start[b]!;
    const bLen = start[b + 1]! - bFrom;
    const n = aLen + bLen;
    if (n > this.maxTokenBytes) return NO_MERGE;
    let h = FNV_OFFSET;
    for (let i = 0; i < aLen; i++) h = Math.imul(h ^ bytes[aFrom + i]!, FNV_PRIME);
    for (let i = 0; i < bLen; i++) h = Math.imul(h ^ bytes[bFrom + i]!, FNV_PRIME);
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const r = slots[slot]! - 1;
      if (r < 0) return NO_MERGE;
      const from = start[r]!;
      if (start[r + 1]! - from !== n) continue;
      let i = 0;
      while (i < aLen && bytes[from + i] === bytes[aFrom + i]) i++;
      if (i < aLen) continue;
      let j = 0;
      while (j < bLen && bytes[from + aLen + j] === bytes[bFrom + j]) j++;
      if (j === bLen) return r;
    }
  }

  tokenLength(rank: number): number {
    return this.start[rank + 1]! - this.start[rank]!;
  }

  /** The arrays behind the table, for a cache file. */
  parts(): TokenTableParts {
    return { bytes: this.bytes, start: this.start, slots: this.slots };
  }

  tokenBytes(rank: number): string {
    if (rank < 0 || rank >= this.size) return "";
    return String.fromCharCode(...this.bytes.subarray(this.start[rank]!, this.start[rank + 1]!));
  }

  private sameBytes(rank: number, from: number, to: number): boolean {
    const rFrom = this.start[rank]!;
    if (this.start[rank + 1]! - rFrom !== to - from) return false;
    for (let i = 0; i < to - from; i++) if (this.bytes[rFrom + i] !== this.bytes[from + i]) return false;
    return true;
  }
}

/**
 * Parses js-tiktoken's compressed `bpe_ranks` text: lines of `<marker> <first rank> <base64 token> …`, ranks
 * consecutive within a line, possibly with gaps between lines. The base64 is decoded straight into one byte
 * array.
 */
export function parseBpeRanks(compressed: string): TokenTable {
  const bytes = new Uint8Array(Math.ceil((compressed.length * 3) / 4));
  let used = 0;
  let ends: Int32Array<ArrayBuffer> = new Int32Array(1024); // ends[r] = end offset of rank r's bytes; the start is ends[r - 1]
  let hashes: Int32Array<ArrayBuffer> = new Int32Array(1024);
  let size = 0;
  let lineStart = 0;
  while (lineStart < compressed.length) {
    let lineEnd = compressed.indexOf("\n", lineStart);
    if (lineEnd < 0) lineEnd = compressed.length;
    if (lineEnd > lineStart) {
      const markerEnd = compressed.indexOf(" ", lineStart);
      const offsetEnd = markerEnd < 0 ? -1 : compressed.indexOf(" ", markerEnd + 1);
      const offsetText = compressed.slice(
        markerEnd + 1,
        offsetEnd < 0 || offsetEnd > lineEnd ? lineEnd : offsetEnd,
      );
      const offset = markerEnd < 0 || markerEnd > lineEnd ? Number.NaN : Number(offsetText);
      if (!Number.isInteger(offset) || offset < size || offsetText === "") {
        throw new Error(`malformed bpe_ranks line starting ${compressed.slice(lineStart, lineStart + 40)}`);
      }
      if (offset + 1 > ends.length) {
        ends = grown(ends, offset + 1);
        hashes = grown(hashes, offset + 1);
      }
      for (; size < offset; size++) ends[size] = used; // unused ranks between lines hold no bytes
      let i = offsetEnd < 0 || offsetEnd > lineEnd ? lineEnd : offsetEnd + 1;
      while (i < lineEnd) {
        let acc = 0;
        let bits = 0;
        let h = FNV_OFFSET;
        for (; i < lineEnd; i++) {
          const c = compressed.charCodeAt(i);
          if (c === 32) break;
          const v = c < 128 ? SEXTET[c]! : -1;
          if (v < 0) continue; // `=` padding
          acc = ((acc << 6) | v) & 0xffffff;
          bits += 6;
          if (bits >= 8) {
            bits -= 8;
            const byte = (acc >> bits) & 0xff;
            bytes[used++] = byte;
            h = Math.imul(h ^ byte, FNV_PRIME);
          }
        }
        i++; // past the space
        if (size + 1 > ends.length) {
          ends = grown(ends, size + 1);
          hashes = grown(hashes, size + 1);
        }
        hashes[size] = h;
        ends[size++] = used;
      }
    }
    lineStart = lineEnd + 1;
  }
  const start = new Int32Array(size + 1);
  for (let r = 0; r < size; r++) start[r + 1] = ends[r]!;
  return TokenTable.build(bytes.subarray(0, used), start, hashes);
}

function grown(array: Int32Array, atLeast: number): Int32Array<ArrayBuffer> {
  const out = new Int32Array(Math.max(atLeast, array.length * 2));
  out.set(array);
  return out;
}
