import { describe, expect, it } from "vitest";
import { fusedIdReuseLog } from "../../test/support/arbitrary-log.js";
import { text } from "../../test/support/builders.js";
import { simpleCounter } from "../../test/support/simple-counter.js";
import { PlanValidationError } from "../errors/ledger-error.js";
import type { MessageInput, Part } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import {
  type ActionKind,
  type CompactionPlan,
  createPlan,
  emptyPlan,
  nextPlan,
  type PlanAction,
  type RecordByKind,
} from "../plan/compaction-plan.js";
import { parsePlan, serializePlan } from "../plan/plan-schema.js";
import { validatePlan } from "../plan/validate-plan.js";
import { pendingResultText, pointerText, summaryText } from "../texts/placeholders.js";
import { toProviderRequest, validateProviderRequest } from "./provider-rules.js";
import { renderPrompt } from "./render-prompt.js";
import type { RenderedPrompt } from "./rendered-prompt.js";

const call = (callId: string, name = "search", args = '{"q":"x"}'): Part => ({
  type: "tool_call",
  callId,
  name,
  args,
});
const result = (callId: string, content = "out"): Part => ({ type: "tool_result", callId, content });

const user = (id: string, t = id): MessageInput => ({ id, role: "user", parts: [text(t)] });
const assistant = (id: string, ...parts: Part[]): MessageInput => ({
  id,
  role: "assistant",
  parts: parts.length > 0 ? parts : [text(id)],
});
const tool = (id: string, ...parts: Part[]): MessageInput => ({ id, role: "tool", parts });

const records: { readonly [K in ActionKind]: RecordByKind[K] } = {
  include: { kind: "include" },
  clear: { kind: "clear" },
  summarize: {
    kind: "summarize",
    summary: "the user asked; we searched",
    summarizerId: "m",
    promptVersion: "v1",
  },
  externalize: { kind: "externalize", artifactId: "art-1", summary: "big listing" },
  drop: { kind: "drop", reason: "old" },
};

function act<K extends ActionKind>(kind: K, span: string[], record?: RecordByKind[K]): PlanAction {
  return {
    kind,
    span,
    record: record ?? records[kind],
    strategy: "test",
    reason: `${kind} it`,
  } as PlanAction;
}

function planOf(log: ThreadLog, ...actions: PlanAction[]): CompactionPlan {
  return createPlan({ threadId: log.threadId, version: 1, basedOnSeq: log.length, actions });
}

const counter = simpleCounter();
const render = (log: ThreadLog, plan: CompactionPlan = emptyPlan(log.threadId), extra = {}) =>
  renderPrompt(log, plan, { counter, ...extra });

/** A compact view: `role:kind[sourceIds]`. */
const outline = (p: RenderedPrompt): string[] =>
  p.messages.map((m) => `${m.role}:${m.provenance.kind}[${m.provenance.sourceIds.join(",")}]`);

/** system, user, assistant with one call, its result, a user turn, assistant text. */
function basicLog(resultContent = "out"): ThreadLog {
  return ThreadLog.from("t", [
    { id: "s", role: "system", parts: [text("be brief")] },
    user("u1", "find x"),
    assistant("a1", text("looking"), call("c1", "search")),
    tool("t1", result("c1", resultContent)),
    user("u2", "thanks"),
    assistant("a2", text("you're welcome")),
  ]);
}

describe("renderPrompt: include and drop", () => {
  it("copies every message unchanged under the empty plan", () => {
    const log = basicLog();
    const out = render(log);
    expect(out.messages.map((m) => m.parts)).toEqual(log.messages.map((m) => m.parts));
    expect(out.messages.map((m) => m.role)).toEqual(log.messages.map((m) => m.role));
    expect(out.messages.every((m) => m.provenance.kind === "original" && !m.provenance.synthetic)).toBe(true);
    expect(out.messages.map((m) => m.provenance.sourceIds)).toEqual(log.messages.map((m) => [m.id]));
  });

  it("a message copied from the log carries its metadata; synthetic ones none; the hash ignores it", () => {
    const meta = { toolName: "search", sdk: { note: [1, 2] } };
    const plain = basicLog();
    const inputs = plain.messages.map(({ id, role, parts }) => ({ id, role, parts }));
    const log = ThreadLog.from(
      "t",
      inputs.map((m) => (m.id === "t1" ? { ...m, meta } : m)),
    );
    const out = render(log, planOf(log, act("clear", ["t1"]), act("summarize", ["u2", "a2"])));
    expect(out.messages.map((m) => m.meta)).toEqual([{}, {}, {}, meta, undefined]);
    expect(out.messages[3]!.provenance.kind).toBe("cleared");
    expect(render(log).messages[3]!.meta).toBe(log.at(3)!.meta);
    expect(render(log).hash).toBe(render(plain).hash);
  });

  it("an explicit include renders exactly like the default", () => {
    const log = basicLog();
    expect(render(log, planOf(log, act("include", ["u1", "a1", "t1"]))).hash).toBe(render(log).hash);
  });

  it("drop omits the messages, and drops a whole tool-call group together", () => {
    const log = basicLog();
    const out = render(log, planOf(log, act("drop", ["a1", "t1"]), act("drop", ["u2"])));
    expect(outline(out)).toEqual(["system:original[s]", "user:original[u1]", "assistant:original[a2]"]);
  });

  it("drop wins over every other action on the same message", () => {
    const log = basicLog();
    const out = render(
      log,
      planOf(
        log,
        act("drop", ["u2"]),
        act("summarize", ["u2"]),
        act("clear", ["u2"]),
        act("include", ["u2"]),
      ),
    );
    expect(outline(out)).not.toContain("user:original[u2]");
    expect(out.messages.some((m) => m.provenance.sourceIds.includes("u2"))).toBe(false);
  });
});

