import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { arbitraryLogAndPlan, fcParams } from "../../test/support/arbitrary-log.js";
import { call, records, result, text, validationError } from "../../test/support/builders.js";
import { simpleCounter } from "../../test/support/simple-counter.js";
import { runStrategy } from "../../test/support/strategy-context.js";
import { listTrajectories, trajectoriesAvailable } from "../../test/support/trajectories.js";
import { parseTranscript } from "../log/import-jsonl.js";
import type { MessageInput } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import { type CompactionPlan, createPlan, emptyPlan } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog } from "../plan/resolve-for-log.js";
import { validatePlan } from "../plan/validate-plan.js";
import { toProviderRequest, validateProviderRequest } from "../render/provider-rules.js";
import { renderPrompt } from "../render/render-prompt.js";
import {
  createRollingWindow,
  type RollingWindowOptions,
  rollingWindowOptionsSchema,
} from "./rolling-window.js";
import type { Strategy } from "./strategy.js";

const counter = simpleCounter();

function turn(k: number): MessageInput[] {
  return [
    { id: `u${k}`, role: "user", parts: [text(`question ${k}`)] },
    { id: `a${k}`, role: "assistant", parts: [call(`c${k}`)] },
    { id: `t${k}`, role: "tool", parts: [result(`c${k}`, `output ${k}`)] },
    { id: `r${k}`, role: "assistant", parts: [text(`answer ${k}`)] },
  ];
}

const system: MessageInput = { id: "sys", role: "system", parts: [text("be brief")] };

async function step(
  strategy: Strategy,
  log: ThreadLog,
  plan = emptyPlan(log.threadId),
  contextWindow?: number,
) {
  const run = await runStrategy(strategy, log, plan, contextWindow === undefined ? {} : { contextWindow });
  expect(validatePlan(run.plan, log)).toEqual([]);
  renderPrompt(log, run.plan, { counter });
  return run;
}

