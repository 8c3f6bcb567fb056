import { describe, expect, it } from "vitest";
import { type CompactionPlan, createPlan, emptyPlan, type PlanAction } from "./compaction-plan.js";
import { diffPlans, formatPlanDiff } from "./diff-plans.js";

const drop = (span: string[], strategy = "fallback", reason = "over budget"): PlanAction => ({
  kind: "drop",
  span,
  record: { kind: "drop", reason },
  strategy,
  reason,
});
const clear = (span: string[], reason = "old tool output"): PlanAction => ({
  kind: "clear",
  span,
  record: { kind: "clear" },
  strategy: "tool-retention",
  reason,
});
const summarize = (span: string[], summary: string): PlanAction => ({
  kind: "summarize",
  span,
  record: { kind: "summarize", summary, summarizerId: "m", promptVersion: "v1" },
  strategy: "summarizer",
  reason: "long history",
});
const include = (span: string[]): PlanAction => ({
  kind: "include",
  span,
  record: { kind: "include" },
  strategy: "pin",
  reason: "pinned",
});

const plan = (version: number, ...actions: PlanAction[]): CompactionPlan =>
  createPlan({ threadId: "t", version, basedOnSeq: 10, actions });

const seqs: Record<string, number> = { m0: 0, m1: 1, m2: 2, m3: 3, m4: 4, m5: 5 };
const order = (id: string) => seqs[id];

describe("diffPlans", () => {
  it("finds no change between a plan and itself, or an equal copy", () => {
    const p = plan(2, clear(["m1", "m2"]), drop(["m0"]), include(["m3"]));
    expect(diffPlans(p, p).changes).toEqual([]);
    expect(diffPlans(p, createPlan(p)).changes).toEqual([]);
  });

  it("lists what a plan changes against the empty plan, with strategy and reason", () => {
    const diff = diffPlans(emptyPlan("t"), plan(1, clear(["m2"]), drop(["m0", "m1"])), order);
    expect(diff).toEqual({
      threadId: "t",
      fromVersion: 0,
      toVersion: 1,
      changes: [
        {
          messageId: "m0",
          position: seqs.m0,
          from: { kind: "include" },
          to: { kind: "drop", strategy: "fallback", reason: "over budget" },
        },
        {
          messageId: "m1",
          position: seqs.m1,
          from: { kind: "include" },
          to: { kind: "drop", strategy: "fallback", reason: "over budget" },
        },
        {
          messageId: "m2",
          position: seqs.m2,
          from: { kind: "include" },
          to: { kind: "clear", strategy: "tool-retention", reason: "old tool output" },
        },
      ],
    });
  });

  it("lists changes in order of first mention without an order function", () => {
    const diff = diffPlans(emptyPlan("t"), plan(1, drop(["m3"]), clear(["m1"])));
    expect(diff.changes.map((c) => c.messageId)).toEqual(["m3", "m1"]);
  });

  it("reports the resolved state: the winner of an overlap, not every claimant", () => {
    const diff = diffPlans(emptyPlan("t"), plan(1, clear(["m1"]), drop(["m1"]), include(["m1"])));
    expect(diff.changes).toEqual([
      {
        messageId: "m1",
        from: { kind: "include" },
        to: { kind: "drop", strategy: "fallback", reason: "over budget" },
      },
    ]);
  });

  it("lists a message whose kind stays but whose record changes (a new summary)", () => {
    const a = plan(1, summarize(["m1", "m2"], "old summary"));
    const b = plan(2, summarize(["m1", "m2"], "new summary"));
    expect(diffPlans(a, b, order).changes.map((c) => [c.messageId, c.from.kind, c.to.kind])).toEqual([
      ["m1", "summarize", "summarize"],
      ["m2", "summarize", "summarize"],
    ]);
  });

  it("ignores an equal action that moved or grew its span", () => {
    const a = plan(1, clear(["m1"]), drop(["m0"]));
    const b = plan(2, drop(["m0"]), clear(["m1", "m2"]));
    expect(diffPlans(a, b, order).changes.map((c) => c.messageId)).toEqual(["m2"]);
  });

  it("lists a message a newer plan gives back (drop → include)", () => {
    const diff = diffPlans(plan(1, drop(["m4"])), plan(2), order);
    expect(diff.changes).toEqual([
      {
        messageId: "m4",
        position: seqs.m4,
        from: { kind: "drop", strategy: "fallback", reason: "over budget" },
        to: { kind: "include" },
      },
    ]);
  });

  it("puts ids the order function does not know last", () => {
    const diff = diffPlans(emptyPlan("t"), plan(1, drop(["ghost", "m2", "m1"])), order);
    expect(diff.changes.map((c) => c.messageId)).toEqual(["m1", "m2", "ghost"]);
  });

  // An explicit include sends the same as the default include, so it is not an audit-worthy change.
  it("does not list a message that is included on both sides", () => {
    expect(diffPlans(emptyPlan("t"), plan(1, include(["m3"]))).changes).toEqual([]);
  });
});

describe("formatPlanDiff", () => {
  it("never merges a run across a message that did not change", () => {
    const lines = formatPlanDiff(diffPlans(emptyPlan("t"), plan(1, drop(["m0", "m2", "m3"])), order)).split(
      "\n",
    );
    expect(lines.slice(1).map((l) => l.trim().split(/\s{2,}/)[0])).toEqual(["m0", "m2 … m3 (2)"]);
  });

  it("merges nothing without log positions", () => {
    const lines = formatPlanDiff(diffPlans(emptyPlan("t"), plan(1, drop(["m0", "m1"])))).split("\n");
    expect(lines).toHaveLength(3);
  });

  it("says so when nothing changed", () => {
    const p = plan(4, drop(["m0"]));
    expect(formatPlanDiff(diffPlans(p, p))).toBe(
      "plan diff for thread t: v4 → v4, 0 message(s) changed\n  (no changes)",
    );
  });

  it("writes one line per run of messages that changed the same way, with both sides' reasons", () => {
    const a = plan(1, clear(["m3"]));
    const b = plan(2, drop(["m0", "m1", "m2"]), summarize(["m3"], "s"));
    const lines = formatPlanDiff(diffPlans(a, b, order)).split("\n");
    expect(lines[0]).toBe("plan diff for thread t: v1 → v2, 4 message(s) changed");
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/^ {2}m0 … m2 \(3\) +include → drop +now: fallback: over budget$/);
    expect(lines[2]).toMatch(
      /^ {2}m3 +clear → summarize +now: summarizer: long history; was: tool-retention: old tool output$/,
    );
  });

  it("aligns the columns", () => {
    const diff = diffPlans(
      emptyPlan("t"),
      plan(1, drop(["m0"]), clear(["m2"]), drop(["m4"], "window", "age")),
      order,
    );
    const lines = formatPlanDiff(diff).split("\n").slice(1);
    const column = lines.map((l) => l.indexOf("now:"));
    expect(new Set(column).size).toBe(1);
  });
});