describe("renderPrompt: drop markers", () => {
  const marked = { kind: "drop", reason: "over budget", marker: true } as const;
  const markerText = (n: number) => `[${n} earlier message${n === 1 ? "" : "s"} left out; recall by query]`;

  it("a drop that asks for a marker leaves one where its run began: how many, and that recall finds them", () => {
    const log = basicLog();
    const out = render(log, planOf(log, act("drop", ["u1", "a1", "t1"], marked)));
    expect(outline(out)).toEqual([
      "system:original[s]",
      "assistant:drop_marker[u1,a1,t1]",
      "user:original[u2]",
      "assistant:original[a2]",
    ]);
    expect(out.messages[1]!.parts).toEqual([text(markerText(3))]);
    expect(out.messages[1]!.provenance.synthetic).toBe(true);
    // A leading marker belongs to the stable prefix, as a summary does.
    expect(out.stablePrefixEnd).toBe(1);
    // cl-render/4 and /3 knew no markers: replay of their calls renders the drop without a trace.
    const v4 = render(log, planOf(log, act("drop", ["u1", "a1", "t1"], marked)), {
      formatVersion: "cl-render/4",
    });
    expect(outline(v4)).toEqual(["system:original[s]", "user:original[u2]", "assistant:original[a2]"]);
  });

  it("one marker per run of dropped messages, decided by the drop governing the run's first message", () => {
    const log = basicLog();
    const plain = act("drop", ["u1"]);
    // Two adjacent drops are one run: the first one's marker stands for both.
    const joined = render(log, planOf(log, act("drop", ["u1"], marked), act("drop", ["a1", "t1"])));
    expect(outline(joined)[1]).toBe("assistant:drop_marker[u1,a1,t1]");
    expect(joined.messages[1]!.parts).toEqual([text(markerText(3))]);
    expect(outline(render(log, planOf(log, plain, act("drop", ["a1", "t1"], marked))))).toEqual([
      "system:original[s]",
      "user:original[u2]",
      "assistant:original[a2]",
    ]);
    // Runs apart get a marker each.
    const apart = render(log, planOf(log, act("drop", ["u1"], marked), act("drop", ["u2"], marked)));
    expect(outline(apart).filter((line) => line.includes("drop_marker"))).toEqual([
      "assistant:drop_marker[u1]",
      "assistant:drop_marker[u2]",
    ]);
  });

  it("a long run lists its ids when read and hashes the same every render", () => {
    const messages = Array.from({ length: 40 }, (_, i) => user(`m${i}`, `message ${i}`));
    const log = ThreadLog.from("t", [...messages, user("last", "go on")]);
    const plan = planOf(
      log,
      act(
        "drop",
        messages.map((m) => m.id!),
        marked,
      ),
    );
    const out = render(log, plan);
    expect(out.messages[0]!.parts).toEqual([text(markerText(40))]);
    expect(out.messages[0]!.provenance.sourceIds).toEqual(messages.map((m) => m.id));
    expect(renderPrompt(log, plan, { counter: simpleCounter() }).hash).toBe(out.hash);
    const other = planOf(
      log,
      act(
        "drop",
        messages.slice(1).map((m) => m.id!),
        marked,
      ),
    );
    expect(render(log, other).hash).not.toBe(out.hash);
  });
});

