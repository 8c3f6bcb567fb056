import { createRequire } from "node:module";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { loadBpeRanks } from "./bpe-ranks.js";
import type { EncodingName } from "./encoding-data.js";
import { NO_MERGE } from "./pair-rank-memo.js";
import { parseBpeRanks } from "./token-table.js";

const b64 = (s: string): string => Buffer.from(s, "latin1").toString("base64");

/** The rank map built the plain way (Node's base64, a Map of strings), independent of the table under test. */
function referenceRanks(encoding: EncodingName): Map<string, number> {
  const mod = createRequire(import.meta.url)(`js-tiktoken/ranks/${encoding}`) as {
    default?: { bpe_ranks: string };
  };
  const text = (mod.default ?? (mod as unknown as { bpe_ranks: string })).bpe_ranks;
  const ranks = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const [, offset, ...tokens] = line.split(" ");
    for (const [i, t] of tokens.entries())
      ranks.set(Buffer.from(t, "base64").toString("latin1"), Number(offset) + i);
  }
  return ranks;
}

describe("parseBpeRanks", () => {
  it("reads lines of `marker offset tokens…`, with gaps between lines", () => {
    const table = parseBpeRanks(`! 0 ${b64("a")} ${b64("b")}\n! 5 ${b64("ab")} ${b64("\xff\x00")}\n`);
    expect(table.size).toBe(7);
    expect(table.count).toBe(4);
    expect(table.maxTokenBytes).toBe(2);
    expect([0, 1, 2, 5, 6].map((r) => table.tokenBytes(r))).toEqual(["a", "b", "", "ab", "\xff\x00"]);
    expect(["a", "b", "ab", "\xff\x00", "ba", "", "abc"].map((t) => table.rankOf(t))).toEqual([
      0, 1, 5, 6, -1, -1, -1,
    ]);
    expect(table.rankOfPair(0, 1)).toBe(5);
    expect(table.rankOfPair(1, 0)).toBe(NO_MERGE);
    expect(table.rankOfPair(5, 0)).toBe(NO_MERGE); // longer than the longest token
  });

  it("decodes any bytes like Node's base64, padding or not", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.uint8Array({ minLength: 1, maxLength: 12 }), {
          maxLength: 30,
          selector: (a) => b64(Buffer.from(a).toString("latin1")),
        }),
        (tokens) => {
          const texts = tokens.map((t) => Buffer.from(t).toString("latin1"));
          const table = parseBpeRanks(`! 0 ${texts.map(b64).join(" ")}`);
          texts.forEach((t, r) => {
            expect(table.tokenBytes(r)).toBe(t);
            expect(table.rankOf(t)).toBe(r);
          });
        },
      ),
    );
  });

  it("rejects a malformed line and a token listed twice", () => {
    expect(() => parseBpeRanks("! x YQ==")).toThrow(/malformed/);
    expect(() => parseBpeRanks(`! 0 ${b64("a")} ${b64("a")}`)).toThrow(/twice/);
  });
});

describe.each([
  ["o200k_base", 199_998],
  ["cl100k_base", 100_256],
] as const)("loadBpeRanks(%s)", (encoding, count) => {
  const vocab = loadBpeRanks(encoding);
  const reference = referenceRanks(encoding);

  it("loads once, with every byte a token", () => {
    expect(loadBpeRanks(encoding)).toBe(vocab);
    expect(vocab.count).toBe(count);
    expect(vocab.maxTokenBytes).toBe(128);
    for (let b = 0; b < 256; b++) expect(vocab.tokenBytes(vocab.byteRanks[b]!)).toBe(String.fromCharCode(b));
  });

  it("finds every token of the reference map at its rank, and its bytes by rank", () => {
    expect(reference.size).toBe(count);
    for (const [bytes, rank] of reference) {
      if (
        vocab.rankOf(bytes) !== rank ||
        vocab.tokenBytes(rank) !== bytes ||
        vocab.tokenLength(rank) !== bytes.length
      ) {
        expect.fail(`rank ${rank} (${JSON.stringify(bytes)}) is not in the table as the reference has it`);
      }
    }
  });

  it("answers pairs and non-tokens like the reference map", () => {
    const entries = [...reference];
    const pick = fc.integer({ min: 0, max: entries.length - 1 }).map((i) => entries[i]!);
    fc.assert(
      fc.property(pick, pick, fc.nat(), ([x, a], [y, b], cut) => {
        // Any two tokens: mostly no merge.
        const joined = x + y;
        const expected = joined.length > vocab.maxTokenBytes ? undefined : reference.get(joined);
        expect(vocab.rankOfPair(a, b)).toBe(expected ?? NO_MERGE);
        expect(vocab.rankOf(joined)).toBe(reference.get(joined) ?? -1);
        // A token split in two: a merge whenever both halves are tokens.
        if (x.length < 2) return;
        const at = 1 + (cut % (x.length - 1));
        const left = reference.get(x.slice(0, at));
        const right = reference.get(x.slice(at));
        if (left !== undefined && right !== undefined) expect(vocab.rankOfPair(left, right)).toBe(a);
      }),
      { numRuns: 3000 },
    );
  });
});
