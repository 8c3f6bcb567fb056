import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createBpeTokenizer } from "./bpe-tokenizer.js";
import { CountStore, countStoreFor, flushCountStores } from "./count-store.js";
import { useVocabularyCache } from "./vocabulary-cache.js";

const dirs: string[] = [];
const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), "counts-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  useVocabularyCache(undefined);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("CountStore", () => {
  it("keeps counts across instances (processes) once flushed", () => {
    const file = join(tempDir(), "counts.bin");
    const first = new CountStore(file);
    expect(first.get("hello")).toBeUndefined();
    first.set("hello", 1);
    first.set("a longer text", 3);
    expect(first.get("hello")).toBe(1);
    expect(new CountStore(file).get("hello")).toBeUndefined(); // not flushed yet
    first.flush();
    const second = new CountStore(file);
    expect(second.get("hello")).toBe(1);
    expect(second.get("a longer text")).toBe(3);
    expect(second.get("hello ")).toBeUndefined();
  });

  it("skips a damaged or torn record and keeps the rest", () => {
    const file = join(tempDir(), "counts.bin");
    const store = new CountStore(file);
    store.set("one", 1);
    store.set("two", 2);
    store.flush();
    const data = readFileSync(file);
    data[8]! ^= 0xff; // the first record's count
    writeFileSync(file, Buffer.concat([data, Buffer.from([1, 2, 3])])); // plus a torn tail
    const back = new CountStore(file);
    expect(back.get("one")).toBeUndefined();
    expect(back.get("two")).toBe(2);
  });

  it("starts a file that grew past its bound afresh", () => {
    const file = join(tempDir(), "counts.bin");
    const store = new CountStore(file, 32);
    for (const [i, t] of ["a", "b", "c"].entries()) store.set(t, i);
    store.flush();
    const big = new CountStore(file, 32);
    expect(big.get("a")).toBeUndefined(); // ignored: too big
    big.set("d", 4);
    big.flush();
    expect(statSync(file).size).toBe(16);
    expect(new CountStore(file, 32).get("d")).toBe(4);
  });
});

describe("the tokenizer with a cache directory", () => {
  it("stores whole-text counts and reads them back, counts unchanged", () => {
    const dir = tempDir();
    useVocabularyCache(dir);
    const texts = ["[result cleared: read_file, 12 KB]", "héllo wörld ".repeat(20), ""];
    const plain = createBpeTokenizer("o200k_base", { cacheSize: 0 });
    const counts = texts.map((t) => plain.count(t));
    flushCountStores();
    const store = countStoreFor("o200k_base");
    for (const [i, t] of texts.entries()) expect(store?.get(t)).toBe(counts[i]);
    // The tokenizer answers from the store when it holds the text: a planted count comes back.
    store?.set("a text no one counted yet", 12345);
    expect(plain.count("a text no one counted yet")).toBe(12345);
    useVocabularyCache(undefined);
    expect(countStoreFor("o200k_base")).toBeUndefined();
    expect(texts.map((t) => createBpeTokenizer("o200k_base").count(t))).toEqual(counts);
  });
});
