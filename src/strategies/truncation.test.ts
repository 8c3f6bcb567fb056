import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { arbitraryLogAndPlan, fcParams } from "../../test/support/arbitrary-log.js";
import { call, records, result, text, validationError } from "../../test/support/builders.js";
import { simpleCounter } from "../../test/support/simple-counter.js";
import { renderHistory } from "../../test/support/strategy-context.js";
import {
  checkedStep,
  checkWindowRun,
  describeTrajectories,
  keptIds,
  replayTrajectory,
} from "../../test/support/strategy-fixtures.js";
import { importTranscript } from "../log/import-jsonl.js";
import { ThreadLog } from "../log/thread-log.js";
import { createPlan, emptyPlan } from "../plan/compaction-plan.js";
import { createTruncation, type TruncationOptions, truncationOptionsSchema } from "./truncation.js";
import { lastUserGroup } from "./window-trigger.js";

const counter = simpleCounter();

/** A system prompt, the task, then `n` tool rounds `a{i}` + `t{i}` (one group each). */
function agentRun(n: number): ThreadLog {
  let log = ThreadLog.from("t", [
    { id: "sys", role: "system", parts: [text("you are an agent")] },
    { id: "task", role: "user", parts: [text("fix the bug")] },
  ]);
  for (let i = 1; i <= n; i++) log = extend(log, i);
  return log;
}

function extend(log: ThreadLog, i: number): ThreadLog {
  return log.append([
    { id: `a${i}`, role: "assistant", parts: [text(`step ${i}`), call(`c${i}`, `{"i":${i}}`)] },
    { id: `t${i}`, role: "tool", parts: [result(`c${i}`, `result ${i} `.repeat(20))] },
  ]);
}

describe("createTruncation options", () => {
  it("rejects bad values and unknown keys, naming the field", () => {
    const cases: Array<[unknown, string]> = [
      [{ keepLast: 2 }, "keepFirst"],
      [{ keepFirst: 1 }, "keepLast"],
      [{ keepFirst: -1, keepLast: 2 }, "keepFirst"],
      [{ keepFirst: 0.5, keepLast: 2 }, "keepFirst"],
      [{ keepFirst: 1, keepLast: 0 }, "keepLast"],
      [{ keepFirst: 1, keepLast: -2 }, "keepLast"],
      [{ keepFirst: 1, keepLast: 2, threshold: -1 }, "threshold"],
      [{ keepFirst: 1, keepLast: 2, keepMiddle: 1 }, "keepMiddle"],
      [{ keepFirst: 1, keepLast: 2, trigger: { usage: 0 } }, "trigger.usage"],
      [{ keepFirst: 1, keepLast: 2, trigger: { messages: 1.5 } }, "trigger.messages"],
    ];
    for (const [options, field] of cases) {
      const error = validationError(() => createTruncation(options as TruncationOptions));
      expect(error.where.field, JSON.stringify(options)).toBe(field);
    }
  });

  it("is a free drop strategy, and the schema round-trips JSON", () => {
    const options = { keepFirst: 0, keepLast: 3, threshold: 2, trigger: { usage: 0.8 }, name: "cut" };
    expect(truncationOptionsSchema.parse(JSON.parse(JSON.stringify(options)))).toEqual(options);
    const strategy = createTruncation(options);
    expect([strategy.name, strategy.cost, strategy.kinds]).toEqual(["cut", "free", ["drop"]]);
  });
});