describe("renderPrompt: clear", () => {
  it("keeps the call/result pairing and puts the tool name and size in the placeholder", () => {
    const log = basicLog("y".repeat(48 * 1024));
    const out = render(log, planOf(log, act("clear", ["a1", "t1"])));
    expect(outline(out)).toEqual([
      "system:original[s]",
      "user:original[u1]",
      "assistant:cleared[a1]",
      "tool:cleared[t1]",
      "user:original[u2]",
      "assistant:original[a2]",
    ]);
    expect(out.messages[2]!.parts).toEqual([text("looking"), call("c1", "search")]);
    expect(out.messages[3]!.parts).toEqual([
      result("c1", '[result cleared: search, 48 KB; recall callId "c1"]'),
    ]);
    // cl-render/4 and /3 did not name the call: replay of calls recorded under them renders their text.
    const v4 = render(log, planOf(log, act("clear", ["a1", "t1"])), { formatVersion: "cl-render/4" });
    expect(v4.messages[3]!.parts).toEqual([result("c1", "[result cleared: search, 48 KB]")]);
    expect(v4.hash).not.toBe(out.hash);
  });

  it("clearArgs replaces the arguments by a JSON object naming their size", () => {
    const log = basicLog();
    const out = render(log, planOf(log, act("clear", ["a1", "t1"], { kind: "clear", clearArgs: true })));
    const args = (out.messages[2]!.parts[1] as { args: string }).args;
    expect(JSON.parse(args)).toEqual({ _cleared: "arguments, 9 chars" });
  });

  it("replaces the text of a message without calls, and keeps reasoning and media byte-identical", () => {
    const reasoning: Part = { type: "reasoning", text: "hmm", signature: "c2lnbmVk" };
    const media: Part = { type: "media", mediaType: "image/png", uri: "https://x/y.png" };
    const log = ThreadLog.from("t", [
      { id: "u", role: "user", parts: [text("hello there"), media] },
      assistant("a", reasoning, text("answer")),
    ]);
    const out = render(log, planOf(log, act("clear", ["u", "a"])));
    expect(out.messages[0]!.parts).toEqual([text("[message cleared: 11 chars]"), media]);
    expect(out.messages[1]!.parts).toEqual([reasoning, text("[message cleared: 6 chars]")]);
    expect(out.messages[1]!.parts[0]).toBe(log.at(1)!.parts[0]);
  });

  it("clears only the cleared message of a group (the other keeps its body)", () => {
    const log = basicLog("data");
    const out = render(log, planOf(log, act("clear", ["t1"])));
    expect(outline(out)[2]).toBe("assistant:original[a1]");
    expect(out.messages[3]!.parts).toEqual([
      result("c1", '[result cleared: search, 4 chars; recall callId "c1"]'),
    ]);
  });
});

