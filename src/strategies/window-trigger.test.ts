import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { arbitraryLogAndPlan, fcParams } from "../../test/support/arbitrary-log.js";
import { call, records, result, text } from "../../test/support/builders.js";
import { strategyContext } from "../../test/support/strategy-context.js";
import { ThreadLog } from "../log/thread-log.js";
import { createPlan, emptyPlan, type PlanAction } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog } from "../plan/resolve-for-log.js";
import {
  dropGroupsAction,
  hysteresisCut,
  lastUserGroup,
  liveCounts,
  triggerFires,
  windowedGroups,
  windowTriggerSchema,
} from "./window-trigger.js";

// sys | u1 | a1+t1 | r1 | u2 | a2 (+t2 late, after u3) | u3 | t2
const log = ThreadLog.from("t", [
  { id: "sys", role: "system", parts: [text("be brief")] },
  { id: "u1", role: "user", parts: [text("one")] },
  { id: "a1", role: "assistant", parts: [call("c1")] },
  { id: "t1", role: "tool", parts: [result("c1", "x".repeat(40))] },
  { id: "r1", role: "assistant", parts: [text("done one")] },
  { id: "u2", role: "user", parts: [text("two")], meta: { pinned: true } },
  { id: "a2", role: "assistant", parts: [call("c2")] },
  { id: "u3", role: "user", parts: [text("three")] },
  { id: "t2", role: "tool", parts: [result("c2", "late")] },
]);

const action = <K extends PlanAction["kind"]>(kind: K, span: string[]): PlanAction =>
  ({ kind, span, record: records[kind], strategy: "test", reason: "" }) as PlanAction;

const planWith = (...actions: PlanAction[]) =>
  createPlan({ threadId: "t", version: 1, basedOnSeq: log.length, actions });

describe("windowTriggerSchema", () => {
  it("accepts each limit alone and rejects bad values, unknown keys and an empty trigger", () => {
    for (const ok of [{ usage: 1 }, { usage: 0.01 }, { messages: 1 }, { turns: 3 }, { groups: 2 }]) {
      expect(windowTriggerSchema.safeParse(ok).success).toBe(true);
    }
    const bad = [
      {},
      { usage: 0 },
      { usage: -0.5 },
      { usage: 1.01 },
      { messages: 0 },
      { turns: -1 },
      { groups: 1.5 },
      { percent: 50 },
      { usage: "50%" },
    ];
    for (const value of bad)
      expect(windowTriggerSchema.safeParse(value).success, JSON.stringify(value)).toBe(false);
  });
});

describe("hysteresisCut", () => {
  it("is quiet up to target + threshold, then cuts back to exactly the target", () => {
    expect(hysteresisCut(5, 3, 2)).toBe(0);
    expect(hysteresisCut(6, 3, 2)).toBe(3);
    expect(hysteresisCut(4, 4, 0)).toBe(0);
    expect(hysteresisCut(5, 4, 0)).toBe(1);
    expect(hysteresisCut(0, 1, 0)).toBe(0);
  });
});

describe("liveCounts", () => {
  it("agrees with a seq-by-seq count on random logs and valid plans (property)", () => {
    fc.assert(
      fc.property(arbitraryLogAndPlan(), ({ log, plan }) => {
        const resolution = resolveForLog(plan, log);
        const synthetic = new Set<number>();
        const groups = new Set<number>();
        const turns = new Set<number>();
        let messages = 0;
        for (const m of log.messages) {
          const d = decisionAt(resolution, m.seq);
          if (d?.kind === "drop") continue;
          if (d?.kind === "summarize" || d?.kind === "externalize") {
            if (!synthetic.has(d.actionIndex)) messages++;
            synthetic.add(d.actionIndex);
          } else messages++;
          groups.add(log.groupIndexOf(m.seq));
          turns.add(log.turns.findIndex((t) => m.seq >= t.startSeq && m.seq < t.endSeq));
        }
        expect(liveCounts(log, resolution)).toEqual({ messages, groups: groups.size, turns: turns.size });
      }),
      fcParams(500),
    );
  });

  it("counts what the plan still sends: a summary or pointer is one message, dropped groups and turns vanish", () => {
    expect(liveCounts(log, resolveForLog(emptyPlan("t"), log))).toEqual({ messages: 9, groups: 7, turns: 3 });
    const plan = planWith(action("drop", ["u1", "a1", "t1", "r1"]), action("summarize", ["a2", "t2"]));
    // turn 0 (sys, u1…r1) keeps only sys; turn 1 is u2 + the summary; turn 2 is u3
    expect(liveCounts(log, resolveForLog(plan, log))).toEqual({ messages: 4, groups: 4, turns: 3 });
  });
});

