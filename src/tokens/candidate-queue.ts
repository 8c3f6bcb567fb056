/**
 * The priority queue of merge candidates: pops `(rank, start)` keys in increasing order, i.e. lowest rank
 * first and leftmost on ties, which is tiktoken's merge order.
 *
 * Long pieces are dominated by a few ranks repeated thousands of times (`====…`, runs of spaces), so a plain
 * heap pays a full sift for every one of them. This is a bucket queue instead: candidates of a rank above
 * the level being drained wait in that rank's bucket (O(1)); a min-heap of the distinct ranks picks the next
 * level, whose starts are sorted once. Candidates at or below the current level (merges can create them)
 * go to a small binary heap that always wins against the level when its key is smaller. Every pop is
 * therefore the global minimum; stale candidates are the caller's to skip.
 */
export class CandidateQueue {
  /** Keys pack `rank * POS + start`; starts must be below `POS`. */
  static readonly POS = 2 ** 31;

  private bucketHead = new Int32Array(0);
  private entryStart = new Int32Array(0);
  private entryLink = new Int32Array(0);
  private entries = 0;
  private rankHeap = new Int32Array(0);
  private ranks = 0;
  private urgent = new Float64Array(0);
  private urgentSize = 0;
  private level = new Int32Array(0);
  private levelLen = 0;
  private levelAt = 0;
  private current = -1;

  /** Empties the queue, sized for about `expected` pushes of ranks below `vocabSize` (it grows if needed). */
  reset(expected: number, vocabSize: number): void {
    this.dropPending();
    if (this.bucketHead.length < vocabSize) this.bucketHead = new Int32Array(vocabSize).fill(-1);
    if (this.entryStart.length < expected) {
      this.entryStart = new Int32Array(expected);
      this.entryLink = new Int32Array(expected);
    }
    this.entries = 0;
    this.ranks = 0;
    this.urgentSize = 0;
    this.levelLen = 0;
    this.levelAt = 0;
    this.current = -1;
  }

  /** Drops buffers larger than `keep` entries so one huge piece does not pin its memory. */
  shrink(keep: number): void {
    this.dropPending();
    if (this.entryStart.length > keep) {
      this.entryStart = new Int32Array(keep);
      this.entryLink = new Int32Array(keep);
    }
    if (this.level.length > keep) this.level = new Int32Array(keep);
    if (this.rankHeap.length > keep) this.rankHeap = new Int32Array(keep);
    if (this.urgent.length > keep) this.urgent = new Float64Array(keep);
  }

  /** Unlinks buckets a caller left undrained, so the shared head table is clean for the next use. */
  private dropPending(): void {
    for (let i = 0; i < this.ranks; i++) this.bucketHead[this.rankHeap[i]!] = -1;
    this.ranks = 0;
  }

  /** Adds the candidate merging into `rank` at byte offset `start`. */
  push(rank: number, start: number): void {
    if (rank <= this.current) {
      this.pushUrgent(rank * CandidateQueue.POS + start);
      return;
    }
    const head = this.bucketHead[rank]!;
    if (head < 0) this.pushRank(rank);
    if (this.entries === this.entryStart.length) {
      this.entryStart = grown(this.entryStart);
      this.entryLink = grown(this.entryLink);
    }
    const e = this.entries++;
    this.entryStart[e] = start;
    this.entryLink[e] = head;
    this.bucketHead[rank] = e;
  }

  /** The smallest key, removed from the queue, or -1 when the queue is empty. */
  pop(): number {
    for (;;) {
      if (this.levelAt < this.levelLen) {
        const key = this.current * CandidateQueue.POS + this.level[this.levelAt]!;
        if (this.urgentSize > 0 && this.urgent[0]! < key) return this.popUrgent();
        this.levelAt++;
        return key;
      }
      if (this.urgentSize > 0) return this.popUrgent();
      if (this.ranks === 0) return -1;
      this.openLevel(this.popRank());
    }
  }

  private openLevel(rank: number): void {
    this.current = rank;
    let len = 0;
    for (let e = this.bucketHead[rank]!; e >= 0; e = this.entryLink[e]!) {
      if (len === this.level.length) this.level = grown(this.level);
      this.level[len++] = this.entryStart[e]!;
    }
    this.bucketHead[rank] = -1;
    if (len > 1) sortAscending(this.level, len);
    this.levelLen = len;
    this.levelAt = 0;
  }

  private pushRank(rank: number): void {
    if (this.ranks === this.rankHeap.length) this.rankHeap = grown(this.rankHeap);
    const h = this.rankHeap;
    let i = this.ranks++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent]! <= rank) break;
      h[i] = h[parent]!;
      i = parent;
    }
    h[i] = rank;
  }

  private popRank(): number {
    const h = this.rankHeap;
    const top = h[0]!;
    const last = h[--this.ranks]!;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= this.ranks) break;
      if (c + 1 < this.ranks && h[c + 1]! < h[c]!) c++;
      if (h[c]! >= last) break;
      h[i] = h[c]!;
      i = c;
    }
    h[i] = last;
    return top;
  }

  // The same binary heap as pushRank/popRank, over Float64Array keys (rank · POS + start exceeds int32). Kept as
  // a separate copy so each heap's element accesses stay monomorphic on the tokenizer's hottest path.
  private pushUrgent(key: number): void {
    if (this.urgentSize === this.urgent.length) this.urgent = grown(this.urgent);
    const h = this.urgent;
    let i = this.urgentSize++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent]! <= key) break;
      h[i] = h[parent]!;
      i = parent;
    }
    h[i] = key;
  }

  private popUrgent(): number {
    const h = this.urgent;
    const top = h[0]!;
    const last = h[--this.urgentSize]!;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= this.urgentSize) break;
      if (c + 1 < this.urgentSize && h[c + 1]! < h[c]!) c++;
      if (h[c]! >= last) break;
      h[i] = h[c]!;
      i = c;
    }
    h[i] = last;
    return top;
  }
}

/** Sorts `a[0..len)`. Buckets are LIFO lists of mostly left-to-right pushes, so they arrive nearly descending. */
function sortAscending(a: Int32Array, len: number): void {
  if (len > 16) {
    a.subarray(0, len).reverse().sort();
    return;
  }
  for (let i = 1; i < len; i++) {
    const v = a[i]!;
    let j = i - 1;
    while (j >= 0 && a[j]! > v) {
      a[j + 1] = a[j]!;
      j--;
    }
    a[j + 1] = v;
  }
}

/** A copy of `a` with twice the room (at least 64 slots). */
function grown<T extends Int32Array | Float64Array>(a: T): T {
  const bigger = new (a.constructor as new (n: number) => T)(Math.max(64, 2 * a.length));
  bigger.set(a);
  return bigger;
}
