import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, expectTypeOf, it } from "vitest";
import type * as z from "zod";
import { arbitraryBatches, fcParams } from "../../test/support/arbitrary-log.js";
import { call, result, text, validationError } from "../../test/support/builders.js";
import { simpleCounter } from "../../test/support/simple-counter.js";
import {
  renderHistory,
  runStrategy,
  type StrategyContextOptions,
  strategyContext,
} from "../../test/support/strategy-context.js";
import {
  answers,
  asks,
  describeProposalsOnTrajectories,
  replayBatches,
  user,
} from "../../test/support/strategy-fixtures.js";
import type { MessageInput, MessageMeta } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import { type ClearRecord, type CompactionPlan, emptyPlan, extendPlan } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog } from "../plan/resolve-for-log.js";
import { validatePlan } from "../plan/validate-plan.js";
import { durabilityClasses } from "./durability-classes.js";
import type { Proposal } from "./strategy.js";
import {
  createToolResultRetention,
  DEFAULT_TOOL_POLICY,
  type ToolResultRetentionOptions,
  type toolResultRetentionOptionsSchema,
} from "./tool-result-retention.js";

// ---------------------------------------------------------------------------------------------------------------
// builders

const counter = simpleCounter();

const body = (tag: string, n = 400): string => `${tag}\n${"x".repeat(n)}`;
/** One call of `tool` answered by one tool message: ids `a<n>` (call message) and `r<n>` (result message). */
const step = (n: number, tool = "bash", content = body(`out ${n}`)): MessageInput[] => [
  asks(`a${n}`, [call(`c${n}`, `{"q":${n}}`, tool)]),
  answers(`r${n}`, [result(`c${n}`, content)]),
];

/** Runs the strategy, checks that the extended plan validates and renders, and returns both. */
async function run(
  options: ToolResultRetentionOptions,
  log: ThreadLog,
  plan: CompactionPlan = emptyPlan(log.threadId),
  context: StrategyContextOptions = {},
): Promise<{ proposal: Proposal; plan: CompactionPlan }> {
  const out = await runStrategy(createToolResultRetention(options), log, plan, context);
  expect(validatePlan(out.plan, log)).toEqual([]);
  expect(renderHistory(log, out.plan, counter).messages.length).toBeGreaterThan(0);
  return out;
}

const spans = (p: Proposal) => p.actions.map((a) => [a.kind, ...a.span]);

// ---------------------------------------------------------------------------------------------------------------

describe("createToolResultRetention options", () => {
  it.each([
    [{ default: { keepTurns: -1 } }, "default.keepTurns"],
    [{ default: { keepLast: -2 } }, "default.keepLast"],
    [{ tools: { search: { keepLast: 1.5 } } }, "tools.search.keepLast"],
    [{ tools: { search: { minChars: -1 } } }, "tools.search.minChars"],
    [{ default: { mode: "gentle" } }, "default.mode"],
    [{ defualt: { keepTurns: 2 } }, "defualt"],
    [{ tools: { search: { keepTurn: 2 } } }, "tools.search.keepTurn"],
    [{ durability: { volatile: {} } }, "durability.volatile"],
    [{ durability: { anchoring: { neverEvict: "yes" } } }, "durability.anchoring.neverEvict"],
    [{ name: "" }, "name"],
  ])("rejects %j naming %s", (options, field) => {
    const error = validationError(() => createToolResultRetention(options as ToolResultRetentionOptions));
    expect(error.where.field).toBe(field);
    expect(error.message).toContain(field);
    expect(error.message).toContain("toolResultRetention");
  });

  it("accepts null to switch an inherited limit off, and declares itself free with clear and drop", () => {
    const s = createToolResultRetention({ default: { keepLast: null }, tools: { a: { keepTurns: null } } });
    expect(s).toMatchObject({ name: "toolResultRetention", cost: "free", kinds: ["clear", "drop"] });
    expect(createToolResultRetention({ name: "ret" }).name).toBe("ret");
  });

  it("keeps the schema and the hand-written options type in step", () => {
    expectTypeOf<
      z.input<typeof toolResultRetentionOptionsSchema>
    >().toEqualTypeOf<ToolResultRetentionOptions>();
  });
});