describe("renderPrompt: clear of only some parts (onlyParts)", () => {
  const thought: Part = { type: "reasoning", text: "compare both", signature: "sig" };
  /** u1; a1 thinks and calls c1 (search) and c2 (read) in parallel; t1 answers both; r2 thinks alone; a2 answers. */
  const parallel = (): ThreadLog =>
    ThreadLog.from("t", [
      user("u1", "find x"),
      assistant("a1", thought, call("c1", "search"), call("c2", "read", '{"path":"a.ts"}')),
      tool("t1", result("c1", "search output"), result("c2", "file body")),
      user("u2", "and?"),
      assistant("r2", thought),
      assistant("a2", text("done")),
    ]);
  const only = (...refs: Array<[string, number]>): RecordByKind["clear"] => ({
    kind: "clear",
    onlyParts: refs.map(([messageId, partIndex]) => ({ messageId, partIndex })),
  });

  it("clears one result of a message answering parallel calls and leaves the other verbatim", () => {
    const log = parallel();
    const out = render(log, planOf(log, act("clear", ["t1"], only(["t1", 1]))));
    const t1 = out.messages.find((m) => m.provenance.sourceIds.includes("t1"))!;
    expect(t1.provenance.kind).toBe("cleared");
    expect(t1.parts).toEqual([
      result("c1", "search output"),
      result("c2", '[result cleared: read, 9 chars; recall callId "c2"]'),
    ]);
    // The whole-message clear it refines stubs both.
    const whole = render(log, planOf(log, act("clear", ["t1"])));
    expect(whole.messages.find((m) => m.provenance.sourceIds.includes("t1"))!.parts).toHaveLength(2);
    expect(JSON.stringify(whole.messages)).not.toContain("search output");
  });

  it("clears one call's arguments, or the reasoning of a message, and nothing else of it", () => {
    const log = parallel();
    const args = render(log, planOf(log, act("clear", ["a1"], only(["a1", 2]))));
    const a1 = args.messages.find((m) => m.provenance.sourceIds.includes("a1"))!;
    expect(a1.parts[0]).toEqual(thought);
    expect(a1.parts[1]).toEqual(call("c1", "search"));
    expect((a1.parts[2] as { args: string }).args).not.toContain("a.ts");
    const reasoning = render(log, planOf(log, act("clear", ["a1"], only(["a1", 0]))));
    const bare = reasoning.messages.find((m) => m.provenance.sourceIds.includes("a1"))!;
    expect(bare.parts).toEqual([call("c1", "search"), call("c2", "read", '{"path":"a.ts"}')]);
  });

  it("sends nothing for a reasoning-only message whose reasoning is cleared, and stays deterministic", () => {
    // r2's turn is over once u3 asks again: its reasoning may go.
    const log = parallel().append([user("u3", "thanks")]);
    const plan = planOf(log, act("clear", ["r2"], only(["r2", 0])));
    const out = render(log, plan);
    expect(out.messages.some((m) => m.provenance.sourceIds.includes("r2"))).toBe(false);
    expect(outline(out).slice(-2)).toEqual(["assistant:original[a2]", "user:original[u3]"]);
    expect(JSON.stringify(render(log, plan).messages)).toBe(JSON.stringify(out.messages));
  });

  it("refuses to leave out the reasoning of the turn in progress, which Anthropic needs beside its tool calls", () => {
    // u2 asks; r2 thinks alone, then a3 calls: the tool-use cycle in progress starts with r2's signed thinking.
    const log = ThreadLog.from("t", [
      user("u2", "and?"),
      assistant("r2", thought),
      assistant("a3", call("c3", "search")),
      tool("t3", result("c3", "found")),
    ]);
    const plan = planOf(log, act("clear", ["r2"], only(["r2", 0])));
    const problems = validatePlan(plan, log);
    expect(problems.map((p) => [p.code, p.messageId])).toEqual([["bad_part", "r2"]]);
    expect(problems[0]!.message).toMatch(
      /onlyParts 0 \(message r2, part 0\) names reasoning of the turn in progress/,
    );
    // What the rule prevents: rendered anyway, the Anthropic request ends its cycle with a tool_use and no thinking.
    const out = render(log, plan, { validatePlan: false });
    const request = {
      ...toProviderRequest("anthropic", out),
      thinking: { type: "enabled" as const, budget_tokens: 1024 },
    };
    expect(validateProviderRequest("anthropic", request).join("\n")).toMatch(
      /does not start with its thinking block/,
    );
    // Before the turn in progress it is taken (Anthropic leaves out earlier turns' thinking itself).
    const later = log.append([user("u4", "next")]);
    expect(validatePlan(planOf(later, act("clear", ["r2"], only(["r2", 0]))), later)).toEqual([]);
  });

  it("a plan with onlyParts survives a JSON round trip, and one without keeps its serialized form", () => {
    const log = parallel();
    const plan = planOf(log, act("clear", ["t1"], only(["t1", 1])));
    expect(parsePlan(JSON.parse(serializePlan(plan)))).toEqual(plan);
    const plain = planOf(log, act("clear", ["t1"]));
    expect(serializePlan(plain)).not.toContain("onlyParts");
  });

  it("refuses parts the message lacks, media or repeated parts, naming the action and message", () => {
    const log = parallel();
    const problems = (record: RecordByKind["clear"]) =>
      validatePlan(planOf(log, act("clear", ["t1"], record)), log).map((p) => [p.code, p.messageId]);
    expect(problems(only(["t1", 2]))).toEqual([["bad_part", "t1"]]);
    expect(problems(only(["t1", 0], ["t1", 0]))).toEqual([["bad_part", "t1"]]);
    expect(validatePlan(planOf(log, act("clear", ["t1"], only(["t1", 5]))), log)[0]!.message).toMatch(
      /onlyParts 0 \(message t1, part 5\) names a part the message lacks \(it has 2\)/,
    );
    expect(() =>
      parsePlan({ ...JSON.parse(serializePlan(planOf(log, act("clear", ["t1"], only())))) }),
    ).toThrow(/at least one/);
  });
});

