import fc from "fast-check";
import { describe, expect, expectTypeOf, it } from "vitest";
import type * as z from "zod";
import { arbitraryBatches, fcParams } from "../../test/support/arbitrary-log.js";
import { call, result, text, validationError } from "../../test/support/builders.js";
import { simpleCounter } from "../../test/support/simple-counter.js";
import { renderHistory, runStrategy } from "../../test/support/strategy-context.js";
import {
  answers,
  asks,
  describeProposalsOnTrajectories,
  replayBatches,
  user,
} from "../../test/support/strategy-fixtures.js";
import type { MessageInput } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import { type CompactionPlan, emptyPlan, extendPlan } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog } from "../plan/resolve-for-log.js";
import { validatePlan } from "../plan/validate-plan.js";
import type { Proposal } from "./strategy.js";
import {
  clipText,
  collapseLine,
  createToolResultCollapse,
  firstMeaningfulLine,
  type ToolResultCollapseOptions,
  type toolResultCollapseOptionsSchema,
} from "./tool-result-collapse.js";

// ---------------------------------------------------------------------------------------------------------------
// builders

const counter = simpleCounter();
const pad = "\n" + "detail ".repeat(60);
/** One call of `tool` answered by one tool message: ids `a<n>` and `r<n>`. */
const step = (
  n: number,
  tool = "search",
  content = `found ${n}${pad}`,
  isError?: boolean,
): MessageInput[] => [
  asks(`a${n}`, [call(`c${n}`, `{"q":${n}}`, tool)]),
  answers(`r${n}`, [result(`c${n}`, content, isError)]),
];
const steps = (...ns: number[]): MessageInput[] => ns.flatMap((n) => step(n));

async function run(
  options: ToolResultCollapseOptions,
  log: ThreadLog,
  plan: CompactionPlan = emptyPlan(log.threadId),
): Promise<{ proposal: Proposal; plan: CompactionPlan }> {
  const out = await runStrategy(createToolResultCollapse(options), log, plan);
  expect(validatePlan(out.plan, log)).toEqual([]);
  expect(renderHistory(log, out.plan, counter).tokenCount).toBeLessThanOrEqual(
    renderHistory(log, plan, counter).tokenCount,
  );
  return out;
}

const spans = (p: Proposal) => p.actions.map((a) => a.span.join(","));
const lines = (p: Proposal) => p.actions.map((a) => (a.record.kind === "summarize" ? a.record.summary : ""));

// ---------------------------------------------------------------------------------------------------------------

describe("createToolResultCollapse options", () => {
  it.each([
    [{ keepGroups: 0 }, "keepGroups"],
    [{ keepGroups: -1 }, "keepGroups"],
    [{ keepGroups: 1.5 }, "keepGroups"],
    [{ maxLineChars: 10 }, "maxLineChars"],
    [{ maxItemChars: 0 }, "maxItemChars"],
    [{ minGroupTokens: -5 }, "minGroupTokens"],
    [{ trigger: { groups: -1 } }, "trigger.groups"],
    [{ trigger: { usage: 0.5 } }, "trigger.usage"],
    [{ keep: 2 }, "keep"],
    [{ name: "  " }, "name"],
  ])("rejects %j naming %s", (options, field) => {
    const error = validationError(() => createToolResultCollapse(options as ToolResultCollapseOptions));
    expect(error.where.field).toBe(field);
    expect(error.message).toContain(`toolResultCollapse option ${field}`);
  });

  it("declares itself free, proposing summaries only", () => {
    expect(createToolResultCollapse()).toMatchObject({
      name: "toolResultCollapse",
      cost: "free",
      kinds: ["summarize"],
    });
    expect(createToolResultCollapse({ name: "collapse" }).name).toBe("collapse");
  });

  it("keeps the schema and the hand-written options type in step", () => {
    expectTypeOf<
      z.input<typeof toolResultCollapseOptionsSchema>
    >().toEqualTypeOf<ToolResultCollapseOptions>();
  });
});

