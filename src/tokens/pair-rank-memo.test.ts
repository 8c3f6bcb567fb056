import { describe, expect, it } from "vitest";
import { NO_MERGE, PairRankMemo } from "./pair-rank-memo.js";

describe("PairRankMemo", () => {
  const tokens = ["a", "b", "ab", "ba", "aba", "bab", "abab"];
  const ranks = new Map(tokens.map((t, i) => [t, i]));
  const vocab = {
    rankOfPair: (a: number, b: number): number => {
      const joined = tokens[a]! + tokens[b]!;
      return joined.length > 4 ? NO_MERGE : (ranks.get(joined) ?? NO_MERGE);
    },
  };

  it("answers which token two tokens concatenate to", () => {
    const memo = new PairRankMemo(vocab);
    expect(memo.lookup(0, 1)).toBe(2); // a + b = ab
    expect(memo.lookup(2, 0)).toBe(4); // ab + a = aba
    expect(memo.lookup(2, 2)).toBe(6); // ab + ab = abab
    expect(memo.lookup(0, 0)).toBe(NO_MERGE); // aa is not a token
    expect(memo.lookup(6, 0)).toBe(NO_MERGE); // longer than the longest token
  });

  it("stays correct when a tiny table fills up and is wiped, over and over", () => {
    const memo = new PairRankMemo(vocab, 2);
    for (let round = 0; round < 50; round++) {
      for (let a = 0; a < tokens.length; a++) {
        for (let b = 0; b < tokens.length; b++) {
          expect(memo.lookup(a, b)).toBe(ranks.get(tokens[a]! + tokens[b]!) ?? NO_MERGE);
        }
      }
    }
  });
});