describe("age (keepTurns)", () => {
  // Four turns, one search per turn.
  const log = ThreadLog.from("t", [
    { id: "s", role: "system", parts: [text("sys")] },
    ...[0, 1, 2, 3].flatMap((n) => [user(`u${n}`), ...step(n)]),
  ]);

  it("stubs results older than K turns, in one clear action listing what was cleared", async () => {
    const { proposal } = await run({ default: { keepTurns: 2, keepLast: null } }, log);
    expect(spans(proposal)).toEqual([["clear", "r0", "r1"]]);
    const action = proposal.actions[0]!;
    expect(action.record).toEqual({
      kind: "clear",
      cleared: [
        { messageId: "r0", callId: "c0", toolName: "bash", chars: body("out 0").length },
        { messageId: "r1", callId: "c1", toolName: "bash", chars: body("out 1").length },
      ],
    });
    expect(action.strategy).toBe("toolResultRetention");
    expect(action.reason).toMatch(/2 tool message/);
  });

  it("keepLast 0 keeps none of a tool, and as the default in hard mode removes all answered tool traffic", async () => {
    const mixed = ThreadLog.from("t", [
      user("u0"),
      ...step(0, "noisy"),
      ...step(1, "grep"),
      user("u1"),
      ...step(2, "noisy"),
      asks("a9", [call("c9", "{}", "noisy")]),
    ]);
    // Per tool: every answered result of the noisy tool, even the current turn's; the pending call stays.
    const none = await run({ tools: { noisy: { keepLast: 0 } } }, mixed);
    expect(spans(none.proposal)).toEqual([["clear", "r0", "r2"]]);
    // All tool traffic: every answered call's group dropped whole (AI SDK `toolCalls: "all"`, Mastra's filter).
    const all = await run({ default: { keepLast: 0, mode: "hard", minChars: 0 } }, mixed);
    expect(spans(all.proposal)).toEqual([["drop", "a0", "r0", "a1", "r1", "a2", "r2"]]);
    expect(spans((await run({ default: { keepTurns: 0 } }, mixed)).proposal)).toEqual([
      ["clear", "r0", "r1", "r2"],
    ]);
  });

  it("keepTurns 1 keeps only the current turn; the built-in default keeps 3", async () => {
    expect(spans((await run({ default: { keepTurns: 1 } }, log)).proposal)).toEqual([
      ["clear", "r0", "r1", "r2"],
    ]);
    expect(DEFAULT_TOOL_POLICY.keepTurns).toBe(3);
    expect(spans((await run({}, log)).proposal)).toEqual([["clear", "r0"]]);
  });

  it("a new turn evicts only what aged out; running again on the extended plan proposes nothing", async () => {
    const options = { default: { keepTurns: 2 } };
    const first = await run(options, log);
    expect((await run(options, log, first.plan)).proposal.actions).toEqual([]);
    const longer = log.append([user("u4"), ...step(4)]);
    const second = await run(options, longer, first.plan);
    expect(spans(second.proposal)).toEqual([["clear", "r2"]]);
    // Earlier decisions stay as they were.
    expect(second.plan.actions.slice(0, first.plan.actions.length)).toEqual(first.plan.actions);
  });

  it("says so in a note when nothing expired", async () => {
    const { proposal } = await run({ default: { keepTurns: 10, keepLast: null } }, log);
    expect(proposal.actions).toEqual([]);
    expect(proposal.notes?.[0]).toMatchObject({ level: "info", code: "nothing_to_do" });
  });
});