describe("triggerFires", () => {
  const ctx = strategyContext(log, emptyPlan("t"), { contextWindow: 1000 });
  const resolution = resolveForLog(ctx.plan, log);

  it("always fires without a trigger", () => {
    expect(triggerFires(undefined, ctx, resolution)).toBe(true);
  });

  it("fires on usage strictly over the share of the window", () => {
    const share = ctx.tokens / ctx.contextWindow;
    expect(triggerFires({ usage: share }, ctx, resolution)).toBe(false);
    expect(triggerFires({ usage: share * 0.99 }, ctx, resolution)).toBe(true);
  });

  it("fires on counts strictly over their limits, and when any limit is exceeded", () => {
    expect(triggerFires({ messages: 9 }, ctx, resolution)).toBe(false);
    expect(triggerFires({ messages: 8 }, ctx, resolution)).toBe(true);
    expect(triggerFires({ groups: 7 }, ctx, resolution)).toBe(false);
    expect(triggerFires({ groups: 6 }, ctx, resolution)).toBe(true);
    expect(triggerFires({ turns: 3 }, ctx, resolution)).toBe(false);
    expect(triggerFires({ turns: 2 }, ctx, resolution)).toBe(true);
    expect(triggerFires({ turns: 3, groups: 6, usage: 1 }, ctx, resolution)).toBe(true);
    expect(triggerFires({ turns: 3, groups: 7, usage: 1 }, ctx, resolution)).toBe(false);
  });
});

describe("windowedGroups", () => {
  const ids = (groups: ReturnType<typeof windowedGroups>) => groups.map((g) => g.messageIds.join("+"));

  it("skips system, pinned, the latest user message, and keeps groups whole (late results included)", () => {
    const all = windowedGroups(log, resolveForLog(emptyPlan("t"), log), {
      keepSystem: true,
      keepLastUser: true,
    });
    expect(ids(all)).toEqual(["u1", "a1+t1", "r1", "a2+t2"]);
    const loose = windowedGroups(log, resolveForLog(emptyPlan("t"), log), {
      keepSystem: false,
      keepLastUser: false,
    });
    expect(ids(loose)).toEqual(["sys", "u1", "a1+t1", "r1", "a2+t2", "u3"]);
  });

  it("counts cleared groups but not dropped, summarized or externalized ones", () => {
    const plan = planWith(
      action("clear", ["a1", "t1"]),
      action("drop", ["u1"]),
      action("externalize", ["r1"]),
    );
    const groups = windowedGroups(log, resolveForLog(plan, log), { keepSystem: true, keepLastUser: true });
    expect(ids(groups)).toEqual(["a1+t1", "a2+t2"]);
  });

  it("never offers a pending group or a pinned system message", () => {
    const pending = log.append([{ id: "a3", role: "assistant", parts: [call("c3")] }]);
    const groups = windowedGroups(pending, resolveForLog(emptyPlan("t"), pending), {
      keepSystem: true,
      keepLastUser: true,
    });
    expect(ids(groups)).not.toContain("a3");
    const pinnedSystem = ThreadLog.from("s", [
      { id: "s", role: "system", parts: [text("x")], meta: { pinned: true } },
    ]);
    expect(
      windowedGroups(pinnedSystem, resolveForLog(emptyPlan("s"), pinnedSystem), {
        keepSystem: false,
        keepLastUser: false,
      }),
    ).toEqual([]);
  });

  it("finds the latest user message (or none)", () => {
    expect(log.groupAt(lastUserGroup(log)).messageIds).toEqual(["u3"]);
    expect(lastUserGroup(ThreadLog.from("x", [{ role: "assistant", parts: [text("hi")] }]))).toBe(-1);
  });
});

describe("dropGroupsAction", () => {
  it("lists the ids of interleaved groups in log order", () => {
    const groups = [
      log.groupAt(log.groupIndexOf(log.seqOf("u3")!)),
      log.groupAt(log.groupIndexOf(log.seqOf("a2")!)),
    ];
    const drop = dropGroupsAction(log, groups, "w", "why", "because");
    expect(drop).toEqual({
      kind: "drop",
      span: ["a2", "u3", "t2"],
      record: { kind: "drop", reason: "why" },
      strategy: "w",
      reason: "because",
    });
  });
});
