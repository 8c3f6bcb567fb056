import { describe, expect, it } from "vitest";
import type { MessageInput } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import { emptyPlan, extendPlan, type PlanAction } from "../plan/compaction-plan.js";
import { firstSpanId } from "../plan/first-span-id.js";
import { parsePlan, serializePlan } from "../plan/plan-schema.js";
import { resolveForLog } from "../plan/resolve-for-log.js";
import { checkpointLog, restoreLog } from "./log-checkpoint.js";
import { planCheckpoint, restorePlan } from "./plan-checkpoint.js";

const text = (t: string) => ({ type: "text" as const, text: t });

function thread(n: number): ThreadLog {
  const inputs: MessageInput[] = [];
  for (let i = 0; i < n; i++) {
    inputs.push({ id: `u${i}`, role: "user", parts: [text(`question ${i}`)] });
    inputs.push({ id: `a${i}`, role: "assistant", parts: [text(`answer ${i}`)] });
  }
  return ThreadLog.from("t", inputs);
}

const ids = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => [`u${from + i}`, `a${from + i}`]).flat();

describe("plan checkpoints", () => {
  const log = thread(40);
  const cleared = Array.from({ length: 300 }, (_, i) => ({
    messageId: `a${i}`,
    callId: "c",
    toolName: "x",
    chars: i,
  }));
  const actions: PlanAction[] = [
    // Retired below: the summary takes all of it.
    { kind: "clear", span: ids(0, 5), record: { kind: "clear", cleared }, strategy: "s", reason: "r" },
    {
      kind: "summarize",
      span: ids(0, 20),
      record: { kind: "summarize", summary: "S", summarizerId: "x", promptVersion: "1" },
      strategy: "sum",
      reason: "r",
    },
    {
      kind: "clear",
      span: ["a22", "a25", "a30"],
      record: {
        kind: "clear",
        clearArgs: true,
        cleared,
        excerpts: [
          { messageId: "a22", text: `head\n${"x".repeat(2000)}\ntail` },
          { messageId: "a25", partIndex: 0, text: "short" },
        ],
      },
      strategy: "s",
      reason: "r",
    },
    { kind: "drop", span: ids(20, 22), record: { kind: "drop", reason: "d" }, strategy: "f", reason: "r" },
  ];
  const plan = extendPlan(emptyPlan("t"), actions, log.length);

  it("restores the same plan, with the resolution a fresh resolve finds, decoding retired actions only when read", () => {
    const made = planCheckpoint(plan, log)!;
    expect(made.plan.actions[0]).toEqual({ kind: "clear", retired: 0 });
    // Audit lists travel in the tail; excerpts (what the renderer shows) stay in the header whatever their size.
    expect(made.deferred.map((d) => [d.action, d.field])).toEqual([
      [0, "cleared"],
      [2, "cleared"],
    ]);
    expect(made.plan.actions[2]).toMatchObject({
      record: { excerpts: actions[2]!.record.kind === "clear" ? actions[2]!.record.excerpts : [] },
    });
    const checked = checkpointLog(
      log,
      Array.from({ length: log.groupCount }, (_, g) => g),
    )!;
    const at = restoreLog(checked.checkpoint, log.messages, () => checked.absentIds);
    let decoded = 0;
    const lazy = JSON.parse(JSON.stringify({ retired: made.retired, deferred: made.deferred }));
    const restored = restorePlan(
      "t",
      JSON.parse(JSON.stringify(made.plan)),
      at,
      () => {
        decoded++;
        return lazy.retired;
      },
      () => lazy.deferred,
    );
    const seeded = resolveForLog(restored, at);
    expect(decoded).toBe(0);
    expect(firstSpanId(restored.actions[1]!)).toBe("u0");
    const fresh = resolveForLog(
      parsePlan(JSON.parse(serializePlan(plan))),
      ThreadLog.fromTrusted("t", log.messages),
    );
    expect(Array.from(seeded.actionAt)).toEqual(Array.from(fresh.actionAt));
    expect(Array.from(seeded.governed)).toEqual(Array.from(fresh.governed));
    expect(Array.from(seeded.dropRuns)).toEqual(Array.from(fresh.dropRuns));
    expect(decoded).toBe(0);
    // Read whole, it is the stored plan.
    expect(serializePlan(restored)).toBe(serializePlan(plan));
    expect(decoded).toBe(1);
  });

  it("keeps a restored plan's seeded resolution while descendants are resolved (a flat one needs the tail)", () => {
    const made = planCheckpoint(plan, log)!;
    const checked = checkpointLog(
      log,
      Array.from({ length: log.groupCount }, (_, g) => g),
    )!;
    const at = restoreLog(checked.checkpoint, log.messages, () => checked.absentIds);
    const noTail = () => {
      throw new Error("the tail was read");
    };
    const restored = restorePlan("t", JSON.parse(JSON.stringify(made.plan)), at, noTail, noTail);
    const seeded = resolveForLog(restored, at);
    // Three generations on top: resolving each drops the memo of its grandparent, but never a seeded one.
    let child = restored;
    for (const id of ["a30", "a31", "a32"]) {
      child = extendPlan(
        child,
        [{ kind: "clear", span: [id], record: { kind: "clear" }, strategy: "s", reason: "r" }],
        log.length,
      );
      resolveForLog(child, at);
    }
    expect(resolveForLog(restored, at)).toBe(seeded);
    const sibling = extendPlan(
      restored,
      [{ kind: "drop", span: ["u39"], record: { kind: "drop", reason: "d" }, strategy: "f", reason: "r" }],
      log.length,
    );
    expect(resolveForLog(sibling, at).decisions).toHaveLength(restored.actions.length + 1);
  });

  it("makes no checkpoint of a span out of log order", () => {
    const odd = extendPlan(
      emptyPlan("t"),
      [{ kind: "clear", span: ["a3", "a1"], record: { kind: "clear" }, strategy: "s", reason: "r" }],
      log.length,
    );
    expect(planCheckpoint(odd, log)).toBeUndefined();
  });
});
