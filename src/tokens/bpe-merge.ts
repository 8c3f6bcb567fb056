/**
 * Byte-pair merging with tiktoken's exact semantics: repeatedly merge the adjacent pair whose concatenation
 * has the lowest rank, the leftmost pair on ties, until no adjacent pair is a token. Two equivalent
 * implementations: a scan for short pieces (tiny constants, tiktoken's own loop) and a priority queue for long
 * ones (O(n log n), where tiktoken's loop is quadratic).
 */
import type { BpeRanks } from "./bpe-ranks.js";
import { CandidateQueue } from "./candidate-queue.js";
import { NO_MERGE } from "./pair-rank-memo.js";

/** What the merge loops need from a vocabulary. */
export type MergeVocab = Pick<BpeRanks, "size" | "tokenLength" | "byteRanks" | "pairs">;

/** Pieces up to this many bytes use the scan; longer ones the queue. */
export const SCAN_MAX_BYTES = 32;

/**
 * Number of BPE tokens of `bytes` (a binary string); appends the token ids to `out` when given. Callers apply
 * tiktoken's shortcut (a piece that is itself a token is one token) before calling this.
 */
export function bpeMerge(bytes: string, vocab: MergeVocab, out?: number[]): number {
  return bytes.length <= SCAN_MAX_BYTES ? bpeMergeScan(bytes, vocab, out) : bpeMergeQueue(bytes, vocab, out);
}

/** The scan merge: pair ranks are kept per position and only the merged pair's neighbours are recomputed. */
export function bpeMergeScan(bytes: string, vocab: MergeVocab, out?: number[]): number {
  const n = bytes.length;
  if (n === 0) return 0;
  const { pairs, byteRanks } = vocab;
  // part i is the token tok[i]; pair[i] is what parts i and i+1 merge into (NO_MERGE if nothing).
  const tok: number[] = [];
  for (let i = 0; i < n; i++) tok.push(byteRanks[bytes.charCodeAt(i)]!);
  const pair: number[] = [];
  for (let i = 0; i + 1 < n; i++) pair.push(pairs.lookup(tok[i]!, tok[i + 1]!));
  for (;;) {
    let best = -1;
    for (let i = 0; i < pair.length; i++) {
      const r = pair[i]!;
      if (r !== NO_MERGE && (best < 0 || r < pair[best]!)) best = i;
    }
    if (best < 0) break;
    const merged = pair[best]!;
    tok.splice(best, 2, merged);
    pair.splice(best, 1);
    if (best < pair.length) pair[best] = pairs.lookup(merged, tok[best + 1]!);
    if (best > 0) pair[best - 1] = pairs.lookup(tok[best - 1]!, merged);
  }
  if (out !== undefined) for (const t of tok) out.push(t);
  return tok.length;
}

// Scratch buffers reused across calls; a huge piece's buffers are released afterwards so they are not retained.
const KEEP_SCRATCH = 1 << 16;
let cap = 0;
let next = new Int32Array(0);
let prev = new Int32Array(0);
let tokOf = new Int32Array(0);
const queue = new CandidateQueue();
const POS = CandidateQueue.POS;

function reserve(n: number): void {
  if (n <= cap) return;
  cap = Math.max(n, 64);
  next = new Int32Array(cap);
  prev = new Int32Array(cap);
  tokOf = new Int32Array(cap);
}

function release(): void {
  if (cap <= KEEP_SCRATCH) return;
  cap = 0;
  reserve(KEEP_SCRATCH);
  queue.shrink(KEEP_SCRATCH);
}

function candidate(vocab: MergeVocab, left: number, right: number): void {
  const r = vocab.pairs.lookup(tokOf[left]!, tokOf[right]!);
  if (r !== NO_MERGE) queue.push(r, left);
}

/**
 * The queue merge. Parts form a doubly linked list named by start offset (a merge keeps the left part and
 * absorbs the right one, so starts never change; `next` of a dead part is -2). Candidates wait in a
 * {@link CandidateQueue} ordered by (rank, start) and stale ones are skipped lazily: a candidate's rank fixes
 * its byte length, so it is current exactly when its left part is alive and the right neighbour still ends at
 * `start + length` (ends only grow, so no other state of the pair can end there).
 */
export function bpeMergeQueue(bytes: string, vocab: MergeVocab, out?: number[]): number {
  const n = bytes.length;
  if (n === 0) return 0;
  if (n >= POS) throw new RangeError(`piece of ${n} bytes is too long to merge`);
  reserve(n);
  // n-1 initial candidates, then at most two per merge; the queue grows past n if needed.
  queue.reset(n, vocab.size);
  for (let i = 0; i < n; i++) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
    tokOf[i] = vocab.byteRanks[bytes.charCodeAt(i)]!;
  }
  for (let i = 0; i + 1 < n; i++) candidate(vocab, i, i + 1);
  let parts = n;
  for (let key = queue.pop(); key >= 0; key = queue.pop()) {
    const rank = Math.floor(key / POS);
    const left = key - rank * POS;
    const right = next[left]!;
    if (right < 0) continue;
    const after = next[right]!;
    if ((after < 0 ? n : after) !== left + vocab.tokenLength(rank)) continue;
    tokOf[left] = rank;
    next[left] = after;
    next[right] = -2;
    if (after >= 0) prev[after] = left;
    parts--;
    const before = prev[left]!;
    if (before >= 0) candidate(vocab, before, left);
    if (after >= 0) candidate(vocab, left, after);
  }
  if (out !== undefined) for (let p = 0; p >= 0; p = next[p]!) out.push(tokOf[p]!);
  release();
  return parts;
}
