import { expect, it } from "vitest";
import { NotFoundError, ValidationError } from "../../src/errors/ledger-error.js";
import type { ModelCallRecord } from "../../src/stores/model-call-store.js";
import type { StoreBackend, StoreOpener } from "./store-backends.js";
import { rejection } from "./store-cases-log.js";
import { batch, dropPlan } from "./store-fixtures.js";

function call(callId: string, threadId: string, model: string | undefined, minute: number): ModelCallRecord {
  return {
    callId,
    threadId,
    logSeq: 10 + minute,
    planVersion: 2,
    format: "openai",
    ...(model === undefined ? {} : { model }),
    requestHash: `hash-${callId}`,
    tokenEstimate: 1_000 + minute,
    budget: { contextWindow: 128_000, available: 110_000, target: 100_000 },
    summaries: ["ab".repeat(32)],
    evictions: ["drop:m1"],
    createdAt: new Date(Date.UTC(2030, 0, 1, 0, minute)).toISOString(),
    durationMs: 812.5,
  };
}

/** Model call store cases: record, get, usage, listing. */
export function callCases(opener: StoreOpener, title: (t: string) => string): void {
  it(title("records one audit record per call and reads it back"), async () => {
    const { stores } = await opener.fresh();
    const record = call("c1", "t1", "gpt-4o", 1);
    await stores.calls.record(record);
    expect(await stores.calls.get("c1")).toEqual(record);
    expect(await stores.calls.get("c9")).toBeUndefined();
    const error = await rejection(stores.calls.record({ ...record, tokenEstimate: 5 }), ValidationError);
    expect(error.where.field).toBe("callId");
    expect((await stores.calls.get("c1"))?.tokenEstimate).toBe(record.tokenEstimate);
    await rejection(stores.calls.record({ ...record, callId: "c2", logSeq: -1 }), ValidationError);
  });

  it(title("usage is attached later; listing follows recording order"), async () => {
    const { stores } = await opener.fresh();
    const records = [
      call("c1", "t1", "gpt-4o", 1),
      call("c2", "t2", "gpt-4o", 2),
      call("c3", "t1", "claude", 3),
      call("c4", "t1", "gpt-4o", 4),
      call("c5", "t1", undefined, 5),
    ];
    for (const r of records) await stores.calls.record(r);
    await stores.calls.setUsage("c1", { inputTokens: 1_010 });
    await stores.calls.setUsage("c2", { inputTokens: 990, outputTokens: 12, cachedInputTokens: 512 });
    await stores.calls.setUsage("c3", { inputTokens: 1_200 });
    await rejection(stores.calls.setUsage("c9", { inputTokens: 1 }), NotFoundError);
    await rejection(stores.calls.setUsage("c4", { inputTokens: -1 }), ValidationError);
    expect((await stores.calls.get("c2"))?.usage).toEqual({
      inputTokens: 990,
      outputTokens: 12,
      cachedInputTokens: 512,
    });
    expect((await stores.calls.list("t1")).map((r) => r.callId)).toEqual(["c1", "c3", "c4", "c5"]);
    expect((await stores.calls.listWithUsage("gpt-4o", 10)).map((r) => r.callId)).toEqual(["c2", "c1"]);
    expect((await stores.calls.listWithUsage("gpt-4o", 1)).map((r) => r.callId)).toEqual(["c2"]);
    await stores.calls.setUsage("c4", { inputTokens: 1_020 });
    expect((await stores.calls.listWithUsage("gpt-4o", 2)).map((r) => r.callId)).toEqual(["c4", "c2"]);
    await rejection(stores.calls.listWithUsage("gpt-4o", 0), ValidationError);
  });

  it(
    title("the last calls of a thread come back in recording order, with what they rehydrated"),
    async () => {
      const { stores } = await opener.fresh();
      const rehydrated = [{ artifactId: "art_1", tokens: 120, truncated: true }];
      const rehydrationBlocked = [{ artifactId: "art_2", reason: "cooldown" as const }];
      const summarizers = [
        { summarizerId: "extractive/2", promptVersion: "v1", spanHash: "ab", messages: 7 },
      ];
      await stores.calls.record({
        ...call("c1", "t1", "gpt-4o", 1),
        rehydrated,
        rehydrationBlocked,
        summarizers,
      });
      await stores.calls.record(call("c2", "t2", "gpt-4o", 2));
      await stores.calls.record(call("c3", "t1", "gpt-4o", 3));
      await stores.calls.record(call("c4", "t1", "gpt-4o", 4));
      const recent = stores.calls.recent!;
      expect((await recent("t1", 2)).map((r) => r.callId)).toEqual(["c3", "c4"]);
      expect((await recent("t1", 10)).map((r) => r.callId)).toEqual(["c1", "c3", "c4"]);
      expect(await recent("t9", 3)).toEqual([]);
      expect((await recent("t1", 3))[0]).toMatchObject({ rehydrated, rehydrationBlocked, summarizers });
      await rejection(recent("t1", 0), ValidationError);
      const bad = {
        ...call("c5", "t1", "gpt-4o", 5),
        rehydrationBlocked: [{ artifactId: "a", reason: "nope" }],
      };
      await rejection(stores.calls.record(bad as unknown as ModelCallRecord), ValidationError);
    },
  );
}

/** Durable backends keep everything across close and reopen. */
export function durabilityCases(
  backend: StoreBackend,
  opener: StoreOpener,
  title: (t: string) => string,
): void {
  it.runIf(backend.durable)(
    title("everything written survives closing and reopening the store"),
    async () => {
      const { stores, target } = await opener.fresh();
      await stores.log.append("t1", 0, batch(0, ["a", "b"]));
      await stores.plans.commit(dropPlan("t1", 1, 2, ["a"], "test"), 0);
      const meta = await stores.artifacts.put({ content: "kept", tenant: "acme" });
      await stores.summaries.set("k", { text: "s", structured: {} });
      await stores.calls.record(call("c1", "t1", "gpt-4o", 1));
      await stores.close();
      const again = await opener.at(target);
      expect((await again.log.read("t1")).map((e) => e.message.id)).toEqual(["a", "b"]);
      expect((await again.plans.latest("t1")).version).toBe(1);
      expect((await again.artifacts.get(meta.artifactId, { tenant: "acme" }))?.content).toBe("kept");
      expect(await again.summaries.get("k")).toEqual({ text: "s", structured: {} });
      expect((await again.calls.get("c1"))?.callId).toBe("c1");
    },
  );

  it.runIf(backend.durable)(
    title("several handles opening a fresh store at once migrate it once and share it"),
    async () => {
      const target = backend.newTarget();
      const handles = await Promise.all([1, 2, 3, 4].map(() => opener.at(target)));
      await handles[0]!.log.append("t1", 0, batch(0, ["a"]));
      await handles[3]!.log.append("t1", 1, batch(1, ["b"]));
      for (const h of handles) expect(await h.log.length("t1")).toBe(2);
    },
  );
}