describe("count (keepLast)", () => {
  // One user turn with many calls: what real agent runs look like.
  const log = ThreadLog.from("t", [
    user("u"),
    ...[0, 1, 2, 3, 4].flatMap((n) => step(n, "read_file")),
    ...[5, 6].flatMap((n) => step(n, "search")),
  ]);

  it("keeps the last N results of each tool, per tool, over one long turn", async () => {
    const { proposal } = await run({ default: { keepLast: 3 }, tools: { read_file: { keepLast: 2 } } }, log);
    expect(spans(proposal)).toEqual([["clear", "r0", "r1", "r2"]]);
    expect(spans((await run({ default: { keepLast: 1 } }, log)).proposal)).toEqual([
      ["clear", "r0", "r1", "r2", "r3", "r5"],
    ]);
  });

  it("a tool policy overrides the default field by field; neverEvict keeps everything", async () => {
    const o = { default: { keepLast: 1, minChars: 10_000 }, tools: { read_file: { minChars: 0 } } };
    expect(spans((await run(o, log)).proposal)).toEqual([["clear", "r0", "r1", "r2", "r3"]]);
    const never = { default: { keepLast: 1 }, tools: { read_file: { neverEvict: true } } };
    expect(spans((await run(never, log)).proposal)).toEqual([["clear", "r5"]]);
  });

  it("counts by the tool name of the paired call, also when call ids are reused", async () => {
    const reused = ThreadLog.from("t", [
      user("u"),
      asks("a0", [call("c", "{}", "search")]),
      answers("r0", [result("c", body("s0"))]),
      asks("a1", [call("c", "{}", "read_file")]),
      answers("r1", [result("c", body("f1"))]),
      asks("a2", [call("c", "{}", "search")]),
      answers("r2", [result("c", body("s2"))]),
    ]);
    const { proposal } = await run({ default: { keepLast: 1 } }, reused);
    expect(spans(proposal)).toEqual([["clear", "r0"]]);
    expect(proposal.actions[0]!.record).toMatchObject({ cleared: [{ toolName: "search", callId: "c" }] });
  });
});

describe("minChars", () => {
  it("leaves results smaller than minChars, and never stubs a result shorter than its stub", async () => {
    const log = ThreadLog.from("t", [
      user("u"),
      ...step(0, "bash", "tiny"),
      ...step(1, "bash", body("b", 150)),
      ...step(2, "bash", body("c", 500)),
      ...step(3),
    ]);
    expect(spans((await run({ default: { keepLast: 1 } }, log)).proposal)).toEqual([["clear", "r2"]]);
    expect(spans((await run({ default: { keepLast: 1, minChars: 0 } }, log)).proposal)).toEqual([
      ["clear", "r1", "r2"],
    ]);
  });
});

describe("hard mode", () => {
  const log = ThreadLog.from("t", [
    user("u"),
    asks("a0", [
      { type: "reasoning", text: "think", signature: "sig" },
      text("let me look"),
      call("c0", "{}"),
    ]),
    answers("r0", [result("c0", body("r0"))]),
    ...step(1, "bash"),
    ...step(2, "bash"),
  ]);

  it("drops whole tool-call groups (call message, reasoning, results) in one drop action", async () => {
    const { proposal } = await run({ default: { keepLast: 1, mode: "hard" } }, log);
    expect(spans(proposal)).toEqual([["drop", "a0", "r0", "a1", "r1"]]);
    expect(proposal.actions[0]!.record).toEqual({
      kind: "drop",
      reason: "tool results past their retention policy (hard mode)",
    });
  });

  it("stubs an expired result meanwhile when a parallel sibling is not expired, and drops the group later", async () => {
    const parallel = ThreadLog.from("t", [
      user("u"),
      asks("a", [call("x", "{}", "search"), call("y", "{}", "read_file")]),
      answers("rx", [result("x", body("x"))]),
      answers("ry", [result("y", body("y"))]),
      ...step(1, "search"),
    ]);
    const options = { default: { keepLast: 1, mode: "hard" as const } };
    const first = await run(options, parallel);
    expect(spans(first.proposal)).toEqual([["clear", "rx"]]);
    const later = parallel.append(step(2, "read_file"));
    const second = await run(options, later, first.plan);
    expect(spans(second.proposal)).toEqual([["drop", "a", "rx", "ry"]]);
  });
});

describe("clearArgs", () => {
  it("stubs a call message's arguments once all its results are cleared, listing them", async () => {
    const args = JSON.stringify({ path: "x".repeat(300) });
    const log = ThreadLog.from("t", [
      user("u"),
      asks("a", [text("reading"), call("x", args, "read_file"), call("y", args, "read_file")]),
      answers("rxy", [result("x", body("x")), result("y", body("y"))]),
      ...step(1, "read_file"),
    ]);
    const { proposal } = await run({ default: { keepLast: 1, clearArgs: true } }, log);
    expect(spans(proposal)).toEqual([["clear", "a", "rxy"]]);
    const record = proposal.actions[0]!.record;
    expect(record).toMatchObject({ kind: "clear", clearArgs: true });
    const cleared = record.kind === "clear" ? record.cleared : [];
    expect(cleared?.map((c) => [c.messageId, c.callId])).toEqual([
      ["a", "x"],
      ["a", "y"],
      ["rxy", "x"],
      ["rxy", "y"],
    ]);
    // Mixed policies: one action per clearArgs value, in log order of their first message.
    const mixed = log.append([...step(2, "search"), ...step(3, "search")]);
    const both = await run({ default: { keepLast: 1 }, tools: { read_file: { clearArgs: true } } }, mixed);
    expect(
      both.proposal.actions.map((a) => [a.span[0], a.record.kind === "clear" && a.record.clearArgs === true]),
    ).toEqual([
      ["a", true],
      ["r2", false],
    ]);
  });
});

