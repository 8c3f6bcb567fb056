import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { arbitraryLogAndPlan, fcParams } from "../../test/support/arbitrary-log.js";
import { call, records, result, text, validationError } from "../../test/support/builders.js";
import { simpleCounter } from "../../test/support/simple-counter.js";
import { renderHistory } from "../../test/support/strategy-context.js";
import {
  chatTurn,
  checkedStep,
  checkWindowRun,
  describeTrajectories,
  keptIds,
  replayTrajectory,
} from "../../test/support/strategy-fixtures.js";
import { importTranscript } from "../log/import-jsonl.js";
import type { MessageInput } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import { createPlan, emptyPlan, type PlanAction } from "../plan/compaction-plan.js";
import {
  createSlidingWindow,
  type SlidingWindowOptions,
  slidingWindowOptionsSchema,
} from "./sliding-window.js";
import { lastUserGroup } from "./window-trigger.js";

const counter = simpleCounter();

function chat(turns: number): ThreadLog {
  const inputs: MessageInput[] = [{ id: "sys", role: "system", parts: [text("be brief")] }];
  for (let k = 1; k <= turns; k++) inputs.push(...chatTurn(k));
  return ThreadLog.from("t", inputs);
}

describe("createSlidingWindow options", () => {
  it("rejects bad values and unknown keys, naming the field", () => {
    const cases: Array<[unknown, string]> = [
      [{}, "keepGroups"],
      [{ keepGroups: 0 }, "keepGroups"],
      [{ keepGroups: -2 }, "keepGroups"],
      [{ keepGroups: 1.5 }, "keepGroups"],
      [{ keepGroups: "3" }, "keepGroups"],
      [{ keepGroups: 3, threshold: -1 }, "threshold"],
      [{ keepGroups: 3, threshold: 0.5 }, "threshold"],
      [{ keepGroups: 3, keepSystem: "no" }, "keepSystem"],
      [{ keepGroups: 3, keepSystem: false }, "keepSystem"],
      [{ keepGroups: 3, keepLast: 2 }, "keepLast"],
      [{ keepGroups: 3, trigger: {} }, "trigger"],
      [{ keepGroups: 3, trigger: { usage: 0 } }, "trigger.usage"],
      [{ keepGroups: 3, trigger: { usage: 2 } }, "trigger.usage"],
      [{ keepGroups: 3, trigger: { turns: 0 } }, "trigger.turns"],
      [{ keepGroups: 3, trigger: { percent: 80 } }, "trigger.percent"],
      [{ keepGroups: 3, name: " " }, "name"],
    ];
    for (const [options, field] of cases) {
      const error = validationError(() => createSlidingWindow(options as SlidingWindowOptions));
      expect(error.where.field, JSON.stringify(options)).toBe(field);
    }
  });

  it("is a free drop strategy named by its options, and the schema round-trips JSON", () => {
    const options = { keepGroups: 2, threshold: 1, keepSystem: true, trigger: { usage: 0.5 }, name: "sw" };
    expect(slidingWindowOptionsSchema.parse(JSON.parse(JSON.stringify(options)))).toEqual(options);
    const strategy = createSlidingWindow(options);
    expect([strategy.name, strategy.cost, strategy.kinds]).toEqual(["sw", "free", ["drop"]]);
    expect(createSlidingWindow({ keepGroups: 1 }).name).toBe("slidingWindow");
  });
});

