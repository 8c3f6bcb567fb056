import { expect, it } from "vitest";
import { AccessDeniedError, ValidationError } from "../../src/errors/ledger-error.js";
import { summaryCacheKey } from "../../src/strategies/summarizer.js";
import type { StoreBackend, StoreOpener } from "./store-backends.js";
import { rejection } from "./store-cases-log.js";

/** A settable clock starting at a fixed instant. */
function fakeClock(start = Date.UTC(2030, 0, 1)) {
  let t = start;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

/** Artifact store cases: round trip, tenants, sensitivity, TTL, immutability. */
export function artifactCases(opener: StoreOpener, title: (t: string) => string): void {
  it(title("put then get/head round-trips content and metadata; puts are idempotent"), async () => {
    const clock = fakeClock();
    const { stores } = await opener.fresh(clock.now);
    const content = `result line\n${"x".repeat(5_000)}\u0000 NUL and 🧪`;
    const meta = await stores.artifacts.put({ content, tenant: "acme", threadId: "t1", sourceIds: ["m3"] });
    expect(meta).toMatchObject({
      tenant: "acme",
      sensitivity: "internal",
      threadId: "t1",
      sizeChars: content.length,
    });
    expect(meta.createdAt).toBe(new Date(clock.now()).toISOString());
    expect(meta.expiresAt).toBeUndefined();
    const artifact = await stores.artifacts.get(meta.artifactId, { tenant: "acme" });
    expect(artifact).toEqual({ meta, content });
    expect(Object.isFrozen(artifact!.meta)).toBe(true);
    expect(await stores.artifacts.head(meta.artifactId, { tenant: "acme" })).toEqual(meta);
    clock.advance(1_000);
    expect(await stores.artifacts.put({ content, tenant: "acme" })).toEqual(meta);
    expect(await stores.artifacts.get("art_missing", { tenant: "acme" })).toBeUndefined();
  });

  it(title("a TTL past 100 years or an id with NUL is refused by name, and nothing is stored"), async () => {
    const { stores } = await opener.fresh();
    const huge = await rejection(
      stores.artifacts.put({ content: "x", tenant: "acme", ttlMs: 1e20 }),
      ValidationError,
    );
    expect(huge.message).toMatch(/ttlMs.*100 years|100 years.*ttlMs/s);
    for (const bad of [
      { tenant: "ac\u0000me" },
      { tenant: "acme", threadId: "t\u0000" },
      { tenant: "acme", artifactId: "a\u0000" },
      { tenant: "acme", sourceIds: ["m\u00001"] },
    ]) {
      const error = await rejection(stores.artifacts.put({ content: "x", ...bad }), ValidationError);
      expect(error.message).toMatch(/NUL/);
    }
    expect(await stores.artifacts.put({ content: "x", tenant: "acme", ttlMs: 86_400_000 })).toMatchObject({
      tenant: "acme",
    });
  });

  it(title("tenants are isolated: another tenant reads not found, even under the same id"), async () => {
    const { stores } = await opener.fresh();
    const a = await stores.artifacts.put({ content: "acme secret", tenant: "acme", artifactId: "shared" });
    expect(
      await stores.artifacts.get("shared", { tenant: "globex", clearance: "restricted" }),
    ).toBeUndefined();
    expect(await stores.artifacts.head("shared", { tenant: "globex" })).toBeUndefined();
    const b = await stores.artifacts.put({ content: "globex data", tenant: "globex", artifactId: "shared" });
    expect((await stores.artifacts.get("shared", { tenant: "acme" }))?.content).toBe("acme secret");
    expect((await stores.artifacts.get("shared", { tenant: "globex" }))?.content).toBe("globex data");
    expect(a.contentHash).not.toBe(b.contentHash);
    const derivedA = await stores.artifacts.put({ content: "same", tenant: "acme" });
    const derivedB = await stores.artifacts.put({ content: "same", tenant: "globex" });
    expect(derivedA.artifactId).not.toBe(derivedB.artifactId);
  });

  it(title("reads above the caller's clearance raise AccessDeniedError"), async () => {
    const { stores } = await opener.fresh();
    const meta = await stores.artifacts.put({
      content: "salary table",
      tenant: "acme",
      sensitivity: "confidential",
    });
    await rejection(stores.artifacts.get(meta.artifactId, { tenant: "acme" }), AccessDeniedError);
    await rejection(
      stores.artifacts.head(meta.artifactId, { tenant: "acme", clearance: "public" }),
      AccessDeniedError,
    );
    const ok = await stores.artifacts.get(meta.artifactId, { tenant: "acme", clearance: "confidential" });
    expect(ok?.content).toBe("salary table");
    await rejection(stores.artifacts.get(meta.artifactId, { tenant: "" }), ValidationError);
  });

  it(title("delete removes an artifact the caller may read, and nothing of another tenant's"), async () => {
    const { stores } = await opener.fresh();
    const remove = stores.artifacts.delete!;
    const mine = await stores.artifacts.put({ content: "ours", tenant: "acme", artifactId: "x" });
    await stores.artifacts.put({ content: "theirs", tenant: "globex", artifactId: "x" });
    const secret = await stores.artifacts.put({ content: "pay", tenant: "acme", sensitivity: "restricted" });
    expect(await remove("x", { tenant: "acme" })).toBe(true);
    expect(await stores.artifacts.get(mine.artifactId, { tenant: "acme" })).toBeUndefined();
    expect(await remove("x", { tenant: "acme" })).toBe(false);
    expect((await stores.artifacts.get("x", { tenant: "globex" }))?.content).toBe("theirs");
    await rejection(remove(secret.artifactId, { tenant: "acme" }), AccessDeniedError);
    expect(
      (await stores.artifacts.head(secret.artifactId, { tenant: "acme", clearance: "restricted" }))
        ?.sizeChars,
    ).toBe(3);
    expect(await remove(secret.artifactId, { tenant: "acme", clearance: "restricted" })).toBe(true);
    await rejection(remove("x", { tenant: "" }), ValidationError);
    // The id can be used again afterwards.
    await stores.artifacts.put({ content: "new", tenant: "acme", artifactId: "x" });
    expect((await stores.artifacts.get("x", { tenant: "acme" }))?.content).toBe("new");
  });

  it(title("an artifact past its TTL reads as not found and its id can be reused"), async () => {
    const clock = fakeClock();
    const { stores } = await opener.fresh(clock.now);
    const meta = await stores.artifacts.put({
      content: "short-lived",
      tenant: "acme",
      artifactId: "tmp",
      ttlMs: 60_000,
    });
    expect(meta.expiresAt).toBe(new Date(clock.now() + 60_000).toISOString());
    clock.advance(59_999);
    expect((await stores.artifacts.get("tmp", { tenant: "acme" }))?.content).toBe("short-lived");
    clock.advance(1);
    expect(await stores.artifacts.get("tmp", { tenant: "acme" })).toBeUndefined();
    expect(await stores.artifacts.head("tmp", { tenant: "acme" })).toBeUndefined();
    await stores.artifacts.put({ content: "new content", tenant: "acme", artifactId: "tmp" });
    expect((await stores.artifacts.get("tmp", { tenant: "acme" }))?.content).toBe("new content");
  });

  it(
    title("artifacts are immutable; a rewrite keeps the stricter sensitivity and the later expiry"),
    async () => {
      const clock = fakeClock();
      const { stores } = await opener.fresh(clock.now);
      const first = await stores.artifacts.put({
        content: "v1",
        tenant: "acme",
        artifactId: "doc",
        ttlMs: 1_000,
      });
      const error = await rejection(
        stores.artifacts.put({ content: "v2", tenant: "acme", artifactId: "doc" }),
        ValidationError,
      );
      expect(error.where.field).toBe("artifactId");
      const again = await stores.artifacts.put({
        content: "v1",
        tenant: "acme",
        artifactId: "doc",
        sensitivity: "confidential",
        ttlMs: 5_000,
      });
      expect(again).toEqual({
        ...first,
        sensitivity: "confidential",
        expiresAt: new Date(clock.now() + 5_000).toISOString(),
      });
      const weaker = await stores.artifacts.put({
        content: "v1",
        tenant: "acme",
        artifactId: "doc",
        sensitivity: "public",
      });
      expect(weaker.sensitivity).toBe("confidential");
      expect(weaker.expiresAt).toBeUndefined();
    },
  );
}

/** Summary cache cases; LRU and TTL are only promised by the in-memory cache. */
export function summaryCases(backend: StoreBackend, opener: StoreOpener, title: (t: string) => string): void {
  const summary = (text: string) => ({ text, structured: { goals: [text], decisions: ["d"] } });

  it(title("summaries round-trip by key; a later set replaces the entry"), async () => {
    const { stores } = await opener.fresh();
    const key = summaryCacheKey("ab".repeat(32), "extractive", "p1");
    expect(await stores.summaries.get(key)).toBeUndefined();
    await stores.summaries.set(key, summary("first"));
    expect(await stores.summaries.get(key)).toEqual(summary("first"));
    await stores.summaries.set(key, summary("second"));
    expect(await stores.summaries.get(key)).toEqual(summary("second"));
    expect(await stores.summaries.get(summaryCacheKey("ab".repeat(32), "extractive", "p2"))).toBeUndefined();
  });

  it(title("invalidate forgets one summary and leaves the others"), async () => {
    const { stores } = await opener.fresh();
    const one = summaryCacheKey("cd".repeat(32), "extractive", "p1");
    const two = summaryCacheKey("ef".repeat(32), "extractive", "p1");
    await stores.summaries.set(one, summary("one"));
    await stores.summaries.set(two, summary("two"));
    await stores.summaries.invalidate!(one);
    expect(await stores.summaries.get(one)).toBeUndefined();
    expect(await stores.summaries.get(two)).toEqual(summary("two"));
    await stores.summaries.invalidate!(one);
    await stores.summaries.set(one, summary("again"));
    expect(await stores.summaries.get(one)).toEqual(summary("again"));
  });

  it.runIf(backend.name === "memory")(
    title("the memory stores' summary cache takes its LRU size and TTL from the stores' options"),
    async () => {
      const { createMemoryStores } = await import("../../src/stores/memory/memory-stores.js");
      const clock = fakeClock();
      const cache = createMemoryStores({
        summaryMaxEntries: 2,
        summaryTtlMs: 1_000,
        now: clock.now,
      }).summaries;
      await cache.set("a", summary("a"));
      await cache.set("b", summary("b"));
      await cache.get("a");
      await cache.set("c", summary("c"));
      expect(await cache.get("b")).toBeUndefined();
      expect(await cache.get("a")).toEqual(summary("a"));
      clock.advance(1_000);
      expect(await cache.get("c")).toBeUndefined();
    },
  );
}
