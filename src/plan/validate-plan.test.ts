import { describe, expect, it } from "vitest";
import { records, text } from "../../test/support/builders.js";
import { PlanValidationError } from "../errors/ledger-error.js";
import type { MessageInput, Part } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import {
  type ActionKind,
  type ClearExcerpt,
  type CompactionPlan,
  createPlan,
  emptyPlan,
  extendPlan,
  type PlanAction,
} from "./compaction-plan.js";
import { assertPlanValid, type PlanProblem, validatePlan } from "./validate-plan.js";

const call = (callId: string): Part => ({ type: "tool_call", callId, name: "search", args: "{}" });
const result = (callId: string): Part => ({ type: "tool_result", callId, content: "out" });
const user = (id: string): MessageInput => ({ id, role: "user", parts: [text(id)] });
const assistant = (id: string, ...parts: Part[]): MessageInput => ({ id, role: "assistant", parts });
const tool = (id: string, ...parts: Part[]): MessageInput => ({ id, role: "tool", parts });

function act<K extends ActionKind>(kind: K, span: string[]): PlanAction {
  return { kind, span, record: records[kind], strategy: "test", reason: "" } as PlanAction;
}

/** u1; a1 calls c1 and c2 (t1 answers c1, t2 after u2 answers c2); u2; a3 calls c3 (pending). */
const log = ThreadLog.from("t", [
  { id: "s", role: "system", parts: [text("rules")] },
  user("u1"),
  assistant("a1", text("two"), call("c1"), call("c2")),
  tool("t1", result("c1")),
  user("u2"),
  tool("t2", result("c2")),
  assistant("a2", text("done")),
  assistant("a3", call("c3")),
]);

const planOf = (...actions: PlanAction[]): CompactionPlan =>
  createPlan({ threadId: "t", version: 1, basedOnSeq: log.length, actions });
const codes = (problems: ReadonlyArray<PlanProblem>) => problems.map((p) => p.code);

describe("validatePlan: valid plans", () => {
  it("accepts the empty plan and plans that keep or remove whole groups", () => {
    expect(validatePlan(emptyPlan("t"), log)).toEqual([]);
    expect(validatePlan(planOf(act("drop", ["a1", "t1", "t2"])), log)).toEqual([]);
    expect(validatePlan(planOf(act("summarize", ["u1", "a1", "t1", "u2", "t2"])), log)).toEqual([]);
    expect(validatePlan(planOf(act("clear", ["t1"]), act("include", ["a2"])), log)).toEqual([]);
  });

  it("accepts a group removed by different removal actions (drop + summarize + externalize)", () => {
    expect(
      validatePlan(planOf(act("summarize", ["a1"]), act("drop", ["t1"]), act("externalize", ["t2"])), log),
    ).toEqual([]);
  });

  it("accepts a partial removal that a wider removal overrides", () => {
    expect(
      validatePlan(planOf(act("clear", ["a1", "t1", "t2"]), act("drop", ["a1", "t1", "t2"])), log),
    ).toEqual([]);
  });

  it("accepts include on a pending call", () => {
    expect(validatePlan(planOf(act("include", ["a3"])), log)).toEqual([]);
  });
});