describe("durability", () => {
  const log = (meta: MessageMeta, where: "call" | "result" = "result"): ThreadLog =>
    ThreadLog.from("t", [
      user("u"),
      asks("a0", [call("c0", "{}", "bash")], where === "call" ? meta : undefined),
      answers("r0", [result("c0", body("r0"))], where === "result" ? meta : undefined),
      ...[1, 2, 3].flatMap((n) => step(n, "bash")),
    ]);

  it("anchoring results never expire, whether marked on the result or on the call", async () => {
    const o = { default: { keepLast: 1 } };
    expect(spans((await run(o, log({ durability: "anchoring" }))).proposal)).toEqual([["clear", "r1", "r2"]]);
    expect(spans((await run(o, log({ durability: "anchoring" }, "call"))).proposal)).toEqual([
      ["clear", "r1", "r2"],
    ]);
  });

  it("ephemeral results expire as soon as the tool returns again", async () => {
    const { proposal } = await run({}, log({ durability: "ephemeral" }));
    expect(spans(proposal)).toEqual([["clear", "r0"]]);
  });

  it("non-replayable results are never cleared nor dropped by retention, however old; options can override", async () => {
    const hard = { default: { keepLast: 1, mode: "hard" as const } };
    expect(spans((await run(hard, log({ durability: "non-replayable" }))).proposal)).toEqual([
      ["drop", "a1", "r1", "a2", "r2"],
    ]);
    const aged = log({ durability: "non-replayable" }).append([user("v"), user("w"), user("z")]);
    expect(spans((await run(hard, aged)).proposal)).toEqual([["drop", "a1", "r1", "a2", "r2", "a3", "r3"]]);
    const soft = { default: { keepLast: 1 } };
    expect(spans((await run(soft, aged)).proposal)).toEqual([["clear", "r1", "r2", "r3"]]);
    const override = { ...hard, durability: { "non-replayable": { neverEvict: false } } };
    expect(spans((await run(override, aged)).proposal)).toEqual([
      ["drop", "a0", "r0", "a1", "r1", "a2", "r2", "a3", "r3"],
    ]);
  });

  it("classes tools by the words of their names unless configured: a write is never cleared, a read is stamped", async () => {
    const thread = ThreadLog.from("t", [
      user("u"),
      ...step(0, "write_file"),
      ...[1, 2].flatMap((n) => step(n, "readFile")),
      ...[3, 4].flatMap((n) => step(n, "bash")),
    ]);
    const o = { default: { keepLast: 1, keepTurns: null } };
    const { proposal } = await run(o, thread);
    expect(spans(proposal)).toEqual([["clear", "r1", "r3"]]);
    const record = proposal.actions[0]!.record as ClearRecord;
    const hash = createHash("sha256").update(body("out 1")).digest("hex").slice(0, 8);
    expect(record.excerpts).toEqual([
      {
        messageId: "r1",
        partIndex: 0,
        text: `[result cleared: readFile, 406 chars; replayable, sha256 ${hash}: call again to see it]`,
      },
    ]);
    // Configured classes win over the built-in words; `none` leaves a tool unclassed.
    const frozen = await run(o, thread, undefined, {
      durability: durabilityClasses({ tools: { readFile: "non-replayable" } }),
    });
    expect(spans(frozen.proposal)).toEqual([["clear", "r3"]]);
    const unclassed = await run(o, thread, undefined, {
      durability: durabilityClasses({ tools: { readFile: "none" } }),
    });
    expect(spans(unclassed.proposal)).toEqual([["clear", "r1", "r3"]]);
    expect((unclassed.proposal.actions[0]!.record as ClearRecord).excerpts).toBeUndefined();
  });

  it("a replayable result repeats the strongest determinism metadata it carries", async () => {
    const thread = ThreadLog.from("t", [
      user("u"),
      asks("a0", [call("c0", "{}", "read_file")]),
      answers("r0", [result("c0", body("r0"))], { etag: 'W/"42"', mtime: "2026-11-01T10:00:00Z" }),
      ...[1, 2].flatMap((n) => step(n, "read_file")),
    ]);
    const { proposal } = await run({ default: { keepLast: 1, keepTurns: null } }, thread);
    const record = proposal.actions[0]!.record as ClearRecord;
    expect(record.excerpts?.[0]?.text).toContain(`replayable, etag "W/\\"42\\""`);
    expect(record.excerpts?.[1]?.text).toMatch(/replayable, sha256 [0-9a-f]{8}/);
  });

  it("never stubs a replayable result its stamped placeholder would not shrink", async () => {
    const thread = ThreadLog.from("t", [
      user("u"),
      ...step(0, "search", body("s", 40)),
      ...step(1, "search", body("s", 600)),
      ...step(2, "search"),
    ]);
    const { proposal } = await run({ default: { keepLast: 1, keepTurns: null, minChars: 0 } }, thread);
    expect(spans(proposal)).toEqual([["clear", "r1"]]);
  });
});