function kept(log: ThreadLog, plan: CompactionPlan): string[] {
  const resolution = resolveForLog(plan, log);
  return log.messages.filter((m) => decisionAt(resolution, m.seq)?.kind !== "drop").map((m) => m.id);
}

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
    const log = ThreadLog.from("t", [system, ...turn(1), ...turn(2), ...turn(3), ...turn(4)]);
    const { proposal, plan } = await step(createRollingWindow({ keepTurns: 2 }), log);
    expect(proposal.actions).toHaveLength(1);
    expect(kept(log, plan)).toEqual(["sys", "u3", "a3", "t3", "r3", "u4", "a4", "t4", "r4"]);
    expect((await step(createRollingWindow({ keepTurns: 2 }), log, plan)).proposal).toEqual({ actions: [] });
  });

  it("keepTurns 1 keeps only the current turn, even when it is just the new user message", async () => {
    const log = ThreadLog.from("t", [system, ...turn(1), { id: "u2", role: "user", parts: [text("next")] }]);
    const { plan } = await step(createRollingWindow({ keepTurns: 1 }), log);
    expect(kept(log, plan)).toEqual(["sys", "u2"]);
  });

  it("hysteresis: fires above keepTurns + threshold, cuts to keepTurns, then waits", async () => {
    const strategy = createRollingWindow({ keepTurns: 2, threshold: 1 });
    let log = ThreadLog.from("t", [system]);
    let plan = emptyPlan("t");
    const fired: number[] = [];
    for (let k = 1; k <= 8; k++) {
      // Message by message, as a harness appends them.
      for (const input of turn(k)) {
        log = log.append([input]);
        const run = await step(strategy, log, plan);
        if (run.proposal.actions.length > 0) {
          fired.push(k);
          expect(kept(log, run.plan).filter((id) => id.startsWith("u"))).toEqual([`u${k - 1}`, `u${k}`]);
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
    expect(kept(log, (await step(createRollingWindow({ keepTurns: 2 }), log)).plan)).toEqual([
      "a1",
      "u2",
      "t1",
      "r2",
      "u3",
    ]);
    expect(kept(log, (await step(createRollingWindow({ keepTurns: 1 }), log)).plan)).toEqual(["u3"]);
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
    expect((await step(createRollingWindow({ keepTurns: 3 }), log)).proposal).toEqual({ actions: [] });
    const { plan } = await step(createRollingWindow({ keepTurns: 1 }), log);
    expect(kept(log, plan)).toEqual(["u2", "note", "a3", "u4"]);
  });

  it("drops cleared groups but leaves summaries and pointers in place", async () => {
    const log = ThreadLog.from("t", [...turn(1), ...turn(2), ...turn(3)]);
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
    const run = await step(createRollingWindow({ keepTurns: 1 }), log, plan);
    expect(kept(log, run.plan)).toEqual(["u2", "a2", "t2", "r2", "u3", "a3", "t3", "r3"]);
  });

  it("waits for its trigger", async () => {
    const log = ThreadLog.from("t", [system, ...turn(1), ...turn(2), ...turn(3)]);
    expect(
      (await step(createRollingWindow({ keepTurns: 1, trigger: { turns: 3 } }), log)).proposal.actions,
    ).toHaveLength(0);
    expect(
      (await step(createRollingWindow({ keepTurns: 1, trigger: { turns: 2 } }), log)).proposal.actions,
    ).toHaveLength(1);
    const tokens = renderPrompt(log, emptyPlan("t"), { counter }).tokenCount;
    const byUsage = createRollingWindow({ keepTurns: 1, trigger: { usage: 1 } });
    expect((await step(byUsage, log, undefined, tokens)).proposal.actions).toHaveLength(0);
    expect((await step(byUsage, log, undefined, tokens - 1)).proposal.actions).toHaveLength(1);
  });

  it("property: on random logs and plans the proposal validates, renders no bigger, and is cumulative", async () => {
    const optionsArb = fc.record({
      keepTurns: fc.integer({ min: 1, max: 4 }),
      threshold: fc.integer({ min: 0, max: 2 }),
    });
    await fc.assert(
      fc.asyncProperty(arbitraryLogAndPlan(), optionsArb, async ({ log, plan }, options) => {
        const strategy = createRollingWindow(options);
        const before = renderPrompt(log, plan, { counter }).tokenCount;
        const run = await step(strategy, log, plan);
        expect(renderPrompt(log, run.plan, { counter }).tokenCount).toBeLessThanOrEqual(before);
        const was = resolveForLog(plan, log);
        const now = resolveForLog(run.plan, log);
        for (const m of log.messages) {
          const old = decisionAt(was, m.seq)?.kind ?? "include";
          const next = decisionAt(now, m.seq)?.kind ?? "include";
          if (old !== "include" && old !== "clear") expect(next).toBe(old);
          if (next === "drop" && old !== "drop") {
            const group = log.groupAt(log.groupIndexOf(m.seq));
            expect(group.pending || group.kind === "system").toBe(false);
            expect(group.seqs.some((s) => log.at(s)!.meta.pinned === true)).toBe(false);
            // The newest turn always stays.
            expect(group.seqs.every((s) => s < log.turns.at(-1)!.startSeq)).toBe(true);
          }
        }
        expect((await step(strategy, log, run.plan)).proposal).toEqual({ actions: [] });
      }),
      fcParams(200),
    );
  });
});

describe.skipIf(!trajectoriesAvailable)("createRollingWindow on the real trajectories", () => {
  for (const file of listTrajectories()) {
    it(`${file.name}: turn by turn, every plan validates and the request never grows`, async () => {
      const strategy = createRollingWindow({ keepTurns: 1, threshold: 1 });
      let log = ThreadLog.empty(file.name);
      let plan = emptyPlan(log.threadId);
      for (const input of parseTranscript(file.text)) {
        log = log.append([input]);
        const before = renderPrompt(log, plan, { counter }).tokenCount;
        plan = (await step(strategy, log, plan)).plan;
        expect(renderPrompt(log, plan, { counter }).tokenCount).toBeLessThanOrEqual(before);
      }
      const prompt = renderPrompt(log, plan, { counter });
      for (const format of ["openai", "responses", "anthropic"] as const) {
        expect(validateProviderRequest(format, toProviderRequest(format, prompt)), format).toEqual([]);
      }
    });
  }
});