describe("renderPrompt: clear with excerpts", () => {
  const excerptClear = (excerpts: RecordByKind["clear"]["excerpts"] & object): RecordByKind["clear"] => ({
    kind: "clear",
    excerpts,
  });

  it("shows a recorded excerpt as the part's body with the way back, other parts keep their placeholder", () => {
    const log = ThreadLog.from("t", [
      assistant("a1", call("c1"), call("c2")),
      tool("t1", result("c1", "one ".repeat(100)), result("c2", "two ".repeat(100))),
    ]);
    const record = excerptClear([
      { messageId: "t1", partIndex: 1, text: "two two\n[… 390 chars omitted …]" },
    ]);
    const out = render(log, planOf(log, act("clear", ["t1"], record)));
    expect(out.messages[1]!.parts).toEqual([
      result("c1", '[result cleared: search, 400 chars; recall callId "c1"]'),
      result("c2", 'two two\n[… 390 chars omitted …]\n[recall callId "c2" for the whole result]'),
    ]);
    const v4 = render(log, planOf(log, act("clear", ["t1"], record)), { formatVersion: "cl-render/4" });
    expect(v4.messages[1]!.parts[1]).toEqual(result("c2", "two two\n[… 390 chars omitted …]"));
    expect(render(log, planOf(log, act("clear", ["t1"], record))).hash).toBe(out.hash);
  });

  it("defaults the part index to 0 and excerpts the text of a message without calls", () => {
    const log = ThreadLog.from("t", [
      { id: "u", role: "user", parts: [text("a long paste"), text("and more")] },
      assistant("a", text("answer")),
    ]);
    const out = render(
      log,
      planOf(log, act("clear", ["u"], excerptClear([{ messageId: "u", text: "a lo…" }]))),
    );
    expect(out.messages[0]!.parts).toEqual([text("a lo…"), text("[message cleared: 8 chars]")]);
  });

  it("ignores excerpts of other messages, and renders a record without excerpts byte-identically", () => {
    const log = basicLog("y".repeat(4000));
    const plain = render(log, planOf(log, act("clear", ["t1"])));
    const empty = render(log, planOf(log, act("clear", ["t1"], excerptClear([]))));
    expect(empty.hash).toBe(plain.hash);
    const elsewhere = excerptClear([{ messageId: "a1", partIndex: 0, text: "narration cut" }]);
    const out = render(log, planOf(log, act("clear", ["a1", "t1"], elsewhere)));
    expect(out.messages[2]!.parts).toEqual([text("narration cut"), call("c1", "search")]);
    expect(out.messages[3]!.parts).toEqual(plain.messages[3]!.parts);
  });

  it("finds the excerpt of a split tool message's part by its index in the whole message", () => {
    const log = ThreadLog.from("t", [
      assistant("a1", call("c1")),
      assistant("a2", call("c2")),
      tool("t12", result("c2", "two"), result("c1", "one")),
    ]);
    const record = excerptClear([
      { messageId: "t12", partIndex: 0, text: "TWO" },
      { messageId: "t12", partIndex: 1, text: "ONE" },
    ]);
    const out = render(log, planOf(log, act("clear", ["t12"], record)));
    const hint = (id: string) => `\n[recall callId "${id}" for the whole result]`;
    expect(out.messages[1]!.parts).toEqual([result("c1", `ONE${hint("c1")}`)]);
    expect(out.messages[3]!.parts).toEqual([result("c2", `TWO${hint("c2")}`)]);
  });

  it("names the call in a stored placeholder's first line, and leaves an excerpt that names it as recorded", () => {
    const log = ThreadLog.from("t", [
      assistant("a1", call("c1", "grep"), call("c2", "cat"), call("c3", "read"), call("c4", "read")),
      tool(
        "t1",
        result("c1", "x".repeat(3000)),
        result("c2", "y".repeat(3000)),
        result("c3", "z".repeat(3000)),
        result("c4", "w".repeat(3000)),
      ),
    ]);
    const stamped = "[result cleared: read, 3 KB; replayable, etag 7f: call again to see it";
    const record = excerptClear([
      { messageId: "t1", partIndex: 0, text: "[result cleared: grep, 3 KB; key lines:]\nKX-1 failed" },
      { messageId: "t1", partIndex: 1, text: 'yy\n[… 2990 chars omitted; recall callId "c2" …]\nyy' },
      { messageId: "t1", partIndex: 2, text: `${stamped}]` },
      { messageId: "t1", partIndex: 3, text: `${stamped}; key lines:]\nww` },
    ]);
    const out = render(log, planOf(log, act("clear", ["t1"], record)));
    expect(out.messages[1]!.parts).toEqual([
      result("c1", '[result cleared: grep, 3 KB; recall callId "c1"; key lines:]\nKX-1 failed'),
      result("c2", 'yy\n[… 2990 chars omitted; recall callId "c2" …]\nyy'),
      result("c3", `${stamped}; recall callId "c3"]`),
      result("c4", `${stamped}; recall callId "c4"; key lines:]\nww`),
    ]);
  });
});