describe("what is never touched", () => {
  it("leaves pinned messages, pending groups and groups others summarized alone", async () => {
    const log = ThreadLog.from("t", [
      { id: "s", role: "system", parts: [text(body("system"))] },
      user("u"),
      ...step(0),
      asks("a1", [call("c1", "{}", "search")]),
      answers("r1", [result("c1", body("r1"))], { pinned: true }),
      asks("a2", [call("c2", "{}", "search"), call("p", "{}", "search")]),
      answers("r2", [result("c2", body("r2"))]),
      ...step(3),
      ...step(4),
    ]);
    const summarized = extendPlan(
      emptyPlan("t"),
      [
        {
          kind: "summarize",
          span: ["a3", "r3"],
          record: { kind: "summarize", summary: "s", summarizerId: "m", promptVersion: "v" },
          strategy: "x",
          reason: "",
        },
      ],
      log.length,
    );
    const { proposal } = await run({ default: { keepLast: 1 } }, log, summarized);
    expect(spans(proposal)).toEqual([["clear", "r0"]]);
  });

  it("clears parallel results of one message one by one when another tool's result beside them is kept", async () => {
    const log = ThreadLog.from("t", [
      user("u"),
      asks("a", [call("x", "{}", "search"), call("y", "{}", "read_file")]),
      answers("rxy", [result("x", body("x")), result("y", body("y"))]),
      ...step(1, "search"),
    ]);
    const o = { default: { keepLast: 1 } };
    // search's x expired, read_file's y did not: x alone is stubbed (the unit of a clear is a call).
    const first = await run(o, log);
    expect(spans(first.proposal)).toEqual([["clear", "rxy"]]);
    expect(first.proposal.actions[0]!.record).toMatchObject({
      onlyParts: [{ messageId: "rxy", partIndex: 0 }],
      cleared: [{ toolName: "search", callId: "x" }],
    });
    const shown = renderHistory(log, first.plan, counter).messages.find((m) =>
      m.provenance.sourceIds.includes("rxy"),
    )!;
    const contents = shown.parts.map((p) => (p.type === "tool_result" ? p.content : ""));
    expect(contents[1]).toBe(body("y"));
    expect(contents[0]).not.toBe(body("x"));
    // Nothing more until y expires; then the clear lists both results.
    expect((await run(o, log, first.plan)).proposal.actions).toEqual([]);
    const later = log.append(step(2, "read_file"));
    const second = await run(o, later, first.plan);
    expect(spans(second.proposal)).toEqual([["clear", "rxy"]]);
    expect(second.proposal.actions[0]!.record).toMatchObject({
      onlyParts: [
        { messageId: "rxy", partIndex: 0 },
        { messageId: "rxy", partIndex: 1 },
      ],
      cleared: [{ toolName: "search" }, { toolName: "read_file" }],
    });
    expect((await run(o, later, second.plan)).proposal.actions).toEqual([]);
  });

  it("waits for parallel results of one tool to expire together (the message changes once)", async () => {
    const log = ThreadLog.from("t", [
      user("u"),
      asks("a", [call("x", "{}", "search"), call("y", "{}", "search")]),
      answers("rxy", [result("x", body("x")), result("y", body("y"))]),
    ]);
    const o = { default: { keepLast: 1 } };
    // x is the second newest search result (expired), y the newest: they wait for each other.
    expect((await run(o, log)).proposal.actions).toEqual([]);
    const { proposal } = await run(o, log.append(step(1, "search")));
    expect(spans(proposal)).toEqual([["clear", "rxy"]]);
    expect(proposal.actions[0]!.record).not.toHaveProperty("onlyParts");
  });

  it("removes all of one noisy tool's traffic, keepLast 0, beside other tools' parallel results", async () => {
    const log = ThreadLog.from("t", [
      user("u"),
      asks("a", [call("x", "{}", "search"), call("y", "{}", "read_file")]),
      answers("rxy", [result("x", body("x")), result("y", body("y"))]),
    ]);
    const o = { tools: { search: { keepLast: 0 } } };
    const { proposal } = await run(o, log);
    expect(proposal.actions[0]!.record).toMatchObject({ onlyParts: [{ messageId: "rxy", partIndex: 0 }] });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// properties and real runs

const optionSets: ReadonlyArray<ToolResultRetentionOptions> = [
  {},
  { default: { keepLast: 1, minChars: 0 } },
  { default: { keepTurns: 1, mode: "hard", minChars: 0 } },
  { default: { keepLast: 1, clearArgs: true, minChars: 0 }, tools: { search: { mode: "hard" } } },
  { default: { keepTurns: 1, keepLast: 2, minChars: 0 }, tools: { read_file: { neverEvict: true } } },
  { default: { keepLast: 3, minChars: 0 }, tools: { search: { keepLast: 0, clearArgs: true } } },
];

function touchedSeqs(log: ThreadLog, plan: CompactionPlan): number[] {
  const resolution = resolveForLog(plan, log);
  const out: number[] = [];
  for (let seq = 0; seq < log.length; seq++) if (decisionAt(resolution, seq) !== undefined) out.push(seq);
  return out;
}

describe("on random logs", () => {
  it("turn by turn: proposals validate, never touch system/pending/pinned messages, and are stable", async () => {
    await fc.assert(
      fc.asyncProperty(arbitraryBatches(), fc.constantFrom(...optionSets), async (batches, options) => {
        await replayBatches(
          batches,
          (log, plan) => run(options, log, plan),
          (log, plan) => {
            const pendingSeqs = new Set([...log.pendingCalls.values()].map((c) => c.seq));
            for (const seq of touchedSeqs(log, plan)) {
              const group = log.groupAt(log.groupIndexOf(seq));
              expect(group.kind).toBe("tool_call");
              expect(group.pending).toBe(false);
              expect(group.seqs.some((s) => log.at(s)!.meta.pinned === true || pendingSeqs.has(s))).toBe(
                false,
              );
            }
          },
        );
      }),
      fcParams(150),
    );
  });
});

describeProposalsOnTrajectories(() => optionSets.map((options) => createToolResultRetention(options)));

describe("key lines of stubbed results", () => {
  /** A listing of ordinary lines with one telling line in the middle. */
  const listing = (planted: string) =>
    [
      ...Array.from({ length: 30 }, (_, i) => `running step ${i} of the build for module core`),
      planted,
      ...Array.from({ length: 30 }, (_, i) => `compiled unit ${i} of module core without notes`),
    ].join("\n");
  const planted = "The customer profile now points at ticket KX-48213 for the refund.";
  const log = ThreadLog.from("t", [
    user("u0"),
    ...step(0, "bash", listing(planted)),
    ...step(1, "bash", listing("nothing else changed in the build for module core")),
    user("u1"),
    user("u2"),
    user("u3"),
  ]);

  it("keeps a result's telling line under its placeholder, recorded as the excerpt the renderer shows", async () => {
    const { proposal, plan } = await run({ default: { keepTurns: 2, keepLast: null } }, log);
    const action = proposal.actions[0]!;
    expect(action.kind).toBe("clear");
    const excerpts = action.kind === "clear" ? action.record.excerpts : undefined;
    const chars = listing(planted).length;
    expect(excerpts?.[0]).toEqual({
      messageId: "r0",
      partIndex: 0,
      text: `[result cleared: bash, ${Math.round(chars / 1024)} KB; key lines:]\n${planted}`,
    });
    expect(action.reason).toMatch(/keeping key lines/);
    const rendered = renderHistory(log, plan, counter).messages.find(
      (m) => m.provenance.sourceIds[0] === "r0",
    );
    // The renderer names the call in the header (cl-render/5); the record keeps the text without it.
    const shown = excerpts![0]!.text.replace("; key lines:]", '; recall callId "c0"; key lines:]');
    expect(rendered?.parts).toEqual([result("c0", shown)]);
  });

  it("stubs bare when key lines are switched off or would push the request over its target", async () => {
    const off = await run({ default: { keepTurns: 2, keepLast: null }, keyLines: false }, log);
    expect(off.proposal.actions.every((a) => a.kind !== "clear" || a.record.excerpts === undefined)).toBe(
      true,
    );
    const options = { default: { keepTurns: 2, keepLast: null } };
    const bare = await runStrategy(
      createToolResultRetention({ ...options, keyLines: false }),
      log,
      emptyPlan("t"),
    );
    const target = renderHistory(log, bare.plan, counter).tokenCount;
    const tight = await runStrategy(createToolResultRetention(options), log, emptyPlan("t"), { target });
    expect(tight.proposal.actions).toEqual(bare.proposal.actions);
    const roomy = await runStrategy(createToolResultRetention(options), log, emptyPlan("t"), {
      target: target + 200,
    });
    expect(roomy.proposal.actions).not.toEqual(bare.proposal.actions);
  });

  it("looks for key lines only when the pipeline can take them: the proposal is the one that always looks, or one the pipeline defers like it", async () => {
    const line = fc.constantFrom(
      "running step 4 of the build for module core",
      "compiled unit 7 of module core without notes",
      "The refund now points at ticket KX-48213.",
      "error: velmorine cache is stale",
      "3 passed, 1 failed",
    );
    const content = fc.array(line, { minLength: 1, maxLength: 40 }).map((lines) => lines.join("\n"));
    const turn = fc.array(content, { minLength: 1, maxLength: 3 });
    await fc.assert(
      fc.asyncProperty(
        fc.array(turn, { minLength: 1, maxLength: 6 }),
        fc.double({ min: 0.05, max: 1.5, noNaN: true }),
        fc.nat(400),
        async (turns, share, minGain) => {
          let n = 0;
          const inputs: MessageInput[] = [];
          turns.forEach((contents, t) => {
            inputs.push(user(`u${t}`));
            for (const c of contents) inputs.push(...step(n++, "bash", c));
          });
          inputs.push(user("last"));
          const log = ThreadLog.from("t", inputs);
          const options = { default: { keepTurns: 1, keepLast: null, minChars: 0 } };
          const plan = emptyPlan("t");
          const tokens = renderHistory(log, plan, counter).tokenCount;
          const target = Math.floor(tokens * share);
          const propose = (o: ToolResultRetentionOptions, context: Parameters<typeof strategyContext>[2]) =>
            createToolResultRetention(o).propose(strategyContext(log, plan, context));
          const actual = await propose(options, { target, minGain });
          const always = await propose(options, { target: Number.MAX_SAFE_INTEGER });
          const bare = await propose({ ...options, keyLines: false }, { target });
          const measure = (p: Proposal) =>
            renderHistory(log, extendPlan(plan, p.actions, log.length), counter).tokenCount;
          const expected = measure(always) <= target ? always : bare;
          if (JSON.stringify(actual.actions) === JSON.stringify(expected.actions)) return;
          // Otherwise both are under target with gains the pipeline defers.
          expect(tokens).toBeLessThanOrEqual(target);
          expect(tokens - measure(actual)).toBeLessThan(minGain);
          expect(tokens - measure(expected)).toBeLessThan(minGain);
        },
      ),
      fcParams(150),
    );
  });

  it("rejects bad key-line options naming the field", () => {
    const error = validationError(() => createToolResultRetention({ keyLines: { maxLines: 0 } }));
    expect(error.where.field).toBe("keyLines.maxLines");
  });
});
