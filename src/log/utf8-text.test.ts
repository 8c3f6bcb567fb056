import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ValidationError } from "../errors/ledger-error.js";
import { decodeUtf8, firstInvalidUtf8 } from "./utf8-text.js";

const bytes = (...b: number[]) => Uint8Array.from(b);

describe("strict UTF-8", () => {
  it("finds the first byte that is not UTF-8", () => {
    expect(firstInvalidUtf8(Buffer.from("plain, é, 漢, 😀"))).toBe(-1);
    expect(firstInvalidUtf8(bytes(0x61, 0xe9, 0x62))).toBe(1); // Latin-1 é
    expect(firstInvalidUtf8(bytes(0xc0, 0x80))).toBe(0); // overlong NUL
    expect(firstInvalidUtf8(bytes(0x61, 0xed, 0xa0, 0x80))).toBe(1); // a UTF-16 surrogate
    expect(firstInvalidUtf8(bytes(0xf4, 0x90, 0x80, 0x80))).toBe(0); // past U+10FFFF
    expect(firstInvalidUtf8(bytes(0x61, 0x62, 0xe6, 0xbc))).toBe(2); // cut off at the end
    expect(firstInvalidUtf8(bytes(0x80))).toBe(0); // a lone continuation byte
  });

  it("agrees with the platform's strict decoder on random bytes", () => {
    const strict = new TextDecoder("utf-8", { fatal: true });
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (b) => {
        let valid = true;
        try {
          strict.decode(b);
        } catch {
          valid = false;
        }
        expect(firstInvalidUtf8(b) === -1).toBe(valid);
      }),
      { numRuns: 2_000 },
    );
  });

  it("decodes valid text as is, and refuses invalid bytes naming the source, line and offset", () => {
    expect(decodeUtf8(Buffer.from("a\nb é"), "f")).toBe("a\nb é");
    const attempt = () => decodeUtf8(bytes(0x61, 0x0a, 0x62, 0x62, 0xff, 0x0a), "t.jsonl");
    expect(attempt).toThrow(ValidationError);
    expect(attempt).toThrow(
      /t\.jsonl is not valid UTF-8: byte 0xff at byte 2 of the line \(byte 4 of the file\).*line 2/,
    );
  });
});
