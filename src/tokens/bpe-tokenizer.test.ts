import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createBpeTokenizer } from "./bpe-tokenizer.js";
import type { EncodingName } from "./encoding-data.js";
import { createTiktokenTokenizer } from "./tiktoken-tokenizer.js";

const SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|endofprompt|>", "<|fim_prefix|>"];

/** Text shaped like the awkward parts of agent transcripts. */
const textArb: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: "binary", maxLength: 80 }),
  fc.string({ unit: "grapheme", maxLength: 80 }),
  fc.string({
    unit: fc.constantFrom(
      " ",
      "  ",
      "\t",
      "\n",
      "\r\n",
      "\r",
      "\u00a0",
      "\u3000",
      "a",
      "Z",
      "7",
      "42",
      "'s",
      ".",
    ),
    maxLength: 120,
  }),
  fc.string({ unit: fc.constantFrom("0", "1", "9", "١", "½", ",", ".", "-", " "), maxLength: 80 }),
  fc.json(),
  fc
    .tuple(fc.string({ maxLength: 20 }), fc.constantFrom(...SPECIALS), fc.string({ maxLength: 20 }))
    .map(([a, s, b]) => a + s + b),
  fc
    .array(
      fc.constantFrom("Hello", " world", "I'm", " DON'T", "é", "😀", "👍🏽", "中文", "\n\n", "    ", "=="),
      {
        maxLength: 30,
      },
    )
    .map((words) => words.join("")),
);

describe.each(["o200k_base", "cl100k_base"] as EncodingName[])("createBpeTokenizer(%s)", (encoding) => {
  const ours = createBpeTokenizer(encoding);
  const reference = createTiktokenTokenizer(encoding);

  it("has a stable id and counts simple text", () => {
    expect(ours.id).toBe(`bpe:${encoding}`);
    expect(ours.count("")).toBe(0);
    expect(ours.count("hello world")).toBe(2);
  });

  it("produces js-tiktoken's token ids and counts on random text", () => {
    fc.assert(
      fc.property(textArb, (text) => {
        const expected = reference.encode(text);
        expect(ours.encode(text)).toEqual(expected);
        expect(ours.count(text)).toBe(expected.length);
        expect(ours.count(text)).toBe(expected.length); // the second count is served by the piece cache
      }),
      { numRuns: 1000 },
    );
  });

  it("counts special-token strings as ordinary text and never throws", () => {
    for (const special of SPECIALS) {
      const text = `before ${special} after ${special}${special}`;
      expect(ours.count(text)).toBe(reference.count(text));
      expect(ours.count(text)).toBeGreaterThan(2);
    }
  });

  it("is unaffected by the piece cache being disabled", () => {
    const uncached = createBpeTokenizer(encoding, { cacheSize: 0 });
    const text = "the the the cat sat on the mat; the end. ".repeat(50);
    expect(uncached.count(text)).toBe(ours.count(text));
  });
});

/** The slowest inputs we know of: one enormous pre-tokenizer piece, or inputs js-tiktoken is quadratic on. */
function worstCases(bytes: number): Record<string, string> {
  let seed = 42;
  const rnd = (): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
    return seed;
  };
  const gen = (pick: () => string, maxBytes = bytes): string => {
    let s = "";
    let size = 0;
    for (;;) {
      const c = pick();
      size += Buffer.byteLength(c);
      if (size > maxBytes) return s;
      s += c;
    }
  };
  const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  return {
    "=": "=".repeat(bytes),
    "one letter": "a".repeat(bytes),
    spaces: " ".repeat(bytes),
    newlines: "\n".repeat(bytes),
    "mixed whitespace": gen(() => [" ", "\t", "\n", "\r\n"][rnd() % 4]!),
    "random lowercase": gen(() => String.fromCharCode(97 + (rnd() % 26))),
    base64: gen(() => b64[rnd() % 64]!),
    "minified JSON": gen(() =>
      JSON.stringify({ id: rnd() % 1000, name: `n${rnd() % 99}`, ok: true, v: [1, 2] }),
    ),
    punctuation: gen(() => "!#$%&()*+,-./:;<=>?@[]^_`{|}~"[rnd() % 29]!),
    "random CJK": gen(() => String.fromCharCode(0x4e00 + (rnd() % 20000))),
    "random emoji": gen(() => String.fromCodePoint(0x1f300 + (rnd() % 700))),
    "lone surrogates": gen(() => String.fromCharCode(0xd800 + (rnd() % 2048))),
  };
}

describe("worst cases", () => {
  const ours = createBpeTokenizer("o200k_base");
  const reference = createTiktokenTokenizer("o200k_base");

  it("counts every 100 KB worst case in under 100 ms", () => {
    ours.count("warm up");
    for (const [name, text] of Object.entries(worstCases(100_000))) {
      // The best of three runs: a GC pause or a neighbour process must not fail the test, a slow algorithm will.
      const times: number[] = [];
      for (let run = 0; run < 3; run++) {
        const start = performance.now();
        ours.count(text);
        times.push(performance.now() - start);
      }
      expect(Math.min(...times), `${name}: ${times.map((t) => t.toFixed(1)).join(", ")} ms`).toBeLessThan(
        100,
      );
    }
  });

  it("equals js-tiktoken on the same shapes at 2,000 bytes (where js-tiktoken is still fast enough)", () => {
    for (const [name, text] of Object.entries(worstCases(2_000))) {
      expect(ours.encode(text), name).toEqual(reference.encode(text));
    }
  });
});
