import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { base64ToBinary, loadBpeRanks, parseBpeRanks } from "./bpe-ranks.js";

describe("base64ToBinary", () => {
  it("decodes like Buffer for any bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        const b64 = Buffer.from(bytes).toString("base64");
        expect(base64ToBinary(b64)).toBe(Buffer.from(bytes).toString("latin1"));
      }),
    );
  });
});

describe("parseBpeRanks", () => {
  it("reads lines of `marker offset tokens…`, with gaps between lines", () => {
    const b64 = (s: string): string => Buffer.from(s, "latin1").toString("base64");
    const text = `! 0 ${b64("a")} ${b64("b")}\n! 5 ${b64("ab")} ${b64("\xff\x00")}\n`;
    const parsed = parseBpeRanks(text);
    expect([...parsed.ranks]).toEqual([
      ["a", 0],
      ["b", 1],
      ["ab", 5],
      ["\xff\x00", 6],
    ]);
    expect(parsed.tokens).toEqual(["a", "b", "", "", "", "ab", "\xff\x00"]);
    expect(parsed.maxTokenBytes).toBe(2);
  });

  it("rejects a malformed line", () => {
    expect(() => parseBpeRanks("! x YQ==")).toThrow(/malformed/);
  });
});

describe("loadBpeRanks", () => {
  it.each([
    ["o200k_base", 199_998],
    ["cl100k_base", 100_256],
  ] as const)("loads %s once, with every byte a token", (encoding, size) => {
    const vocab = loadBpeRanks(encoding);
    expect(loadBpeRanks(encoding)).toBe(vocab);
    expect(vocab.ranks.size).toBe(size);
    expect(vocab.maxTokenBytes).toBe(128);
    for (let b = 0; b < 256; b++) expect(vocab.tokens[vocab.byteRanks[b]!]).toBe(String.fromCharCode(b));
  });
});
