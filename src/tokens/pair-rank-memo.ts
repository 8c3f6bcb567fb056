/** Result of {@link PairRankMemo.lookup} when two tokens do not concatenate to a token. */
export const NO_MERGE = -1;

const EMPTY = -1;

/**
 * Memoizes "which token do tokens `a` and `b` concatenate to?" in an open-addressing table of typed arrays.
 * A pair of ranks determines the bytes exactly, so the memo is exact; it spares the merge loop building and
 * hashing a substring for every candidate pair (long runs ask the same few pairs over and over).
 */
export class PairRankMemo {
  private readonly mask: number;
  private readonly left: Int32Array;
  private readonly right: Int32Array;
  private readonly merged: Int32Array;
  private used = 0;

  /**
   * @param vocab where an unmemoized pair is looked up
   * @param capacityLog2 table size as a power of two; the table is wiped when 3/4 full
   */
  constructor(
    private readonly vocab: { rankOfPair(a: number, b: number): number },
    capacityLog2 = 17,
  ) {
    const size = 1 << capacityLog2;
    this.mask = size - 1;
    this.left = new Int32Array(size).fill(EMPTY);
    this.right = new Int32Array(size);
    this.merged = new Int32Array(size);
  }

  /** The rank of the token spelled by token `a`'s bytes then token `b`'s, or {@link NO_MERGE}. */
  lookup(a: number, b: number): number {
    let slot = (Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca6b)) & this.mask;
    for (;;) {
      const k = this.left[slot]!;
      if (k === EMPTY) break;
      if (k === a && this.right[slot] === b) return this.merged[slot]!;
      slot = (slot + 1) & this.mask;
    }
    const rank = this.vocab.rankOfPair(a, b);
    if (this.used >= (this.mask >> 2) * 3) {
      this.left.fill(EMPTY);
      this.used = 0;
      return rank; // the probe slot is stale after a wipe; the next call re-inserts
    }
    this.left[slot] = a;
    this.right[slot] = b;
    this.merged[slot] = rank;
    this.used++;
    return rank;
  }
}
