import { describe, expect, it } from "vitest";
import { records } from "../../test/support/builders.js";
import { ThreadLog } from "../log/thread-log.js";
import { type ActionKind, createPlan, emptyPlan, type PlanAction } from "./compaction-plan.js";
import { describeFates, FATE_OF, finalStates } from "./final-states.js";
import { decisionAt } from "./resolve-for-log.js";

function act(kind: ActionKind, span: string[]): PlanAction {
  return { kind, span, record: records[kind], strategy: `by-${kind}`, reason: "" } as PlanAction;
}

const ids = ["m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"];
const log = ThreadLog.from(
  "t",
  ids.map((id, i) => ({
    id,
    role: i % 2 === 0 ? ("user" as const) : ("assistant" as const),
    parts: [{ type: "text" as const, text: id }],
  })),
);

describe("finalStates", () => {
  it("counts every message once, under its action after precedence, not by span length", () => {
    // A summary of m1..m5 whose first three messages a later drop takes; a clear under the summary.
    const plan = createPlan({
      threadId: "t",
      version: 1,
      basedOnSeq: 6,
      actions: [
        act("clear", ["m4"]),
        act("summarize", ["m1", "m2", "m3", "m4", "m5"]),
        act("drop", ["m1", "m2", "m3"]),
      ],
    });
    const states = finalStates(log, plan);
    // m6 and m7 were appended after the plan: kept, like m0.
    expect(states.counts).toEqual({ kept: 3, cleared: 0, summarized: 2, externalized: 0, dropped: 3 });
    expect([0, 1, 2].map((i) => states.governedBy(i))).toEqual([0, 2, 3]);
    // The per-seq decisions agree with the counts.
    const perSeq = log.messages.map((m) => FATE_OF[decisionAt(states.resolution, m.seq)?.kind ?? "include"]);
    for (const [fate, n] of Object.entries(states.counts))
      expect(perSeq.filter((f) => f === fate)).toHaveLength(n);
    expect(describeFates(states.counts)).toBe("kept 3, summarized 2, dropped 3");
  });

  it("keeps everything under the empty plan, and explicit includes count as kept", () => {
    expect(finalStates(log, emptyPlan("t")).counts.kept).toBe(8);
    const plan = createPlan({ threadId: "t", version: 1, basedOnSeq: 8, actions: [act("include", ["m0"])] });
    expect(finalStates(log, plan).counts).toEqual({
      kept: 8,
      cleared: 0,
      summarized: 0,
      externalized: 0,
      dropped: 0,
    });
    expect(describeFates(finalStates(log, plan).counts, true)).toBe(
      "kept 8, cleared 0, summarized 0, externalized 0, dropped 0",
    );
  });
});
