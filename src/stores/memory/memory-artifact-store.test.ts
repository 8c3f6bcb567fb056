import { describe, expect, it } from "vitest";
import { AccessDeniedError, ValidationError } from "../../errors/ledger-error.js";
import { sha256Hex } from "../../log/canonical-json.js";
import type { ArtifactInput } from "../artifact-store.js";
import { createMemoryArtifactStore, deriveArtifactId } from "./memory-artifact-store.js";

const T0 = Date.parse("2025-01-01T00:00:00.000Z");

function clockAt(start = T0) {
  const clock = { ms: start, now: () => clock.ms };
  return clock;
}

async function rejection(promise: Promise<unknown>): Promise<ValidationError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ValidationError);
  return error as ValidationError;
}

describe("createMemoryArtifactStore", () => {
  it("fills in the metadata and hands out frozen values", async () => {
    const clock = clockAt();
    const store = createMemoryArtifactStore({ now: clock.now });
    const sourceIds = ["m1", "m2"];
    const meta = await store.put({
      content: "hello",
      tenant: "acme",
      threadId: "t1",
      sourceIds,
      ttlMs: 60_000,
    });
    expect(meta).toEqual({
      artifactId: deriveArtifactId("acme", sha256Hex("hello")),
      tenant: "acme",
      sensitivity: "internal",
      threadId: "t1",
      sourceIds: ["m1", "m2"],
      sizeChars: 5,
      contentHash: sha256Hex("hello"),
      createdAt: "2025-01-01T00:00:00.000Z",
      expiresAt: "2025-01-01T00:01:00.000Z",
    });
    expect(meta.artifactId).toMatch(/^art_[0-9a-f]{32}$/);
    sourceIds.push("m3");
    expect(meta.sourceIds).toEqual(["m1", "m2"]);
    expect(Object.isFrozen(meta) && Object.isFrozen(meta.sourceIds)).toBe(true);
    const artifact = await store.get(meta.artifactId, { tenant: "acme" });
    expect(artifact).toEqual({ meta, content: "hello" });
    expect(Object.isFrozen(artifact)).toBe(true);
    expect(await store.head(meta.artifactId, { tenant: "acme" })).toBe(meta);
  });

  it("is idempotent: the same content and tenant give the same artifact; tenants and contents differ", async () => {
    const store = createMemoryArtifactStore({ now: clockAt().now });
    const a = await store.put({ content: "x", tenant: "acme" });
    expect(await store.put({ content: "x", tenant: "acme" })).toBe(a);
    expect((await store.put({ content: "x", tenant: "umbrella" })).artifactId).not.toBe(a.artifactId);
    expect((await store.put({ content: "y", tenant: "acme" })).artifactId).not.toBe(a.artifactId);
    expect(store.size).toBe(3);
  });

  it("reads another tenant's artifact as not found, even under the same explicit id", async () => {
    const store = createMemoryArtifactStore();
    const a = await store.put({ content: "secret", tenant: "acme", artifactId: "doc-1" });
    expect(a.artifactId).toBe("doc-1");
    expect(await store.get("doc-1", { tenant: "umbrella", clearance: "restricted" })).toBeUndefined();
    expect(await store.head("doc-1", { tenant: "umbrella" })).toBeUndefined();
    await store.put({ content: "theirs", tenant: "umbrella", artifactId: "doc-1" });
    expect((await store.get("doc-1", { tenant: "acme" }))?.content).toBe("secret");
    expect((await store.get("doc-1", { tenant: "umbrella" }))?.content).toBe("theirs");
    expect(await store.get("missing", { tenant: "acme" })).toBeUndefined();
  });

  it("checks clearance on every read: too sensitive content raises AccessDeniedError", async () => {
    const store = createMemoryArtifactStore();
    const secret = await store.put({ content: "s", tenant: "acme", sensitivity: "restricted" });
    const open = await store.put({ content: "p", tenant: "acme", sensitivity: "public" });
    await expect(store.get(secret.artifactId, { tenant: "acme" })).rejects.toBeInstanceOf(AccessDeniedError);
    await expect(
      store.head(secret.artifactId, { tenant: "acme", clearance: "confidential" }),
    ).rejects.toBeInstanceOf(AccessDeniedError);
    expect((await store.get(secret.artifactId, { tenant: "acme", clearance: "restricted" }))?.content).toBe(
      "s",
    );
    expect((await store.get(open.artifactId, { tenant: "acme", clearance: "public" }))?.content).toBe("p");
  });

  it("reads expired artifacts as not found and forgets them", async () => {
    const clock = clockAt();
    const store = createMemoryArtifactStore({ now: clock.now });
    const meta = await store.put({ content: "short-lived", tenant: "acme", ttlMs: 1000 });
    const forever = await store.put({ content: "kept", tenant: "acme" });
    clock.ms = T0 + 999;
    expect(await store.get(meta.artifactId, { tenant: "acme" })).toBeDefined();
    clock.ms = T0 + 1000;
    expect(await store.head(meta.artifactId, { tenant: "acme" })).toBeUndefined();
    expect(store.size).toBe(1);
    clock.ms = T0 + 10 ** 12;
    expect(await store.get(forever.artifactId, { tenant: "acme" })).toBeDefined();
  });

  it("refuses different content under a live id, and allows it once the old artifact expired", async () => {
    const clock = clockAt();
    const store = createMemoryArtifactStore({ now: clock.now });
    await store.put({ content: "v1", tenant: "acme", artifactId: "report", ttlMs: 10 });
    const error = await rejection(store.put({ content: "v2", tenant: "acme", artifactId: "report" }));
    expect(error.where.field).toBe("artifactId");
    clock.ms += 10;
    const meta = await store.put({ content: "v2", tenant: "acme", artifactId: "report" });
    expect((await store.get(meta.artifactId, { tenant: "acme" }))?.content).toBe("v2");
  });

  it("a repeated put never weakens an artifact: the stricter sensitivity and the later expiry win", async () => {
    const clock = clockAt();
    const store = createMemoryArtifactStore({ now: clock.now });
    const first = await store.put({ content: "c", tenant: "acme", sensitivity: "confidential", ttlMs: 1000 });
    expect(await store.put({ content: "c", tenant: "acme", sensitivity: "public", ttlMs: 500 })).toBe(first);
    clock.ms += 100;
    const later = await store.put({ content: "c", tenant: "acme", sensitivity: "restricted", ttlMs: 5000 });
    expect(later).toMatchObject({
      artifactId: first.artifactId,
      createdAt: first.createdAt,
      sensitivity: "restricted",
      expiresAt: new Date(T0 + 5100).toISOString(),
    });
    const forever = await store.put({ content: "c", tenant: "acme" });
    expect(forever.expiresAt).toBeUndefined();
    expect(forever.sensitivity).toBe("restricted");
  });

  it("rejects bad input, naming the field", async () => {
    const store = createMemoryArtifactStore();
    const cases: Array<[unknown, string]> = [
      [{ content: "x", tenant: "" }, "tenant"],
      [{ content: "x" }, "tenant"],
      [{ content: 1, tenant: "a" }, "content"],
      [{ content: "x", tenant: "a", ttlMs: -1 }, "ttlMs"],
      [{ content: "x", tenant: "a", ttlMs: 0 }, "ttlMs"],
      [{ content: "x", tenant: "a", ttlMs: Number.POSITIVE_INFINITY }, "ttlMs"],
      [{ content: "x", tenant: "a", sensitivity: "secret" }, "sensitivity"],
      [{ content: "x", tenant: "a", artifactId: "" }, "artifactId"],
      [{ content: "x", tenant: "a", sourceIds: [""] }, "sourceIds[0]"],
    ];
    for (const [input, field] of cases) {
      const error = await rejection(store.put(input as ArtifactInput));
      expect(error.where.field, JSON.stringify(input)).toBe(field);
    }
    expect((await rejection(store.get("x", { tenant: "" }))).where.field).toBe("tenant");
    expect((await rejection(store.get("", { tenant: "a" }))).where.field).toBe("artifactId");
    expect((await rejection(store.head("x", { tenant: "a", clearance: "top" as never }))).where.field).toBe(
      "clearance",
    );
    expect(() => createMemoryArtifactStore({ now: 5 as never })).toThrow(ValidationError);
  });
});
