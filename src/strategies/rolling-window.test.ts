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
import type { MessageInput } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import { createPlan, emptyPlan } from "../plan/compaction-plan.js";
import {
  createRollingWindow,
  type RollingWindowOptions,
  rollingWindowOptionsSchema,
} from "./rolling-window.js";

const counter = simpleCounter();

const system: MessageInput = { id: "sys", role: "system", parts: [text("be brief")] };

describe("createRollingWindow options", () => {
  it("rejects bad values and unknown keys, naming the field", () => {
    const cases: Array<[unknown, string]> = [
      [{}, "keepTurns"],
      [{ keepTurns: 0 }, "keepTurns"],
      [{ keepTurns: -1 }, "keepTurns"],
      [{ keepTurns: 2.5 }, "keepTurns"],
      [{ keepTurns: 2, threshold: -3 }, "threshold"],
      [{ keepTurns: 2, threshold: 1.5 }, "threshold"],
      [{ keepTurns: 2, turns: 3 }, "turns"],
      [{ keepTurns: 2, trigger: {} }, "trigger"],
      [{ keepTurns: 2, trigger: { groups: -1 } }, "trigger.groups"],
      [{ keepTurns: 2, trigger: { usage: 1.2 } }, "trigger.usage"],
    ];
    for (const [options, field] of cases) {
      const error = validationError(() => createRollingWindow(options as RollingWindowOptions));
      expect(error.where.field, JSON.stringify(options)).toBe(field);
    }
  });

  it("is a free drop strategy, and the schema round-trips JSON", () => {
    const options = { keepTurns: 3, threshold: 2, trigger: { turns: 8 }, name: "rw" };
    expect(rollingWindowOptionsSchema.parse(JSON.parse(JSON.stringify(options)))).toEqual(options);
    const strategy = createRollingWindow(options);
    expect([strategy.name, strategy.cost, strategy.kinds]).toEqual(["rw", "free", ["drop"]]);
  });
});