describe("createTruncation", () => {
  it("keeps the first and the last groups and drops the middle in one action", async () => {
    const log = agentRun(6);
    // The task counts as the first group (and, being the latest user message, is never dropped).
    const { proposal, plan } = await checkedStep(createTruncation({ keepFirst: 2, keepLast: 2 }), log);
    expect(proposal.actions).toHaveLength(1);
    expect(proposal.actions[0]!.span).toEqual(["a2", "t2", "a3", "t3", "a4", "t4"]);
    expect(keptIds(log, plan)).toEqual(["sys", "task", "a1", "t1", "a5", "t5", "a6", "t6"]);
  });

  it("keepFirst 0 keeps only the tail", async () => {
    const log = agentRun(4);
    const { plan } = await checkedStep(createTruncation({ keepFirst: 0, keepLast: 1 }), log);
    expect(keptIds(log, plan)).toEqual(["sys", "task", "a4", "t4"]);
  });

  it("keeps the same head from cut to cut (a stable prefix) and waits for the threshold in between", async () => {
    const strategy = createTruncation({ keepFirst: 2, keepLast: 2, threshold: 2 });
    let log = agentRun(0);
    let plan = emptyPlan("t");
    const fired: number[] = [];
    for (let i = 1; i <= 14; i++) {
      log = extend(log, i);
      const run = await checkedStep(strategy, log, plan);
      if (run.proposal.actions.length > 0) {
        fired.push(i);
        expect(keptIds(log, run.plan)).toEqual([
          "sys",
          "task",
          "a1",
          "t1",
          `a${i - 1}`,
          `t${i - 1}`,
          `a${i}`,
          `t${i}`,
        ]);
      }
      plan = run.plan;
    }
    expect(fired).toEqual([6, 9, 12]);
  });

  it("fires on usage over the share of the context window", async () => {
    const log = agentRun(5);
    const tokens = renderHistory(log, emptyPlan("t"), counter).tokenCount;
    const strategy = createTruncation({ keepFirst: 1, keepLast: 1, trigger: { usage: 0.8 } });
    expect((await checkedStep(strategy, log, undefined, Math.ceil(tokens / 0.8))).proposal).toEqual({
      actions: [],
    });
    const { plan } = await checkedStep(strategy, log, undefined, Math.floor(tokens / 0.8) - 1);
    expect(keptIds(log, plan)).toEqual(["sys", "task", "a5", "t5"]);
  });

  it("never drops system, pinned or pending groups nor the latest user message, and they do not count", async () => {
    const log = ThreadLog.from("t", [
      { id: "u1", role: "user", parts: [text("old")] },
      { id: "r1", role: "assistant", parts: [text("a")] },
      { id: "pin", role: "assistant", parts: [text("key fact")], meta: { pinned: true } },
      { id: "mid", role: "system", parts: [text("notice")] },
      { id: "r2", role: "assistant", parts: [text("b")] },
      { id: "a3", role: "assistant", parts: [call("slow")] },
      { id: "u2", role: "user", parts: [text("now")] },
      { id: "r3", role: "assistant", parts: [text("c")] },
    ]);
    const { plan } = await checkedStep(createTruncation({ keepFirst: 1, keepLast: 1 }), log);
    expect(keptIds(log, plan)).toEqual(["u1", "pin", "mid", "a3", "u2", "r3"]);
  });

  it("drops tool-call groups whole (reasoning, parallel calls, reused call ids) and cleared ones too", async () => {
    const log = ThreadLog.from("t", [
      { id: "u", role: "user", parts: [text("go")] },
      {
        id: "a1",
        role: "assistant",
        parts: [{ type: "reasoning", text: "", redacted: "xx" }, call("c1"), call("c2")],
      },
      { id: "t1", role: "tool", parts: [result("c2", "two")] },
      { id: "t2", role: "tool", parts: [result("c1", "one", true)] },
      { id: "a2", role: "assistant", parts: [call("c1")] },
      { id: "t3", role: "tool", parts: [result("c1", "again")] },
      { id: "r", role: "assistant", parts: [text("done")] },
    ]);
    const cleared = createPlan({
      threadId: "t",
      version: 1,
      basedOnSeq: log.length,
      actions: [{ kind: "clear", span: ["a2", "t3"], record: records.clear, strategy: "x", reason: "" }],
    });
    const { proposal, plan } = await checkedStep(
      createTruncation({ keepFirst: 0, keepLast: 1 }),
      log,
      cleared,
    );
    expect(proposal.actions[0]!.span).toEqual(["a1", "t1", "t2", "a2", "t3"]);
    expect(keptIds(log, plan)).toEqual(["u", "r"]);
    expect((await checkedStep(createTruncation({ keepFirst: 0, keepLast: 1 }), log, plan)).proposal).toEqual({
      actions: [],
    });
  });

  it("property: on random logs and plans the proposal validates, renders no bigger, and is cumulative", async () => {
    const optionsArb = fc.record({
      keepFirst: fc.integer({ min: 0, max: 3 }),
      keepLast: fc.integer({ min: 1, max: 3 }),
      threshold: fc.integer({ min: 0, max: 2 }),
    });
    await fc.assert(
      fc.asyncProperty(arbitraryLogAndPlan(), optionsArb, async ({ log, plan }, options) => {
        const lastUser = lastUserGroup(log);
        await checkWindowRun(createTruncation(options), log, plan, (group) => {
          expect(group.kind).not.toBe("system");
          expect(group.index).not.toBe(lastUser);
        });
      }),
      fcParams(200),
    );
  });
});

describeTrajectories(
  "createTruncation on the real trajectories",
  "turn by turn, every plan validates, the head stays and the request never grows",
  async (file) => {
    const strategy = createTruncation({ keepFirst: 2, keepLast: 6, trigger: { groups: 12 } });
    const { log, plan } = await replayTrajectory(strategy, file);
    const head = log.groups.filter((g) => g.kind !== "system").slice(0, 2);
    for (const id of head.flatMap((g) => g.messageIds)) expect(keptIds(log, plan)).toContain(id);
    // Applied once to the whole run, it gives a valid plan too.
    const whole = importTranscript(ThreadLog.empty(file.name), file.text);
    await checkedStep(strategy, whole);
  },
);
