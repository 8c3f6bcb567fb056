import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseBpeRanks } from "./token-table.js";
import {
  decodeVocabulary,
  encodeVocabulary,
  readCachedVocabulary,
  useVocabularyCache,
  writeCachedVocabulary,
} from "./vocabulary-cache.js";

const b64 = (s: string): string => Buffer.from(s, "latin1").toString("base64");
const small = {
  table: parseBpeRanks(`! 0 ${b64("a")} ${b64("b")}\n! 4 ${b64("ab")} ${b64("\xff\x00")}`),
  pattern: "\\p{L}+|é",
};
const key = Buffer.alloc(32, 7);

describe("vocabulary file image", () => {
  it("reads back exactly what was written", () => {
    const back = decodeVocabulary(encodeVocabulary(small, key), key);
    expect(back.pattern).toBe(small.pattern);
    expect(back.table.size).toBe(6);
    for (const t of ["a", "b", "ab", "\xff\x00", "ba", "zz"])
      expect(back.table.rankOf(t)).toBe(small.table.rankOf(t));
    expect(back.table.rankOfPair(0, 1)).toBe(4);
  });

  it("refuses another source key, a flipped byte, a cut file and a foreign file", () => {
    const image = encodeVocabulary(small, key);
    expect(() => decodeVocabulary(image, Buffer.alloc(32, 8))).toThrow(/other rank data/);
    for (const at of [100, image.length - 1]) {
      const flipped = Buffer.from(image);
      flipped[at]! ^= 1;
      expect(() => decodeVocabulary(flipped, key)).toThrow(/checksum/);
    }
    expect(() => decodeVocabulary(image.subarray(0, image.length - 4), key)).toThrow(/length/);
    expect(() => decodeVocabulary(Buffer.from("hello"), key)).toThrow(/not a vocabulary/);
  });
});

describe("the cache directory", () => {
  const dirs: string[] = [];
  afterEach(() => {
    useVocabularyCache(undefined);
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("is off by default and round-trips a real encoding when given", () => {
    expect(readCachedVocabulary("cl100k_base")).toBeUndefined();
    const dir = mkdtempSync(join(tmpdir(), "vocab-"));
    dirs.push(dir);
    useVocabularyCache(dir);
    expect(readCachedVocabulary("cl100k_base")).toBeUndefined(); // empty
    writeCachedVocabulary("cl100k_base", small);
    const files = readdirSync(dir);
    expect(files).toHaveLength(1); // no temp file left behind
    expect(readCachedVocabulary("cl100k_base")?.pattern).toBe(small.pattern);
    // A damaged file reads as absent (the caller parses again), never as a wrong table.
    const file = join(dir, files[0]!);
    const image = readFileSync(file);
    image[image.length - 1]! ^= 1;
    writeFileSync(file, image);
    expect(readCachedVocabulary("cl100k_base")).toBeUndefined();
  });

  it("ignores a directory it cannot write", () => {
    const dir = mkdtempSync(join(tmpdir(), "vocab-"));
    dirs.push(dir);
    writeFileSync(join(dir, "file"), "");
    useVocabularyCache(join(dir, "file", "cache")); // a path under a file: every write fails
    expect(() => writeCachedVocabulary("cl100k_base", small)).not.toThrow();
    expect(readCachedVocabulary("cl100k_base")).toBeUndefined();
  });
});