describe("validatePlan: problems", () => {
  it("reports a plan of another thread and nothing else", () => {
    const problems = validatePlan(createPlan({ ...planOf(act("drop", ["nope"])), threadId: "x" }), log);
    expect(codes(problems)).toEqual(["thread_mismatch"]);
  });

  it("reports a plan based on a longer log", () => {
    const problems = validatePlan(createPlan({ ...emptyPlan("t"), basedOnSeq: log.length + 1 }), log);
    expect(codes(problems)).toEqual(["based_on_future"]);
  });

  it("reports unknown ids with the action and the id", () => {
    const problems = validatePlan(planOf(act("clear", ["u1"]), act("drop", ["ghost", "u2", "phantom"])), log);
    expect(problems.map((p) => [p.code, p.actionIndex, p.messageId])).toEqual([
      ["unknown_id", 1, "ghost"],
      ["unknown_id", 1, "phantom"],
    ]);
    expect(problems[0]!.message).toContain("ghost");
  });

  it("reports ids at or after basedOnSeq", () => {
    const plan = createPlan({
      threadId: "t",
      version: 1,
      basedOnSeq: 2,
      actions: [act("clear", ["u1", "u2"])],
    });
    const problems = validatePlan(plan, log);
    expect(problems.map((p) => [p.code, p.messageId])).toEqual([["future_id", "u2"]]);
  });

  it("reports an id named twice in one span", () => {
    expect(codes(validatePlan(planOf(act("clear", ["u1", "u1"])), log))).toEqual(["duplicate_in_span"]);
  });

  it("does not report an id named by two different actions", () => {
    expect(validatePlan(planOf(act("clear", ["u1"]), act("clear", ["u1"])), log)).toEqual([]);
  });

  it("reports a record that does not match its action", () => {
    const wrong = { kind: "summarize", span: ["u1"], record: records.drop, strategy: "x", reason: "" };
    const problems = validatePlan(planOf(wrong as unknown as PlanAction), log);
    expect(problems.map((p) => [p.code, p.actionIndex])).toEqual([["record_mismatch", 0]]);
  });

  it("reports removing a call but keeping its results", () => {
    const problems = validatePlan(planOf(act("drop", ["a1"])), log);
    expect(codes(problems)).toEqual(["orphaning_split"]);
    expect(problems[0]!.messageId).toBe("a1");
    expect(problems[0]!.message).toContain("t1");
  });

  it("reports removing a non-adjacent result but keeping its call", () => {
    expect(codes(validatePlan(planOf(act("summarize", ["t2"])), log))).toEqual(["orphaning_split"]);
  });

  it("reports a clear that keeps a call whose results a drop removed", () => {
    expect(codes(validatePlan(planOf(act("clear", ["a1"]), act("drop", ["t1", "t2"])), log))).toEqual([
      "orphaning_split",
    ]);
  });

  it("reports a split of a group fused by a tool message answering two assistant messages", () => {
    const fused = ThreadLog.from("t", [
      assistant("x1", call("c1")),
      assistant("x2", call("c2")),
      tool("r", result("c1"), result("c2")),
    ]);
    const p = (span: string[]) =>
      createPlan({ threadId: "t", version: 1, basedOnSeq: 3, actions: [act("drop", span)] });
    expect(codes(validatePlan(p(["x1", "r"]), fused))).toEqual(["orphaning_split"]);
    expect(validatePlan(p(["x1", "x2", "r"]), fused)).toEqual([]);
  });

  it("reports any action but include on a pending call or its group", () => {
    for (const kind of ["clear", "summarize", "externalize", "drop"] as const) {
      const problems = validatePlan(planOf(act(kind, ["a3"])), log);
      expect(problems.map((p) => [p.code, p.messageId])).toEqual([["pending_call_touched", "a3"]]);
    }
    const partly = ThreadLog.from("t", [assistant("a", call("c1"), call("c2")), tool("r", result("c1"))]);
    const plan = createPlan({ threadId: "t", version: 1, basedOnSeq: 2, actions: [act("clear", ["r"])] });
    expect(codes(validatePlan(plan, partly))).toEqual(["pending_call_touched"]);
  });

  it("reports every problem, not only the first", () => {
    const problems = validatePlan(planOf(act("drop", ["ghost"]), act("clear", ["u1", "u1"])), log);
    expect(codes(problems).sort()).toEqual(["duplicate_in_span", "unknown_id"]);
  });
});