describe("createSlidingWindow", () => {
  it("keeps the newest groups, the system prompt and the latest user message, in one drop action", async () => {
    const log = chat(4);
    const { proposal, plan } = await checkedStep(createSlidingWindow({ keepGroups: 5 }), log);
    expect(proposal.actions).toHaveLength(1);
    expect(proposal.actions[0]!.span).toEqual(["u1", "a1", "t1", "r1", "u2", "a2", "t2", "r2"]);
    expect(keptIds(log, plan)).toEqual(["sys", "u3", "a3", "t3", "r3", "u4", "a4", "t4", "r4"]);
  });

  it("changes nothing when the window is not full, and nothing new on its own output", async () => {
    const log = chat(2);
    const empty = emptyPlan(log.threadId);
    const quiet = await checkedStep(createSlidingWindow({ keepGroups: 5 }), log, empty);
    expect(quiet.proposal).toEqual({ actions: [] });
    expect(quiet.plan).toBe(empty);
    const strategy = createSlidingWindow({ keepGroups: 1 });
    const first = await checkedStep(strategy, log);
    expect(first.proposal.actions).toHaveLength(1);
    const again = await checkedStep(strategy, log, first.plan);
    expect(again.proposal).toEqual({ actions: [] });
    expect(again.plan).toBe(first.plan);
  });

  it("hysteresis: fires above target + threshold, cuts to the target, then waits for the threshold again", async () => {
    const strategy = createSlidingWindow({ keepGroups: 3, threshold: 2 });
    let log = ThreadLog.from("t", [
      { id: "sys", role: "system", parts: [text("s")] },
      { id: "u", role: "user", parts: [text("go")] },
    ]);
    let plan = emptyPlan("t");
    const fired: number[] = [];
    for (let n = 1; n <= 13; n++) {
      log = log.append([{ id: `x${n}`, role: "assistant", parts: [text(`note ${n}`)] }]);
      const run = await checkedStep(strategy, log, plan);
      if (run.proposal.actions.length > 0) {
        fired.push(n);
        // Cut back to exactly the target: the newest three notes stay.
        expect(keptIds(log, run.plan)).toEqual(["sys", "u", `x${n - 2}`, `x${n - 1}`, `x${n}`]);
      }
      plan = run.plan;
    }
    expect(fired).toEqual([6, 9, 12]);
  });

  it("threshold 0 fires on every group over the target", async () => {
    const strategy = createSlidingWindow({ keepGroups: 2 });
    let log = ThreadLog.from("t", [{ id: "u", role: "user", parts: [text("go")] }]);
    let plan = emptyPlan("t");
    const fired: number[] = [];
    for (let n = 1; n <= 5; n++) {
      log = log.append([{ id: `x${n}`, role: "assistant", parts: [text(`note ${n}`)] }]);
      const run = await checkedStep(strategy, log, plan);
      if (run.proposal.actions.length > 0) fired.push(n);
      plan = run.plan;
    }
    expect(fired).toEqual([3, 4, 5]);
  });

  it("waits for its trigger: usage of the context window, or live message / turn / group counts", async () => {
    const log = chat(3);
    const tokens = renderHistory(log, emptyPlan("t"), counter).tokenCount;
    const byUsage = createSlidingWindow({ keepGroups: 2, trigger: { usage: 0.5 } });
    expect((await checkedStep(byUsage, log, undefined, tokens * 2)).proposal.actions).toHaveLength(0);
    expect((await checkedStep(byUsage, log, undefined, tokens * 2 - 1)).proposal.actions).toHaveLength(1);
    // 13 messages, 10 groups, 3 turns (the system prompt joins turn 0)
    for (const [trigger, fires] of [
      [{ messages: 13 }, false],
      [{ messages: 12 }, true],
      [{ groups: 10 }, false],
      [{ groups: 9 }, true],
      [{ turns: 3 }, false],
      [{ turns: 2 }, true],
    ] as const) {
      const run = await checkedStep(createSlidingWindow({ keepGroups: 2, trigger }), log);
      expect(run.proposal.actions.length > 0, JSON.stringify(trigger)).toBe(fires);
    }
  });

  it("never drops system messages, and refuses keepSystem: false up front (the pipeline would reject it)", async () => {
    const log = ThreadLog.from("t", [
      { id: "sys", role: "system", parts: [text("old instructions")] },
      { id: "pin", role: "system", parts: [text("constraint")], meta: { pinned: true } },
      { id: "u1", role: "user", parts: [text("q")] },
      { id: "mid", role: "system", parts: [text("notice")] },
      { id: "r1", role: "assistant", parts: [text("a")] },
      { id: "u2", role: "user", parts: [text("q2")] },
    ]);
    const keep = await checkedStep(createSlidingWindow({ keepGroups: 1 }), log);
    expect(keptIds(log, keep.plan)).toEqual(["sys", "pin", "mid", "r1", "u2"]);
    // System prompts are protected core: a window that dropped one would have its whole proposal rejected by the
    // pipeline, so the option is refused where it is given, with the field named.
    expect(() => createSlidingWindow({ keepGroups: 1, keepSystem: false })).toThrow(
      /keepSystem: false cannot take effect: system prompts are part of the protected core/,
    );
  });

  it("never drops pinned messages or pending calls, and they do not count against keepGroups", async () => {
    const log = ThreadLog.from("t", [
      { id: "u1", role: "user", parts: [text("remember: tabs")], meta: { pinned: true } },
      { id: "a1", role: "assistant", parts: [call("slow")] },
      { id: "r1", role: "assistant", parts: [text("waiting")] },
      { id: "r2", role: "assistant", parts: [text("still waiting")] },
      { id: "r3", role: "assistant", parts: [text("done waiting")] },
    ]);
    const { plan } = await checkedStep(createSlidingWindow({ keepGroups: 1 }), log);
    expect(keptIds(log, plan)).toEqual(["u1", "a1", "r3"]);
  });

  it("drops tool-call groups whole: reasoning, parallel calls, late results, reused call ids", async () => {
    const log = ThreadLog.from("t", [
      { id: "u1", role: "user", parts: [text("look")] },
      {
        id: "a1",
        role: "assistant",
        parts: [
          { type: "reasoning", text: "both", signature: "sig" },
          call("c1"),
          call("c2", '{"q":1}', "grep"),
        ],
      },
      { id: "t1", role: "tool", parts: [result("c1", "one")] },
      { id: "a2", role: "assistant", parts: [call("c3")] },
      { id: "t2", role: "tool", parts: [result("c3", "three"), result("c2", "two")] },
      { id: "a3", role: "assistant", parts: [call("c1")] },
      { id: "t3", role: "tool", parts: [result("c1", "again")] },
      { id: "r", role: "assistant", parts: [text("ok")] },
      { id: "u2", role: "user", parts: [text("next")] },
    ]);
    const { proposal, plan } = await checkedStep(createSlidingWindow({ keepGroups: 2 }), log);
    // a1 and a2 are fused by t2 (one group); a3+t3 and r are the two kept.
    expect(proposal.actions[0]!.span).toEqual(["u1", "a1", "t1", "a2", "t2"]);
    expect(keptIds(log, plan)).toEqual(["a3", "t3", "r", "u2"]);
  });

  it("drops cleared groups, keeps summarized and externalized ones out of the count, keeps earlier drops", async () => {
    const log = chat(3);
    const actions: PlanAction[] = [
      { kind: "clear", span: ["a1", "t1"], record: records.clear, strategy: "x", reason: "" },
      { kind: "summarize", span: ["u2", "a2", "t2"], record: records.summarize, strategy: "x", reason: "" },
      { kind: "externalize", span: ["r2"], record: records.externalize, strategy: "x", reason: "" },
      { kind: "drop", span: ["u1"], record: records.drop, strategy: "x", reason: "" },
    ];
    const plan = createPlan({ threadId: "t", version: 1, basedOnSeq: log.length, actions });
    const run = await checkedStep(createSlidingWindow({ keepGroups: 2 }), log, plan);
    // Counted: a1+t1 (cleared), r1, a3+t3, r3; u3 is the latest user message.
    expect(run.proposal.actions[0]!.span).toEqual(["a1", "t1", "r1"]);
    expect(keptIds(log, run.plan)).toEqual(["sys", "u2", "a2", "t2", "r2", "u3", "a3", "t3", "r3"]);
  });

  it("property: on random logs and plans the proposal validates, renders no bigger, and leaves the protected alone", async () => {
    const optionsArb = fc.record({
      keepGroups: fc.integer({ min: 1, max: 6 }),
      threshold: fc.integer({ min: 0, max: 3 }),
      keepSystem: fc.constantFrom(true, undefined),
    });
    await fc.assert(
      fc.asyncProperty(arbitraryLogAndPlan(), optionsArb, async ({ log, plan }, options) => {
        const lastUser = lastUserGroup(log);
        await checkWindowRun(createSlidingWindow(options), log, plan, (group) => {
          expect(group.index).not.toBe(lastUser);
          expect(group.kind).not.toBe("system");
        });
      }),
      fcParams(200),
    );
  });
});

describeTrajectories(
  "createSlidingWindow on the real trajectories",
  "turn by turn, every plan validates and the request never grows",
  async (file) => {
    const strategy = createSlidingWindow({ keepGroups: 6, threshold: 4 });
    const { log, plan } = await replayTrajectory(strategy, file);
    expect(log.length).toBe(importTranscript(ThreadLog.empty("x"), file.text).length);
    // A run this long overflows a 6 + 4 group window: the strategy did act.
    if (log.groupCount > 20) expect(plan.actions.length).toBeGreaterThan(0);
  },
);
