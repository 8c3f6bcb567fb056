import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isAscii, utf8Binary } from "./utf8-binary.js";

const viaTextEncoder = (s: string): string => Buffer.from(new TextEncoder().encode(s)).toString("latin1");

describe("utf8Binary", () => {
  it("returns ASCII text unchanged (same reference)", () => {
    const s = "hello, world\r\n\t~";
    expect(isAscii(s)).toBe(true);
    expect(utf8Binary(s)).toBe(s);
  });

  it("encodes 2-, 3- and 4-byte sequences", () => {
    expect(utf8Binary("é")).toBe("\xc3\xa9");
    expect(utf8Binary("中")).toBe("\xe4\xb8\xad");
    expect(utf8Binary("😀")).toBe("\xf0\x9f\x98\x80");
  });

  it("turns lone surrogates into U+FFFD like TextEncoder", () => {
    for (const s of ["\ud800", "a\udc00b", "\udbff\ud800", "x\ud83d"])
      expect(utf8Binary(s)).toBe(viaTextEncoder(s));
  });

  it("matches TextEncoder on arbitrary strings, including lone surrogates and long inputs", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: "binary", maxLength: 64 }),
          fc.string({ unit: "grapheme", maxLength: 64 }),
        ),
        (s) => {
          expect(utf8Binary(s)).toBe(viaTextEncoder(s));
        },
      ),
      { numRuns: 500 },
    );
    const long = "é中😀\ud800".repeat(5000);
    expect(utf8Binary(long)).toBe(viaTextEncoder(long));
  });
});