describe("renderPrompt: summarize and externalize", () => {
  it("replaces a span by exactly one synthetic assistant message where the span began", () => {
    const log = basicLog();
    const out = render(log, planOf(log, act("summarize", ["u1", "a1", "t1"])));
    expect(outline(out)).toEqual([
      "system:original[s]",
      "assistant:summary[u1,a1,t1]",
      "user:original[u2]",
      "assistant:original[a2]",
    ]);
    expect(out.messages[1]!.parts).toEqual([text(summaryText(records.summarize, 3))]);
    expect(out.messages[1]!.provenance.synthetic).toBe(true);
  });

  it("never merges two adjacent spans", () => {
    const log = basicLog();
    const out = render(log, planOf(log, act("summarize", ["u1"]), act("summarize", ["a1", "t1"])));
    expect(outline(out).slice(1, 3)).toEqual(["assistant:summary[u1]", "assistant:summary[a1,t1]"]);
    expect(out.messages[1]!.parts).toEqual([text(summaryText(records.summarize, 1))]);
  });

  it("places the synthetic message at the first message the span still governs when a drop took the first", () => {
    const log = basicLog();
    const out = render(log, planOf(log, act("summarize", ["u1", "a1", "t1", "u2"]), act("drop", ["u1"])));
    expect(outline(out)).toEqual([
      "system:original[s]",
      "assistant:summary[a1,t1,u2]",
      "assistant:original[a2]",
    ]);
    expect(out.messages[1]!.parts).toEqual([text(summaryText(records.summarize, 3))]);
  });

  it("a later summary of part of a span supersedes the older one there (later wins among equals)", () => {
    const log = basicLog();
    const newer = { ...records.summarize, summary: "newer" };
    const out = render(
      log,
      planOf(log, act("summarize", ["u1", "a1", "t1", "u2"]), act("summarize", ["u1"], newer)),
    );
    expect(outline(out)).toEqual([
      "system:original[s]",
      "assistant:summary[u1]",
      "assistant:summary[a1,t1,u2]",
      "assistant:original[a2]",
    ]);
    expect(out.messages[1]!.parts).toEqual([text(summaryText(newer, 1))]);
  });

  it("externalize renders a pointer with the artifact id, size and summary", () => {
    const log = basicLog();
    const record = {
      kind: "externalize" as const,
      artifactId: "art-9",
      summary: "ls output",
      sizeChars: 5000,
    };
    const out = render(log, planOf(log, act("externalize", ["a1", "t1"], record)));
    expect(outline(out)[2]).toBe("assistant:pointer[a1,t1]");
    const body = (out.messages[2]!.parts[0] as { text: string }).text;
    expect(body).toBe(pointerText(record, 2));
    expect(body).toContain("art-9");
    expect(body).toContain("5 KB");
    expect(body).toContain("ls output");
  });

  it("externalize wins over summarize on the same message", () => {
    const log = basicLog();
    const out = render(
      log,
      planOf(log, act("externalize", ["a1", "t1"]), act("summarize", ["a1", "t1", "u2"])),
    );
    expect(outline(out).slice(2, 4)).toEqual(["assistant:pointer[a1,t1]", "assistant:summary[u2]"]);
  });
});

