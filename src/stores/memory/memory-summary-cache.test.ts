import { describe, expect, it } from "vitest";
import { ValidationError } from "../../errors/ledger-error.js";
import { createMemorySummaryCache } from "./memory-summary-cache.js";

const summary = (text: string) => ({ text, structured: { goals: [text] } });

describe("createMemorySummaryCache", () => {
  it("returns what was set, as a frozen copy", async () => {
    const cache = createMemorySummaryCache();
    const original = { text: "a", structured: { goals: ["a"] } };
    // Keys are opaque to a cache (summarization makes them with `summaryCacheKey`).
    const key = "extractive\u0000extractive/1\u0000hash1";
    await cache.set(key, original);
    const hit = await cache.get(key);
    expect(hit).toEqual(original);
    expect(hit).not.toBe(original);
    expect(Object.isFrozen(hit)).toBe(true);
    expect(Object.isFrozen(hit?.structured.goals)).toBe(true);
    expect(Object.isFrozen(original)).toBe(false);
    original.structured.goals.push("changed later");
    expect((await cache.get(key))?.structured.goals).toEqual(["a"]);
    expect(await cache.get("extractive\u0000extractive/2\u0000hash1")).toBeUndefined();
  });

  it("evicts the least recently used entry, where a get counts as a use", async () => {
    const cache = createMemorySummaryCache({ maxEntries: 2 });
    await cache.set("a", summary("a"));
    await cache.set("b", summary("b"));
    await cache.get("a");
    await cache.set("c", summary("c"));
    expect(cache.size).toBe(2);
    expect(await cache.get("b")).toBeUndefined();
    expect((await cache.get("a"))?.text).toBe("a");
    expect((await cache.get("c"))?.text).toBe("c");
  });

  it("overwrites a key without growing", async () => {
    const cache = createMemorySummaryCache({ maxEntries: 2 });
    await cache.set("a", summary("a1"));
    await cache.set("a", summary("a2"));
    expect(cache.size).toBe(1);
    expect((await cache.get("a"))?.text).toBe("a2");
  });

  it("lets entries expire after ttlMs from their set, removing them on read", async () => {
    let now = 1_000;
    const cache = createMemorySummaryCache({ ttlMs: 100, now: () => now });
    await cache.set("a", summary("a"));
    now = 1_099;
    expect((await cache.get("a"))?.text).toBe("a");
    now = 1_100;
    expect(await cache.get("a")).toBeUndefined();
    expect(cache.size).toBe(0);
    await cache.set("a", summary("again"));
    expect((await cache.get("a"))?.text).toBe("again");
  });

  it("clears", async () => {
    const cache = createMemorySummaryCache();
    await cache.set("a", summary("a"));
    cache.clear();
    expect(cache.size).toBe(0);
    expect(await cache.get("a")).toBeUndefined();
  });

  it("rejects nonsense options with a ValidationError naming the field", () => {
    expect(() => createMemorySummaryCache({ maxEntries: 0 })).toThrow(ValidationError);
    expect(() => createMemorySummaryCache({ maxEntries: 1.5 })).toThrow(/maxEntries/);
    expect(() => createMemorySummaryCache({ ttlMs: 0 })).toThrow(/ttlMs/);
    expect(() => createMemorySummaryCache({ ttlMs: Number.NaN })).toThrow(/ttlMs/);
  });
});