describe("createRollingWindow", () => {
  it("keeps the last turns whole and the system prompt, dropping older turns in one action", async () => {
    const log = ThreadLog.from("t", [system, ...chatTurn(1), ...chatTurn(2), ...chatTurn(3), ...chatTurn(4)]);
    const { proposal, plan } = await checkedStep(createRollingWindow({ keepTurns: 2 }), log);
    expect(proposal.actions).toHaveLength(1);
    expect(keptIds(log, plan)).toEqual(["sys", "u3", "a3", "t3", "r3", "u4", "a4", "t4", "r4"]);
    expect((await checkedStep(createRollingWindow({ keepTurns: 2 }), log, plan)).proposal).toEqual({
      actions: [],
    });
  });

  it("keepTurns 1 keeps only the current turn, even when it is just the new user message", async () => {
    const log = ThreadLog.from("t", [
      system,
      ...chatTurn(1),
      { id: "u2", role: "user", parts: [text("next")] },
    ]);
    const { plan } = await checkedStep(createRollingWindow({ keepTurns: 1 }), log);
    expect(keptIds(log, plan)).toEqual(["sys", "u2"]);
  });

  it("hysteresis: fires above keepTurns + threshold, cuts to keepTurns, then waits", async () => {
    const strategy = createRollingWindow({ keepTurns: 2, threshold: 1 });
    let log = ThreadLog.from("t", [system]);
    let plan = emptyPlan("t");
    const fired: number[] = [];
    for (let k = 1; k <= 8; k++) {
      // Message by message, as a harness appends them.
      for (const input of chatTurn(k)) {
        log = log.append([input]);
        const run = await checkedStep(strategy, log, plan);
        if (run.proposal.actions.length > 0) {
          fired.push(k);
          expect(keptIds(log, run.plan).filter((id) => id.startsWith("u"))).toEqual([`u${k - 1}`, `u${k}`]);
        }
        plan = run.plan;
      }
    }
    expect(fired).toEqual([4, 6, 8]);
  });

  it("a call whose result arrived in a later turn belongs to that turn", async () => {
    const log = ThreadLog.from("t", [
      { id: "u1", role: "user", parts: [text("start")] },
      {
        id: "a1",
        role: "assistant",
        parts: [{ type: "reasoning", text: "hm", signature: "s" }, call("c1"), call("c2")],
      },
      { id: "u2", role: "user", parts: [text("meanwhile")] },
      { id: "t1", role: "tool", parts: [result("c1", "late"), result("c2", "later")] },
      { id: "r2", role: "assistant", parts: [text("ok")] },
      { id: "u3", role: "user", parts: [text("now")] },
    ]);
    expect(keptIds(log, (await checkedStep(createRollingWindow({ keepTurns: 2 }), log)).plan)).toEqual([
      "a1",
      "u2",
      "t1",
      "r2",
      "u3",
    ]);
    expect(keptIds(log, (await checkedStep(createRollingWindow({ keepTurns: 1 }), log)).plan)).toEqual([
      "u3",
    ]);
  });

  it("never drops pinned messages, pending calls or system messages; a turn left with only those does not count", async () => {
    const log = ThreadLog.from("t", [
      { id: "u1", role: "user", parts: [text("a")] },
      { id: "r1", role: "assistant", parts: [text("b")] },
      { id: "u2", role: "user", parts: [text("rule")], meta: { pinned: true } },
      { id: "note", role: "system", parts: [text("notice")] },
      { id: "u3", role: "user", parts: [text("c")] },
      { id: "a3", role: "assistant", parts: [call("slow")] },
      { id: "u4", role: "user", parts: [text("d")] },
    ]);
    // Counted turns: 0 (u1, r1), 2 (u3), 3 (u4); turn 1 holds only pinned and system content.
    expect((await checkedStep(createRollingWindow({ keepTurns: 3 }), log)).proposal).toEqual({ actions: [] });
    const { plan } = await checkedStep(createRollingWindow({ keepTurns: 1 }), log);
    expect(keptIds(log, plan)).toEqual(["u2", "note", "a3", "u4"]);
  });

  it("drops cleared groups but leaves summaries and pointers in place", async () => {
    const log = ThreadLog.from("t", [...chatTurn(1), ...chatTurn(2), ...chatTurn(3)]);
    const plan = createPlan({
      threadId: "t",
      version: 1,
      basedOnSeq: log.length,
      actions: [
        { kind: "clear", span: ["a1", "t1"], record: records.clear, strategy: "x", reason: "" },
        {
          kind: "summarize",
          span: ["u2", "a2", "t2", "r2"],
          record: records.summarize,
          strategy: "x",
          reason: "",
        },
      ],
    });
    const run = await checkedStep(createRollingWindow({ keepTurns: 1 }), log, plan);
    expect(keptIds(log, run.plan)).toEqual(["u2", "a2", "t2", "r2", "u3", "a3", "t3", "r3"]);
  });

  it("waits for its trigger", async () => {
    const log = ThreadLog.from("t", [system, ...chatTurn(1), ...chatTurn(2), ...chatTurn(3)]);
    expect(
      (await checkedStep(createRollingWindow({ keepTurns: 1, trigger: { turns: 3 } }), log)).proposal.actions,
    ).toHaveLength(0);
    expect(
      (await checkedStep(createRollingWindow({ keepTurns: 1, trigger: { turns: 2 } }), log)).proposal.actions,
    ).toHaveLength(1);
    const tokens = renderHistory(log, emptyPlan("t"), counter).tokenCount;
    const byUsage = createRollingWindow({ keepTurns: 1, trigger: { usage: 1 } });
    expect((await checkedStep(byUsage, log, undefined, tokens)).proposal.actions).toHaveLength(0);
    expect((await checkedStep(byUsage, log, undefined, tokens - 1)).proposal.actions).toHaveLength(1);
  });

  it("property: on random logs and plans the proposal validates, renders no bigger, and is cumulative", async () => {
    const optionsArb = fc.record({
      keepTurns: fc.integer({ min: 1, max: 4 }),
      threshold: fc.integer({ min: 0, max: 2 }),
    });
    await fc.assert(
      fc.asyncProperty(arbitraryLogAndPlan(), optionsArb, async ({ log, plan }, options) => {
        await checkWindowRun(createRollingWindow(options), log, plan, (group) => {
          expect(group.kind).not.toBe("system");
          // The newest turn always stays.
          expect(group.seqs.every((s) => s < log.turns.at(-1)!.startSeq)).toBe(true);
        });
      }),
      fcParams(200),
    );
  });
});

describeTrajectories(
  "createRollingWindow on the real trajectories",
  "turn by turn, every plan validates and the request never grows",
  async (file) => {
    const strategy = createRollingWindow({ keepTurns: 1, threshold: 1 });
    await replayTrajectory(strategy, file);
  },
);