describe("validatePlan as the log grows", () => {
  it("a valid plan stays valid when the log grows, including when a pending call gets its result", () => {
    const plan = planOf(act("drop", ["a1", "t1", "t2"]), act("include", ["a3"]));
    expect(validatePlan(plan, log)).toEqual([]);
    const grown = log.append([tool("t3", result("c3")), user("u3")]);
    expect(validatePlan(plan, grown)).toEqual([]);
  });

  it("reasoning ending the log is pending: a plan touching it is refused, so the calls joining it break nothing", () => {
    const thought: Part = { type: "reasoning", text: "look it up", signature: "sig" };
    const streamed = ThreadLog.from("t", [user("u1"), assistant("r1", thought)]);
    expect(streamed.groupAt(1).pending).toBe(true);
    for (const kind of ["drop", "summarize", "clear"] as const) {
      const touching = createPlan({ threadId: "t", version: 1, basedOnSeq: 2, actions: [act(kind, ["r1"])] });
      expect(codes(validatePlan(touching, streamed))).toEqual(["pending_call_touched"]);
      expect(codes(validatePlan(extendPlan(emptyPlan("t"), [act(kind, ["r1"])], 2), streamed))).toEqual([
        "pending_call_touched",
      ]);
    }
    // The calls arrive: the reasoning opens their group, which a valid plan keeps or removes whole.
    const joined = streamed.append([assistant("a1", call("c1")), tool("t1", result("c1"))]);
    expect(joined.groupAt(1).seqs).toEqual([1, 2, 3]);
    const whole = createPlan({
      threadId: "t",
      version: 1,
      basedOnSeq: 4,
      actions: [act("drop", ["r1", "a1", "t1"])],
    });
    expect(validatePlan(whole, joined)).toEqual([]);
    // Anything else arrives: the reasoning is settled on its own and may be compacted.
    const settled = streamed.append([user("u2")]);
    expect(settled.groupAt(1).pending).toBe(false);
    const drop = createPlan({ threadId: "t", version: 1, basedOnSeq: 3, actions: [act("drop", ["r1"])] });
    expect(validatePlan(drop, settled)).toEqual([]);
  });

  it("a plan valid for a long log is checked again on a shorter one", () => {
    const plan = planOf(act("drop", ["a1", "t1", "t2"]));
    expect(validatePlan(plan, log)).toEqual([]);
    const short = ThreadLog.from(
      "t",
      log.messages.slice(0, 4).map(({ id, role, parts }) => ({ id, role, parts })),
    );
    expect(codes(validatePlan(plan, short))).toContain("based_on_future");
  });

  it("checks the actions an extended plan adds (incremental path)", () => {
    const parent = planOf(act("clear", ["t1"]));
    expect(validatePlan(parent, log)).toEqual([]);
    expect(validatePlan(extendPlan(parent, [act("drop", ["u2"])], log.length), log)).toEqual([]);
    expect(codes(validatePlan(extendPlan(parent, [act("drop", ["a1"])], log.length), log))).toEqual([
      "orphaning_split",
    ]);
    expect(codes(validatePlan(extendPlan(parent, [act("clear", ["a3"])], log.length), log))).toEqual([
      "pending_call_touched",
    ]);
    expect(codes(validatePlan(extendPlan(parent, [act("drop", ["ghost"])], log.length), log))).toEqual([
      "unknown_id",
    ]);
  });
});

describe("assertPlanValid", () => {
  it("passes a valid plan", () => {
    expect(() => assertPlanValid(planOf(act("drop", ["u1"])), log)).not.toThrow();
  });

  it("throws PlanValidationError listing every problem, located at the thread and first message", () => {
    let error: unknown;
    try {
      assertPlanValid(planOf(act("drop", ["ghost"]), act("clear", ["u1", "u1"])), log);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PlanValidationError);
    const e = error as PlanValidationError;
    expect(e.code).toBe("PLAN_INVALID");
    expect(e.problems).toHaveLength(2);
    expect(e.where).toEqual({ threadId: "t", messageId: "ghost" });
    expect(e.message).toContain("ghost");
  });
});

describe("validatePlan: clear excerpts", () => {
  const clearWith = (span: string[], excerpts: ReadonlyArray<ClearExcerpt>): PlanAction =>
    ({
      kind: "clear",
      span,
      record: { kind: "clear", excerpts },
      strategy: "oversized",
      reason: "",
    }) as PlanAction;

  it("accepts excerpts of result and text parts, and ignores excerpts of messages outside the span", () => {
    const plan = planOf(
      clearWith(
        ["a1", "t1"],
        [
          { messageId: "t2", partIndex: 7, text: "not governed, never shown" },
          { messageId: "t1", text: "head … tail" },
          { messageId: "a1", partIndex: 0, text: "tw" },
        ],
      ),
    );
    expect(validatePlan(plan, log)).toEqual([]);
  });

  it.each([
    [[{ messageId: "t1", partIndex: 3, text: "x" }], "part the message lacks (it has 1)"],
    [[{ messageId: "a1", partIndex: 1, text: "x" }], "names a tool_call part"],
    [
      [
        { messageId: "t1", text: "x" },
        { messageId: "t1", partIndex: 0, text: "y" },
      ],
      "repeats an excerpt of the same part",
    ],
  ])("rejects %j: %s, naming the action, message and part", (excerpts, why) => {
    const problems = validatePlan(planOf(clearWith(["a1", "t1"], excerpts)), log);
    expect(codes(problems)).toEqual(["bad_excerpt"]);
    expect(problems[0]!.message).toContain(why);
    expect(problems[0]!.message).toMatch(
      /^action 0 \(clear by oversized\) excerpt \d \(message \w+, part \d\)/,
    );
    expect(problems[0]!.actionIndex).toBe(0);
  });

  it("checks the excerpts an extended plan adds", () => {
    const base = planOf(act("clear", ["t1"]));
    expect(validatePlan(base, log)).toEqual([]);
    const next = extendPlan(
      base,
      [clearWith(["t1"], [{ messageId: "t1", partIndex: 2, text: "x" }])],
      log.length,
    );
    expect(codes(validatePlan(next, log))).toEqual(["bad_excerpt"]);
  });
});