describe("renderPrompt: tool results and pending calls", () => {
  it("moves a result that the log holds after a user message right behind its call", () => {
    const log = ThreadLog.from("t", [
      user("u1"),
      assistant("a1", call("c1")),
      user("u2", "are you done?"),
      tool("t1", result("c1")),
    ]);
    expect(outline(render(log))).toEqual([
      "user:original[u1]",
      "assistant:original[a1]",
      "tool:original[t1]",
      "user:original[u2]",
    ]);
  });

  it("keeps parallel results in log order, one rendered message per tool message", () => {
    const log = ThreadLog.from("t", [
      assistant("a1", call("c1"), call("c2"), call("c3")),
      tool("t2", result("c2")),
      tool("t13", result("c1"), result("c3")),
    ]);
    const out = render(log);
    expect(outline(out)).toEqual(["assistant:original[a1]", "tool:original[t2]", "tool:original[t13]"]);
  });

  it("stubs a pending call right after its call's results (default mode)", () => {
    const log = ThreadLog.from("t", [
      user("u1"),
      assistant("a1", text("two things"), call("c1", "search"), call("c2", "read_file")),
      tool("t1", result("c1")),
      user("u2"),
    ]);
    const out = render(log);
    expect(outline(out)).toEqual([
      "user:original[u1]",
      "assistant:original[a1]",
      "tool:original[t1]",
      "tool:pending_stub[]",
      "user:original[u2]",
    ]);
    expect(out.messages[3]!.parts).toEqual([result("c2", pendingResultText("read_file"))]);
    expect(out.messages[3]!.provenance.synthetic).toBe(true);
    expect(render(log, undefined, { pendingCalls: "stub" }).hash).toBe(out.hash);
  });

  it("stubs what is pending in each log value: as results arrive, and in two histories forked from one log", () => {
    const base = ThreadLog.from("t", [
      user("u1"),
      assistant("a1", call("c1", "search"), call("c2", "read_file")),
    ]);
    const stubOf = (log: ThreadLog) =>
      render(log)
        .messages.filter((m) => m.provenance.kind === "pending_stub")
        .map((m) => m.parts);
    expect(stubOf(base)).toEqual([
      [result("c1", pendingResultText("search")), result("c2", pendingResultText("read_file"))],
    ]);
    // Two forks answer different calls with the same number of result messages.
    const first = base.append([tool("t1", result("c1"))]);
    const second = base.append([tool("t2", result("c2"))]);
    expect(stubOf(first)).toEqual([[result("c2", pendingResultText("read_file"))]]);
    expect(stubOf(second)).toEqual([[result("c1", pendingResultText("search"))]]);
    expect(stubOf(first)).toEqual([[result("c2", pendingResultText("read_file"))]]);
    expect(stubOf(first.append([tool("t3", result("c2"))]))).toEqual([]);
    expect(stubOf(base)).toEqual([
      [result("c1", pendingResultText("search")), result("c2", pendingResultText("read_file"))],
    ]);
  });

  it("hold removes the pending call part and keeps the rest of the message", () => {
    const log = ThreadLog.from("t", [
      user("u1"),
      assistant("a1", text("two things"), call("c1", "search"), call("c2", "read_file")),
      tool("t1", result("c1")),
    ]);
    const out = render(log, undefined, { pendingCalls: "hold" });
    expect(outline(out)).toEqual(["user:original[u1]", "assistant:original[a1]", "tool:original[t1]"]);
    expect(out.messages[1]!.parts).toEqual([text("two things"), call("c1", "search")]);
  });

  it("hold drops a message left without parts", () => {
    const log = ThreadLog.from("t", [user("u1"), assistant("a1", call("c1"))]);
    expect(outline(render(log, undefined, { pendingCalls: "hold" }))).toEqual(["user:original[u1]"]);
    expect(outline(render(log, undefined, { pendingCalls: "stub" }))).toEqual([
      "user:original[u1]",
      "assistant:original[a1]",
      "tool:pending_stub[]",
    ]);
  });

  it("a reused call id pairs with the nearest earlier unanswered call", () => {
    const log = ThreadLog.from("t", [
      assistant("a1", call("c1", "first")),
      tool("t1", result("c1", "one")),
      assistant("a2", call("c1", "second")),
      tool("t2", result("c1", "two")),
    ]);
    const out = render(log, planOf(log, act("clear", ["a2", "t2"])));
    expect(outline(out)).toEqual([
      "assistant:original[a1]",
      "tool:original[t1]",
      "assistant:cleared[a2]",
      "tool:cleared[t2]",
    ]);
    expect(out.messages[3]!.parts).toEqual([
      result("c1", '[result cleared: second, 3 chars; recall callId "c1"]'),
    ]);
  });

  it("splits a tool message answering two assistant messages between them", () => {
    const log = ThreadLog.from("t", [
      assistant("a1", call("c1")),
      assistant("a2", call("c2")),
      tool("t12", result("c2", "two"), result("c1", "one")),
    ]);
    const out = render(log);
    expect(outline(out)).toEqual([
      "assistant:original[a1]",
      "tool:original[t12]",
      "assistant:original[a2]",
      "tool:original[t12]",
    ]);
    expect(out.messages[1]!.parts).toEqual([result("c1", "one")]);
    expect(out.messages[3]!.parts).toEqual([result("c2", "two")]);
  });

  // Regression: split a fused tool message by the log's per-part pairing, never by call id (ids get reused).
  it("splits correctly when the two assistant messages share a (reused) call id", () => {
    const log = fusedIdReuseLog();
    const out = render(log);
    expect(outline(out)).toEqual([
      "assistant:original[a1]",
      "tool:original[t1]",
      "tool:original[t2]",
      "assistant:original[a2]",
      "tool:original[t2]",
    ]);
    expect(out.messages[2]!.parts).toEqual([result("c2", "r2")]);
    expect(out.messages[4]!.parts).toEqual([result("c1", "r3")]);
  });

  // Regression: a cleared result is named after the call it is paired with, not the first call with its id.
  it("names the paired call's tool when clearing a result whose call id was reused", () => {
    const log = fusedIdReuseLog();
    const out = render(log, planOf(log, act("clear", ["t2"])));
    const contents = out.messages.flatMap((m) =>
      m.parts.flatMap((p) => (p.type === "tool_result" ? [p.content] : [])),
    );
    expect(contents.some((c) => c.startsWith("[result cleared: gamma, 2 chars;"))).toBe(true);
    expect(contents.some((c) => c.startsWith("[result cleared: alpha"))).toBe(false);
  });
});

