import { expect, it } from "vitest";
import { NotFoundError, ValidationError, VersionConflictError } from "../../src/errors/ledger-error.js";
import { type CompactionPlan, createPlan, emptyPlan } from "../../src/plan/compaction-plan.js";
import { serializePlan } from "../../src/plan/plan-schema.js";
import type { StoreOpener } from "./store-backends.js";
import { rejection } from "./store-cases-log.js";

/** A plan using every action kind and record field, with text that JSON and SQL text columns find awkward. */
function richPlan(threadId: string, version: number): CompactionPlan {
  return createPlan({
    threadId,
    version,
    basedOnSeq: 40 + version,
    actions: [
      { kind: "include", span: ["m0"], record: { kind: "include" }, strategy: "pin", reason: "system" },
      {
        kind: "clear",
        span: ["m1", "m2"],
        record: {
          kind: "clear",
          clearArgs: true,
          cleared: [{ messageId: "m2", callId: "c1", toolName: "search", chars: 48_000 }],
        },
        strategy: "tool-result-retention",
        reason: "older than 3 turns",
      },
      {
        kind: "summarize",
        span: ["m3", "m4", "m5"],
        record: {
          kind: "summarize",
          summary: `v${version}: «quotes" \\ back\u0000slash» 🧪`,
          structured: { goals: ["ship"], decisions: [], openItems: ["tests"] },
          summarizerId: "extractive",
          promptVersion: "p2",
          spanHash: "ab".repeat(32),
        },
        strategy: "summarization",
        reason: "over budget",
      },
      {
        kind: "externalize",
        span: ["m6"],
        record: { kind: "externalize", artifactId: "art_1", summary: "a big file", sizeChars: 90_000 },
        strategy: "externalization",
        reason: "large",
      },
      {
        kind: "drop",
        span: ["m7"],
        record: { kind: "drop", reason: "oldest" },
        strategy: "fallback",
        reason: "fit",
      },
    ],
  });
}

/** Plan store cases: versions, conflicts, exact round trips. */
export function planCases(opener: StoreOpener, title: (t: string) => string): void {
  it(title("before any commit: latest and version 0 are the empty plan, versions is empty"), async () => {
    const { stores } = await opener.fresh();
    expect(await stores.plans.latest("t1")).toEqual(emptyPlan("t1"));
    expect(await stores.plans.get("t1", 0)).toEqual(emptyPlan("t1"));
    expect(await stores.plans.versions("t1")).toEqual([]);
  });

  it(title("commits versions in order; every past version reads back JSON-exact"), async () => {
    const { stores } = await opener.fresh();
    const plans = [1, 2, 3].map((v) => richPlan("t1", v));
    for (const plan of plans) await stores.plans.commit(plan, plan.version - 1);
    expect(await stores.plans.versions("t1")).toEqual([1, 2, 3]);
    expect(serializePlan(await stores.plans.latest("t1"))).toBe(serializePlan(plans[2]!));
    for (const plan of plans) {
      const back = await stores.plans.get("t1", plan.version);
      expect(serializePlan(back)).toBe(serializePlan(plan));
      expect(back).toEqual(plan);
      expect(Object.isFrozen(back.actions[2]!.record)).toBe(true);
    }
    expect(await stores.plans.versions("other")).toEqual([]);
  });

  it(
    title("a stale commit gets VersionConflictError naming thread and versions; nothing is written"),
    async () => {
      const { stores } = await opener.fresh();
      await stores.plans.commit(richPlan("t1", 1), 0);
      await stores.plans.commit(richPlan("t1", 2), 1);
      const error = await rejection(stores.plans.commit(richPlan("t1", 2), 1), VersionConflictError);
      expect([error.expected, error.actual, error.where.threadId]).toEqual([1, 2, "t1"]);
      expect(error.message).toMatch(/"t1".*expected version 1 but the store holds 2/);
      await rejection(stores.plans.commit(richPlan("t1", 5), 4), VersionConflictError);
      expect(await stores.plans.versions("t1")).toEqual([1, 2]);
    },
  );

  it(title("a plan that breaks the plan schema is refused before anything is written"), async () => {
    const { stores } = await opener.fresh();
    await stores.plans.commit(richPlan("t1", 1), 0);
    const bad = { ...richPlan("t1", 2), actions: [{ kind: "drop", span: [], record: { kind: "drop" } }] };
    const error = await rejection(stores.plans.commit(bad as unknown as CompactionPlan, 1), ValidationError);
    expect(error.where.threadId).toBe("t1");
    expect(await stores.plans.versions("t1")).toEqual([1]);
    expect(serializePlan(await stores.plans.latest("t1"))).toBe(serializePlan(richPlan("t1", 1)));
  });

  it(title("a plan whose version is not expectedVersion + 1 is refused"), async () => {
    const { stores } = await opener.fresh();
    const error = await rejection(stores.plans.commit(richPlan("t1", 3), 0), ValidationError);
    expect([error.where.threadId, error.where.field]).toEqual(["t1", "version"]);
    expect(await stores.plans.versions("t1")).toEqual([]);
  });

  it(title("a version never committed throws NotFoundError"), async () => {
    const { stores } = await opener.fresh();
    await stores.plans.commit(richPlan("t1", 1), 0);
    const error = await rejection(stores.plans.get("t1", 2), NotFoundError);
    expect(error.message).toContain("version 2");
    await rejection(stores.plans.get("t2", 1), NotFoundError);
  });
}
