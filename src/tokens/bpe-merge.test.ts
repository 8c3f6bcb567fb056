import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bpeMerge, bpeMergeQueue, bpeMergeScan, SCAN_MAX_BYTES } from "./bpe-merge.js";
import { type BpeRanks, loadBpeRanks } from "./bpe-ranks.js";
import type { EncodingName } from "./encoding-data.js";

/**
 * tiktoken's merge loop, written as plainly as possible: find the lowest-ranked adjacent pair (leftmost on
 * ties) by scanning every pair, merge it, repeat. Quadratic, independent of the memo and the queue.
 */
function referenceMerge(bytes: string, vocab: BpeRanks): number[] {
  const ranks = {
    get: (t: string): number | undefined => (vocab.rankOf(t) < 0 ? undefined : vocab.rankOf(t)),
  };
  const parts = [...bytes];
  for (;;) {
    let best = -1;
    let bestRank = Number.POSITIVE_INFINITY;
    for (let i = 0; i + 1 < parts.length; i++) {
      const r = ranks.get(parts[i]! + parts[i + 1]!);
      if (r !== undefined && r < bestRank) {
        bestRank = r;
        best = i;
      }
    }
    if (best < 0) break;
    parts.splice(best, 2, parts[best]! + parts[best + 1]!);
  }
  return parts.map((p) => ranks.get(p)!);
}

const binary = (s: string): string => Buffer.from(s, "utf8").toString("latin1");

/** Byte strings from small alphabets (many merges) and from arbitrary unicode. */
const bytesArb = (maxLength: number): fc.Arbitrary<string> =>
  fc.oneof(
    fc.string({ unit: fc.constantFrom("=", "-", " ", "a", "b", "\n", "\t", "0"), maxLength }),
    fc.string({ unit: fc.constantFrom("a", "e", "i", "n", "t", "s", "r"), maxLength }),
    fc.string({ unit: "binary", maxLength: maxLength >> 2 }).map(binary),
    fc.uint8Array({ maxLength }).map((a) => Buffer.from(a).toString("latin1")),
  );

describe.each(["o200k_base", "cl100k_base"] as EncodingName[])("bpe merge (%s)", (encoding) => {
  const vocab = loadBpeRanks(encoding);

  it("scan and queue both equal the reference loop on random byte strings", () => {
    fc.assert(
      fc.property(bytesArb(200), (bytes) => {
        const expected = referenceMerge(bytes, vocab);
        const scan: number[] = [];
        const queue: number[] = [];
        expect(bpeMergeScan(bytes, vocab, scan)).toBe(expected.length);
        expect(bpeMergeQueue(bytes, vocab, queue)).toBe(expected.length);
        expect(scan).toEqual(expected);
        expect(queue).toEqual(expected);
      }),
      { numRuns: 400 },
    );
  });

  it("equals the reference on long runs and periodic patterns (queue path)", () => {
    for (const unit of ["=", " ", "a", "ab", "=-", "\n", "\t ", "😀", "中", "0", "é"]) {
      for (const length of [SCAN_MAX_BYTES + 1, 257, 1000, 3000]) {
        const bytes = binary(unit.repeat(Math.ceil(length / unit.length)));
        const out: number[] = [];
        expect(bpeMerge(bytes, vocab, out), `${JSON.stringify(unit)} × ${length}`).toBe(out.length);
        expect(out).toEqual(referenceMerge(bytes, vocab));
      }
    }
  });

  it("handles the empty and the one-byte piece", () => {
    expect(bpeMergeScan("", vocab)).toBe(0);
    expect(bpeMergeQueue("", vocab)).toBe(0);
    const one: number[] = [];
    expect(bpeMergeQueue("x", vocab, one)).toBe(1);
    expect(one).toEqual([vocab.rankOf("x")]);
  });
});