describe("collapsing older tool-call groups", () => {
  const log = ThreadLog.from("t", [
    { id: "s", role: "system", parts: [text("sys")] },
    user("u"),
    ...step(0, "get_weather", `sunny, 18°C${pad}`),
    ...step(1, "get_forecast", `\n   \n\`\`\`\n  rain   Tue  ${pad}`),
    ...step(2, "read_file", `No such file${pad}`, true),
    ...steps(3, 4, 5, 6),
  ]);

  it("turns every group but the last keepGroups into one summarize action with a readable line", async () => {
    const { proposal } = await run({}, log);
    expect(spans(proposal)).toEqual(["a0,r0", "a1,r1", "a2,r2"]);
    expect(lines(proposal)).toEqual([
      "[tool results: get_weather → sunny, 18°C]",
      "[tool results: get_forecast → rain Tue]",
      "[tool results: read_file ✗ No such file]",
    ]);
    expect(proposal.actions[0]).toMatchObject({
      kind: "summarize",
      record: { kind: "summarize", summarizerId: "toolResultCollapse", promptVersion: "collapse/1" },
      strategy: "toolResultCollapse",
    });
    expect(spans((await run({ keepGroups: 6 }, log)).proposal)).toEqual(["a0,r0"]);
  });

  it("is cumulative: running again proposes nothing, a new group collapses exactly one more", async () => {
    const first = await run({}, log);
    const again = await run({}, log, first.plan);
    expect(again.proposal.actions).toEqual([]);
    expect(again.proposal.notes?.[0]?.code).toBe("nothing_to_do");
    const longer = log.append([user("v"), ...step(7)]);
    expect(spans((await run({}, longer, first.plan)).proposal)).toEqual(["a3,r3"]);
  });

  it("is deterministic", async () => {
    expect((await run({}, log)).proposal).toEqual((await run({}, log)).proposal);
  });

  it("waits for more than trigger.groups collapsible groups", async () => {
    const waiting = await run({ trigger: { groups: 3 } }, log);
    expect(waiting.proposal.actions).toEqual([]);
    expect(waiting.proposal.notes?.[0]?.message).toMatch(/3 group\(s\).*more than 3/);
    expect(spans((await run({ trigger: { groups: 2 } }, log)).proposal)).toHaveLength(3);
  });

  it("leaves groups smaller than minGroupTokens, and groups whose line would not be smaller", async () => {
    const small = ThreadLog.from("t", [user("u"), ...step(0, "t", "ok"), ...step(1), ...steps(2, 3, 4, 5)]);
    expect(spans((await run({}, small)).proposal)).toEqual(["a1,r1"]);
    expect((await run({ minGroupTokens: 10_000 }, log)).proposal.actions).toEqual([]);
  });
});

describe("group shapes", () => {
  it("one action for parallel calls with reasoning and a tool message answering several calls", async () => {
    const log = ThreadLog.from("t", [
      user("u"),
      asks("a", [
        { type: "reasoning", text: "plan", signature: "sig" },
        call("x", "{}", "search"),
        call("y", "{}", "read_file"),
        call("z", "{}", "stat"),
      ]),
      answers("rz", [result("z", `size 5${pad}`)]),
      answers("rxy", [result("x", `hit one${pad}`), result("y", "", true)]),
      ...steps(1, 2, 3, 4),
    ]);
    const { proposal } = await run({}, log);
    expect(spans(proposal)).toEqual(["a,rz,rxy"]);
    expect(lines(proposal)).toEqual(["[tool results: search → hit one; read_file ✗ (empty); stat → size 5]"]);
  });

  it("pairs results by the log's pairing when call ids are reused", async () => {
    const log = ThreadLog.from("t", [
      user("u"),
      asks("a0", [call("c", "{}", "first")]),
      answers("r0", [result("c", `one${pad}`)]),
      asks("a1", [call("c", "{}", "second")]),
      answers("r1", [result("c", `two${pad}`)]),
      ...steps(2, 3, 4, 5),
    ]);
    expect(lines((await run({}, log)).proposal)).toEqual([
      "[tool results: first → one]",
      "[tool results: second → two]",
    ]);
  });

  it("never touches pinned or pending groups, nor groups the plan already touched", async () => {
    const log = ThreadLog.from("t", [
      user("u"),
      ...step(0),
      asks("a1", [call("c1", "{}", "search")], { pinned: true }),
      answers("r1", [result("c1", `x${pad}`)]),
      asks("a2", [call("c2", "{}", "search"), call("p", "{}", "search")]),
      answers("r2", [result("c2", `y${pad}`)]),
      ...steps(3, 4),
    ]);
    const cleared = extendPlan(
      emptyPlan("t"),
      [{ kind: "clear", span: ["r3"], record: { kind: "clear" }, strategy: "x", reason: "" }],
      log.length,
    );
    expect(spans((await run({ keepGroups: 1 }, log, cleared)).proposal)).toEqual(["a0,r0"]);
  });
});