describe("renderPrompt: injections, rehydrations and provenance", () => {
  it("puts rehydrated artifacts and then injections at the very end", () => {
    const log = ThreadLog.from("t", [user("u1"), assistant("a1", call("c1"))]);
    const out = render(log, undefined, {
      injections: [{ text: "remember: tests" }, { text: "policy", role: "system" }],
      rehydrated: [
        { artifactId: "art-1", content: "full text" },
        { artifactId: "art-2", content: "part", truncated: true },
      ],
    });
    expect(outline(out)).toEqual([
      "user:original[u1]",
      "assistant:original[a1]",
      "tool:pending_stub[]",
      "user:rehydration[]",
      "user:rehydration[]",
      "user:injection[]",
      "system:injection[]",
    ]);
    expect(out.messages[3]!.parts).toEqual([text("[Rehydrated artifact art-1]\nfull text")]);
    expect(out.messages[4]!.parts).toEqual([text("[Rehydrated artifact art-2 (truncated)]\npart")]);
    expect(out.messages[5]!.parts).toEqual([text("remember: tests")]);
    expect(out.messages.slice(2).every((m) => m.provenance.synthetic)).toBe(true);
  });

  it("reports totals, versions and the thread", () => {
    const log = basicLog();
    const plan = createPlan({ ...planOf(log, act("drop", ["u2"])), version: 7 });
    const out = render(log, plan);
    expect(out.threadId).toBe("t");
    expect(out.planVersion).toBe(7);
    expect(out.logSeq).toBe(log.length);
    expect(out.counterId).toBe(counter.id);
    const sum = out.messages.reduce((n, m) => n + m.tokens, 0);
    expect(out.tokenCount).toBe(sum + counter.requestOverhead);
    for (const m of out.messages) expect(m.tokens).toBe(counter.countMessage(m));
    expect(Object.isFrozen(out)).toBe(true);
    expect(Object.isFrozen(out.messages)).toBe(true);
    expect(Object.isFrozen(out.messages[0]!.parts)).toBe(true);
  });

  it("does not mutate the log or the plan", () => {
    const log = basicLog();
    const plan = planOf(log, act("clear", ["a1", "t1"]), act("summarize", ["u2"]));
    const before = JSON.stringify([log.messages, plan]);
    render(log, plan, { pendingCalls: "hold", injections: [{ text: "x" }] });
    expect(JSON.stringify([log.messages, plan])).toBe(before);
  });
});

describe("renderPrompt: cache stability figures", () => {
  it("counts the leading tokens unchanged since the previous render", () => {
    const log = basicLog();
    const first = render(log);
    const grown = log.append([user("u3", "more")]);
    const second = render(grown, undefined, { previous: first });
    expect(second.unchangedLeadingTokens).toBe(first.tokenCount - counter.requestOverhead);
    expect(render(log).unchangedLeadingTokens).toBe(0);
  });

  it("stops counting at the first changed message", () => {
    const log = basicLog();
    const first = render(log);
    const second = render(log, planOf(log, act("clear", ["t1"])), { previous: first });
    const expected = first.messages.slice(0, 3).reduce((n, m) => n + m.tokens, 0);
    expect(second.unchangedLeadingTokens).toBe(expected);
  });

  it("reports 0 against a render made with another counter", () => {
    const log = basicLog();
    const other = { ...simpleCounter(), id: "other" };
    const first = renderPrompt(log, emptyPlan("t"), { counter: other });
    expect(render(log, undefined, { previous: first }).unchangedLeadingTokens).toBe(0);
  });

  it("marks the end of the stable prefix: system messages and leading summaries", () => {
    const log = basicLog();
    expect(render(log).stablePrefixEnd).toBe(0);
    expect(render(log, planOf(log, act("summarize", ["u1", "a1", "t1"]))).stablePrefixEnd).toBe(1);
    expect(render(log, planOf(log, act("drop", ["s"]))).stablePrefixEnd).toBe(-1);
    const twoSpans = planOf(log, act("externalize", ["u1"]), act("summarize", ["a1", "t1"]));
    expect(render(log, twoSpans).stablePrefixEnd).toBe(2);
  });
});

describe("renderPrompt: plan validation", () => {
  it("throws PlanValidationError for a plan that orphans a result", () => {
    const log = basicLog();
    expect(() => render(log, planOf(log, act("drop", ["a1"])))).toThrow(PlanValidationError);
  });

  it("throws PlanValidationError for unknown ids and pending calls", () => {
    const log = ThreadLog.from("t", [user("u1"), assistant("a1", call("c1"))]);
    expect(() => render(log, planOf(log, act("drop", ["nope"])))).toThrow(PlanValidationError);
    expect(() => render(log, planOf(log, act("summarize", ["a1"])))).toThrow(/pending/);
  });

  it("throws for a plan of another thread", () => {
    const log = basicLog();
    expect(() => render(log, emptyPlan("other"))).toThrow(PlanValidationError);
  });

  // Regression: a child must not reuse a parent resolution that skipped ids its own basedOnSeq covers.
  it("applies a parent's action that only the child's basedOnSeq makes valid", () => {
    const log = ThreadLog.from("t", [user("u0"), user("u1")]);
    const parent = createPlan({ threadId: "t", version: 1, basedOnSeq: 0, actions: [act("drop", ["u0"])] });
    const child = nextPlan(parent, parent.actions, 2);
    expect(outline(render(log, child))).toEqual(outline(render(log, createPlan(child))));
  });
});
