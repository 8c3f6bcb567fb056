import { describe, expect, it } from "vitest";
import { BoundedCache } from "./bounded-cache.js";

describe("BoundedCache", () => {
  it("stores and returns values", () => {
    const cache = new BoundedCache<string, number>(4);
    cache.set("a", 1);
    expect(cache.get("a")).toBe(1);
    expect(cache.get("b")).toBeUndefined();
  });

  it("never holds more than two generations of entries", () => {
    const cache = new BoundedCache<number, number>(10);
    for (let i = 0; i < 1000; i++) cache.set(i, i);
    expect(cache.size).toBeLessThanOrEqual(20);
    expect(cache.get(999)).toBe(999);
    expect(cache.get(0)).toBeUndefined();
  });

  it("keeps entries that are in use across a rotation", () => {
    const cache = new BoundedCache<number, number>(3);
    cache.set(1, 1);
    for (let i = 2; i < 20; i++) {
      expect(cache.get(1)).toBe(1);
      cache.set(i, i);
    }
  });

  it("caches nothing with capacity 0", () => {
    const cache = new BoundedCache<string, number>(0);
    cache.set("a", 1);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("clear drops everything", () => {
    const cache = new BoundedCache<string, number>(2);
    cache.set("a", 1);
    cache.set("b", 2);
    cache.set("c", 3);
    cache.clear();
    expect(cache.size).toBe(0);
  });
});