describe("line helpers", () => {
  it("firstMeaningfulLine skips blank, markup-only and punctuation-only lines", () => {
    expect(firstMeaningfulLine("\n  \n{\n  alpha   beta \n")).toBe("alpha beta");
    expect(firstMeaningfulLine("<returncode>0</returncode>\n<output>\nfile.py\n</output>")).toBe("file.py");
    expect(firstMeaningfulLine("<returncode>0</returncode>\n<output>\n</output>")).toBe(
      "<returncode>0</returncode>",
    );
    expect(firstMeaningfulLine("[]")).toBe("[]");
    expect(firstMeaningfulLine("a < b and c > d")).toBe("a < b and c > d");
  });

  it("clipText never splits a surrogate pair", () => {
    expect(clipText("abcdef", 4)).toBe("abc…");
    expect(clipText("ab cdef", 4)).toBe("ab…");
    expect(clipText("ab😀cd", 4)).toBe("ab…");
    expect(clipText("abc", 3)).toBe("abc");
  });

  it("collapseLine keeps whole items while they fit, then counts the rest", () => {
    const items = ["search → one", "read_file → two", "stat → three"];
    expect(collapseLine(items, 200)).toBe("[tool results: search → one; read_file → two; stat → three]");
    const capped = collapseLine(items, 48);
    expect(capped).toBe("[tool results: search → one; +2 more]");
    expect(collapseLine(["x".repeat(100)], 40)).toHaveLength(40);
  });

  it("caps items at maxItemChars and the whole line at maxLineChars", async () => {
    const log = ThreadLog.from("t", [
      user("u"),
      asks("a", [call("x", "{}", "search"), call("y", "{}", "search")]),
      answers("r", [result("x", "word ".repeat(100)), result("y", "more ".repeat(100))]),
      ...steps(1, 2, 3, 4),
    ]);
    const [line] = lines((await run({ maxItemChars: 20 }, log)).proposal);
    expect(line).toBe("[tool results: search → word word…; search → more more…]");
    const [short] = lines((await run({ maxLineChars: 40 }, log)).proposal);
    expect(short!.length).toBeLessThanOrEqual(40);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// properties and real runs

describe("on random logs", () => {
  it("turn by turn: summaries validate, cover whole tool-call groups, never system/pending/pinned ones", async () => {
    const options = fc.constantFrom<ToolResultCollapseOptions>(
      {},
      { keepGroups: 1 },
      { keepGroups: 1, maxLineChars: 32, maxItemChars: 5 },
      { keepGroups: 2, trigger: { groups: 1 } },
    );
    await fc.assert(
      fc.asyncProperty(arbitraryBatches(), options, async (batches, o) => {
        await replayBatches(
          batches,
          (log, plan) => run(o, log, plan),
          (log, plan) => {
            const resolution = resolveForLog(plan, log);
            for (const group of log.groups) {
              const touched = group.seqs.filter((seq) => decisionAt(resolution, seq) !== undefined);
              if (touched.length === 0) continue;
              expect(touched).toEqual(group.seqs);
              expect(group.kind).toBe("tool_call");
              expect(group.pending).toBe(false);
              expect(group.seqs.some((seq) => log.at(seq)!.meta.pinned === true)).toBe(false);
            }
          },
        );
      }),
      fcParams(150),
    );
  });
});

describeProposalsOnTrajectories(() =>
  [{}, { keepGroups: 1, maxLineChars: 80 }].map((options) => createToolResultCollapse(options)),
);
