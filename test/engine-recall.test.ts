/**
 * `engine.recall`: the answer to the model's `recall` tool call, by artifact id (gated by tenant, clearance and
 * thread, cut to the cap with a marker), by call id (the result from the log, gated by its sensitivity) and by query (the messages the current plan compacts, searched in the
 * log store, best first, within the same cap), and what it refuses.
 */
import { describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import type { EngineEvent } from "../src/engine/engine-events.js";
import type { ContextEngineOptions } from "../src/engine/engine-options.js";
import type { CallRecall, QueryRecall, RecallRequest } from "../src/engine/recall.js";
import { AccessDeniedError, NotFoundError, ValidationError } from "../src/errors/ledger-error.js";
import type { MessageInput } from "../src/log/message.js";
import { createPlan, type PlanAction } from "../src/plan/compaction-plan.js";
import { RECALL_TOOL, recallTool } from "../src/render/recall-tool.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import { openSqliteStores } from "../src/stores/sqlite/index.js";
import type { Stores } from "../src/stores/stores.js";
import { textTokenCounter } from "../src/texts/text-excerpt.js";
import { records } from "./support/builders.js";
import { simpleCounter } from "./support/simple-counter.js";
import { rejection } from "./support/store-cases-log.js";

const counter = simpleCounter();
const countText = textTokenCounter(counter);

function engineOn(stores: Stores, options: Partial<ContextEngineOptions> = {}) {
  const events: EngineEvent[] = [];
  const engine = createContextEngine({
    stores,
    counter,
    budget: { contextWindow: 100_000, reserveOutput: 0 },
    events: (e) => events.push(e),
    ...options,
  });
  return { engine, events };
}

const say = (id: string, role: "user" | "assistant", text: string): MessageInput => ({
  id,
  role,
  parts: [{ type: "text", text }],
});

/** A thread of ten messages on different subjects; the test's plan compacts some of them. */
const THREAD: MessageInput[] = [
  say("u0", "user", "Please migrate the billing database to the new schema"),
  {
    id: "a0",
    role: "assistant",
    parts: [
      { type: "tool_call", callId: "c0", name: "run_sql", args: '{"sql":"ALTER TABLE invoices ADD total"}' },
    ],
  },
  {
    id: "t0",
    role: "tool",
    parts: [{ type: "tool_result", callId: "c0", content: "ERROR: column total of invoices already exists" }],
  },
  say("x0", "assistant", "The invoices table already had a total column, so the migration is half done."),
  say("u1", "user", "Also rotate the invoices archive and check the billing cron"),
  say("x1", "assistant", "The billing cron runs nightly; the archive was rotated."),
  say("u2", "user", "What about the secret billing keys?"),
  {
    ...say("x2", "assistant", "The billing keys are in the vault under billing/prod."),
    meta: { sensitivity: "confidential" },
  },
  say("u3", "user", "Now write the invoices report"),
  say("x3", "assistant", "Working on the report."),
];

const action = <K extends PlanAction["kind"]>(kind: K, span: string[]): PlanAction =>
  ({ kind, span, record: records[kind], strategy: "test", reason: `test ${kind}` }) as PlanAction;

/** Clears the tool round, summarizes u1+x1, drops u2+x2 and leaves the rest (u0, x0, u3, x3) kept. */
async function compactedThread(stores: Stores, options: Partial<ContextEngineOptions> = {}) {
  const made = engineOn(stores, options);
  await made.engine.append("t", THREAD);
  const plan = createPlan({
    threadId: "t",
    version: 1,
    basedOnSeq: THREAD.length,
    actions: [action("clear", ["a0", "t0"]), action("summarize", ["u1", "x1"]), action("drop", ["u2", "x2"])],
  });
  await stores.plans.commit(plan, 0);
  return made;
}

const ids = (r: QueryRecall) => r.matches.map((m) => m.messageId);

async function query(engine: { recall(t: string, r: RecallRequest): Promise<unknown> }, r: RecallRequest) {
  const result = await engine.recall("t", r);
  if ((result as QueryRecall).kind !== "query") throw new Error("expected a query recall");
  return result as QueryRecall;
}

describe("recall by artifact id", () => {
  it("brings back an artifact the pipeline externalized, named by the pointer in the request", async () => {
    const stores = createMemoryStores();
    const { engine, events } = engineOn(stores, {
      budget: { contextWindow: 2_500, reserveOutput: 0 },
      pipeline: { strategies: [{ use: "externalize", minChars: 1_000, keepRecentGroups: 1 }] },
    });
    const big = (n: number) => `line ${n}: ${"the build log says nothing new. ".repeat(3)}\n`.repeat(40);
    await engine.append("t", [
      say("u", "user", "Fix the build"),
      {
        id: "a1",
        role: "assistant",
        parts: [{ type: "tool_call", callId: "c1", name: "build", args: "{}" }],
      },
      { id: "r1", role: "tool", parts: [{ type: "tool_result", callId: "c1", content: big(1) }] },
      say("x", "assistant", "Let me look again."),
    ]);
    const turn = await engine.prepareTurn("t", { format: "openai" });
    const pointer = JSON.stringify(turn.request).match(/artifact (art_[0-9a-f]+)/);
    expect(pointer).not.toBeNull();
    const result = await engine.recall("t", { artifactId: pointer![1]! });
    expect(result).toMatchObject({ kind: "artifact", artifactId: pointer![1], truncated: false });
    const stored = await stores.artifacts.get(pointer![1]!, { tenant: "default" });
    expect(result.content).toBe(stored!.content);
    expect(result.content).toContain("line 1: the build log says nothing new.");
    expect(Object.isFrozen(result)).toBe(true);
    expect(events.filter((e) => e.type === "recalled")).toEqual([
      expect.objectContaining({ artifactId: pointer![1], chars: result.content.length, truncated: false }),
    ]);
  });

  it("cuts a large artifact to the cap: head and tail, with a marker of what was left out", async () => {
    const stores = createMemoryStores();
    const { engine } = engineOn(stores, { recall: { maxTokens: 300 } });
    const content = Array.from({ length: 2_000 }, (_, i) => `row ${i} of the report`).join("\n");
    const { artifactId } = await stores.artifacts.put({ content, tenant: "default", threadId: "t" });
    const result = await engine.recall("t", { artifactId });
    expect(result.truncated).toBe(true);
    expect(countText(result.content)).toBeLessThanOrEqual(300);
    expect(result.content.startsWith("row 0 of the report\n")).toBe(true);
    expect(result.content.endsWith("row 1999 of the report")).toBe(true);
    expect(result.content).toMatch(/\[… \d+ chars \(\d+ lines, ~\d+ tokens\) omitted …\]/);
  });

  it("is gated like an artifact read: tenant, clearance and thread", async () => {
    const stores = createMemoryStores();
    const { engine, events } = engineOn(stores, { tenant: "acme" });
    const put = (content: string, more: object = {}) =>
      stores.artifacts.put({ content, tenant: "acme", threadId: "t", ...more }).then((m) => m.artifactId);
    const ok = await put("visible");
    const otherTenant = await put("theirs", { tenant: "globex" });
    const secret = await put("secret", { sensitivity: "confidential" });
    const otherThread = await put("elsewhere", { threadId: "u" });
    const noThread = await put("loose", { threadId: undefined });
    expect((await engine.recall("t", { artifactId: ok })).content).toBe("visible");
    for (const artifactId of [otherTenant, otherThread, noThread, "art_missing", "turn-inputs:call-1"]) {
      const error = await rejection(engine.recall("t", { artifactId }), NotFoundError);
      expect(error.where).toEqual({ threadId: "t", field: "artifactId" });
      expect(error.message).toContain(JSON.stringify(artifactId));
    }
    const denied = await rejection(engine.recall("t", { artifactId: secret }), AccessDeniedError);
    expect(denied.message).toContain("clearance (internal)");
    expect(events.filter((e) => e.type === "error")).toHaveLength(6);
    const cleared = engineOn(stores, { tenant: "acme", clearance: "confidential" }).engine;
    expect((await cleared.recall("t", { artifactId: secret })).content).toBe("secret");
  });
});

async function byCall(engine: { recall(t: string, r: RecallRequest): Promise<unknown> }, callId: string) {
  const result = await engine.recall("t", { callId });
  if ((result as CallRecall).kind !== "call") throw new Error("expected a call recall");
  return result as CallRecall;
}

const call = (id: string, callId: string, name: string): MessageInput => ({
  id,
  role: "assistant",
  parts: [{ type: "tool_call", callId, name, args: "{}" }],
});

const result = (
  id: string,
  callId: string,
  content: string,
  meta: MessageInput["meta"] = {},
): MessageInput => ({
  id,
  role: "tool",
  parts: [{ type: "tool_result", callId, content }],
  meta,
});

describe("recall by call id", () => {
  it("brings back a cleared result from the log, whole, with the tool's name", async () => {
    const stores = createMemoryStores();
    const { engine, events } = await compactedThread(stores);
    const turn = await engine.prepareTurn("t", { format: "openai" });
    // The request shows only the placeholder; the log still has the result.
    expect(JSON.stringify(turn.request)).not.toContain("already exists");
    const answer = await byCall(engine, "c0");
    expect(answer).toEqual({
      kind: "call",
      callId: "c0",
      toolName: "run_sql",
      results: 1,
      content: "ERROR: column total of invoices already exists",
      truncated: false,
    });
    expect(Object.isFrozen(answer)).toBe(true);
    expect(events.filter((e) => e.type === "recalled").at(-1)).toMatchObject({
      callId: "c0",
      chars: answer.content.length,
      truncated: false,
    });
  });

  it("marks a failed result and gives every result of a reused call id under its own header", async () => {
    const { engine } = engineOn(createMemoryStores());
    await engine.append("t", [
      say("u", "user", "Deploy twice"),
      call("a1", "dup", "deploy"),
      {
        id: "r1",
        role: "tool",
        parts: [{ type: "tool_result", callId: "dup", content: "timeout", isError: true }],
      },
      call("a2", "dup", "deploy"),
      result("r2", "dup", "deployed v2"),
    ]);
    const answer = await byCall(engine, "dup");
    expect(answer.results).toBe(2);
    expect(answer.content).toBe(
      '[result 1 of 2 for call "dup" · message r1]\n[error] timeout\n\n[result 2 of 2 for call "dup" · message r2]\ndeployed v2',
    );
  });

  it("is gated by the result message's sensitivity against the engine's clearance", async () => {
    const stores = createMemoryStores();
    const { engine } = engineOn(stores);
    await engine.append("t", [
      say("u", "user", "Read the keys"),
      call("a1", "k1", "read_vault"),
      result("r1", "k1", "prod key: 0xDEADBEEF", { sensitivity: "confidential" }),
    ]);
    const denied = await rejection(engine.recall("t", { callId: "k1" }), AccessDeniedError);
    expect(denied.where).toEqual({ threadId: "t", field: "callId" });
    expect(denied.message).toContain("clearance (internal)");
    expect(denied.message).not.toContain("DEADBEEF");
    const cleared = engineOn(stores, { clearance: "confidential" }).engine;
    expect((await byCall(cleared, "k1")).content).toBe("prod key: 0xDEADBEEF");
  });

  it("refuses an unknown call and a call without a result, naming the thread and the id", async () => {
    const { engine } = engineOn(createMemoryStores());
    await engine.append("t", [say("u", "user", "Search"), call("a1", "waiting", "search")]);
    for (const [callId, why] of [
      ["nope", "no such call in this thread"],
      ["waiting", "that call has no result yet"],
    ]) {
      const error = await rejection(engine.recall("t", { callId: callId! }), NotFoundError);
      expect(error.where).toEqual({ threadId: "t", field: "callId" });
      expect(error.message).toContain(`thread "t"`);
      expect(error.message).toContain(JSON.stringify(callId));
      expect(error.message).toContain(why);
    }
    await rejection(engine.recall("elsewhere", { callId: "nope" }), NotFoundError);
  });

  it("cuts a large result to the cap: head and tail, with a marker of what was left out", async () => {
    const { engine } = engineOn(createMemoryStores(), { recall: { maxTokens: 300 } });
    const content = Array.from({ length: 2_000 }, (_, i) => `row ${i} of the listing`).join("\n");
    await engine.append("t", [
      say("u", "user", "List"),
      call("a1", "ls", "list"),
      result("r1", "ls", content),
    ]);
    const answer = await byCall(engine, "ls");
    expect(answer.truncated).toBe(true);
    expect(countText(answer.content)).toBeLessThanOrEqual(300);
    expect(answer.content.startsWith("row 0 of the listing\n")).toBe(true);
    expect(answer.content.endsWith("row 1999 of the listing")).toBe(true);
    expect(answer.content).toMatch(/\[… \d+ chars \(\d+ lines, ~\d+ tokens\) omitted …\]/);
    // Reused ids share the cap the same way.
    await engine.append("t", [call("a2", "ls", "list"), result("r2", "ls", content)]);
    const both = await byCall(engine, "ls");
    expect([both.results, both.truncated]).toEqual([2, true]);
    expect(countText(both.content)).toBeLessThanOrEqual(300);
    expect(both.content.match(/row 1999 of the listing/g)).toHaveLength(2);
  });
});

describe("recall by query", () => {
  it("searches only what the current plan compacts, best first, with each message's fate", async () => {
    const stores = createMemoryStores();
    const { engine, events } = await compactedThread(stores);
    const result = await query(engine, { query: "invoices" });
    // x0, u3 and x3 mention it too but are kept; of the others, the shortest messages weigh most.
    expect(ids(result)).toEqual(["t0", "a0", "u1"]);
    expect(result.matches.map((m) => [m.fate, m.role])).toEqual([
      ["cleared", "tool"],
      ["cleared", "assistant"],
      ["summarized", "user"],
    ]);
    expect(result.matches[1]!.text).toBe('run_sql({"sql":"ALTER TABLE invoices ADD total"})');
    expect(result.truncated).toBe(false);
    expect(result.content).toContain("[message t0 · tool · cleared]\nERROR: column total of invoices");
    const billing = await query(engine, { query: "billing cron", limit: 1 });
    expect(billing.matches).toEqual([expect.objectContaining({ messageId: "x1", fate: "summarized" })]);
    expect(ids(await query(engine, { query: "billing" }))).toEqual(["u2", "x1", "u1"]);
    expect(events.filter((e) => e.type === "recalled").at(-1)).toMatchObject({
      query: "billing",
      matches: 3,
    });
  });

  it("leaves out messages above the engine's clearance", async () => {
    const stores = createMemoryStores();
    await compactedThread(stores);
    const cleared = engineOn(stores, { clearance: "confidential" }).engine;
    expect(ids(await query(cleared, { query: "vault" }))).toEqual(["x2"]);
    const plain = engineOn(stores).engine;
    const none = await query(plain, { query: "vault" });
    expect(none.matches).toEqual([]);
    expect(none.content).toBe('No compacted earlier message matches "vault".');
  });

  it("gives the same answers on SQLite, and without a store search (the engine searches the log)", async () => {
    const memory = await compactedThread(createMemoryStores());
    const sqlite = await compactedThread(openSqliteStores({ path: ":memory:" }));
    const base = createMemoryStores();
    const { search: _omitted, ...plainLog } = base.log;
    const plain = await compactedThread({ ...base, log: plainLog });
    for (const q of ["invoices", "billing", "billing cron", "archive rotated", "nothing here"]) {
      const expected = await query(memory.engine, { query: q });
      expect(await query(sqlite.engine, { query: q }), q).toEqual(expected);
      expect(await query(plain.engine, { query: q }), q).toEqual(expected);
    }
  });

  it("keeps the answer within the cap: small matches whole, large ones cut alike, the rest left out", async () => {
    const stores = createMemoryStores();
    const { engine } = engineOn(stores, { recall: { maxTokens: 600 } });
    const long = (n: number) => `needle ${n} ${"hay ".repeat(400)}end ${n}`;
    await engine.append("t", [
      say("s", "user", "needle short"),
      ...[1, 2, 3].map((n) => say(`l${n}`, "assistant", long(n))),
      say("keep", "user", "latest"),
    ]);
    const span = ["s", "l1", "l2", "l3"];
    await stores.plans.commit(
      createPlan({ threadId: "t", version: 1, basedOnSeq: 5, actions: [action("drop", span)] }),
      0,
    );
    const result = await query(engine, { query: "needle", limit: 4 });
    expect(result.truncated).toBe(true);
    expect(countText(result.content)).toBeLessThanOrEqual(600);
    expect(result.matches).toHaveLength(4);
    const short = result.matches.find((m) => m.messageId === "s")!;
    expect([short.text, short.truncated]).toEqual(["needle short", false]);
    for (const m of result.matches.filter((m) => m.messageId !== "s")) {
      expect(m.truncated).toBe(true);
      expect(m.text).toMatch(/^needle \d [\s\S]*omitted[\s\S]*end \d$/);
    }
    const tight = engineOn(stores, { recall: { maxTokens: 100 } }).engine;
    const few = await query(tight, { query: "needle", limit: 4 });
    expect(few.matches.length).toBeLessThan(4);
    expect(few.truncated).toBe(true);
    expect(few.content).toMatch(/more left out to stay within the size limit/);
    expect(countText(few.content)).toBeLessThanOrEqual(100);
  });

  it("brings a matched call's compacted results along, beyond the limit: words of a command find its output", async () => {
    const stores = createMemoryStores();
    const { engine } = engineOn(stores);
    const run = (n: number, cmd: string): MessageInput[] => [
      {
        id: `a${n}`,
        role: "assistant",
        parts: [{ type: "tool_call", callId: `c${n}`, name: "bash", args: JSON.stringify({ cmd }) }],
      },
      result(`r${n}`, `c${n}`, "<returncode>0</returncode>\n<output>\n</output>"),
    ];
    await engine.append("t", [
      say("u", "user", "Patch the setup"),
      ...run(1, "sed -i s/foo/bar/ setup.py"),
      ...run(2, "ls"),
      ...run(3, "cat README"),
      say("last", "user", "Go on"),
    ]);
    const dropped = ["a1", "r1", "a2", "r2"];
    await stores.plans.commit(
      createPlan({
        threadId: "t",
        version: 1,
        basedOnSeq: 8,
        actions: [action("drop", dropped), action("clear", ["r3"])],
      }),
      0,
    );
    const found = await query(engine, { query: "sed setup", limit: 1 });
    expect(found.matches.map((m) => [m.messageId, m.fate])).toEqual([
      ["a1", "dropped"],
      ["r1", "dropped"],
    ]);
    expect(found.content).toContain("[message r1 · tool · dropped]\n<returncode>0</returncode>");
    // A result found on its own is not repeated after its call; a kept call brings nothing (it is in the request).
    const both = await query(engine, { query: "returncode sed" });
    expect(ids(both).filter((id) => id === "r1")).toHaveLength(1);
    expect(ids(await query(engine, { query: "README" }))).toEqual([]);
  });

  it("refuses a thread without messages", async () => {
    const { engine } = engineOn(createMemoryStores());
    const error = await rejection(engine.recall("nowhere", { query: "x" }), NotFoundError);
    expect(error.where.threadId).toBe("nowhere");
  });
});

describe("recall arguments", () => {
  it("refuses what the tool does not allow, naming the field", async () => {
    const stores = createMemoryStores();
    const { engine, events } = await compactedThread(stores);
    const cases: Array<[unknown, string]> = [
      [{ artifactId: "art_1", query: "x" }, "artifactId"],
      [{ callId: "c0", query: "x" }, "callId"],
      [{ artifactId: "art_1", callId: "c0" }, "artifactId"],
      [{ callId: "" }, "callId"],
      [{ callId: "  " }, "callId"],
      [{ callId: 7 }, "callId"],
      [{ callId: "c0", limit: 2 }, "limit"],
      [{}, "query"],
      [{ query: "" }, "query"],
      [{ query: "  \n\t " }, "query"],
      [{ query: "x", limit: 0 }, "limit"],
      [{ query: "x", limit: 51 }, "limit"],
      [{ query: "x", limit: 2.5 }, "limit"],
      [{ artifactId: "art_1", limit: 3 }, "limit"],
      [{ artifactId: "" }, "artifactId"],
      [{ query: "x", extra: true }, "extra"],
      [{ query: 5 }, "query"],
      ["invoices", "(value)"],
    ];
    for (const [request, field] of cases) {
      const error = await rejection(engine.recall("t", request as RecallRequest), ValidationError);
      expect(error.where.field, JSON.stringify(request)).toBe(field);
    }
    await rejection(engine.recall("", { query: "x" }), ValidationError);
    expect(events.filter((e) => e.type === "error" && e.operation === "recall")).toHaveLength(
      cases.length + 1,
    );
  });

  it("reads null as absent (strict tool schemas send null for unused arguments)", async () => {
    const stores = createMemoryStores();
    const { engine } = await compactedThread(stores);
    const request = {
      artifactId: null,
      callId: null,
      query: "invoices",
      limit: null,
    } as unknown as RecallRequest;
    expect(ids(await query(engine, request))).toEqual(["t0", "a0", "u1"]);
    const byId = { artifactId: null, callId: "c0", query: null, limit: null } as unknown as RecallRequest;
    expect((await engine.recall("t", byId)).kind).toBe("call");
  });
});

describe("the recall tool in a turn", () => {
  it.each(["openai", "responses", "anthropic"] as const)(
    "%s: RECALL_TOOL in prepareTurn's tools is sent as recallTool(format) and counted",
    async (format) => {
      const stores = createMemoryStores();
      const { engine } = await compactedThread(stores);
      const bare = await engine.prepareTurn("t", { format });
      const turn = await engine.prepareTurn("t", { format, tools: [RECALL_TOOL] });
      expect((turn.request as { tools?: unknown[] }).tools).toEqual([recallTool(format)]);
      expect(turn.stats.toolTokens).toBeGreaterThan(bare.stats.toolTokens);
    },
  );
});

describe("recall options", () => {
  it("clearance and recall.maxTokens are validated with the engine's options", () => {
    const cases: Array<[Partial<ContextEngineOptions>, string]> = [
      [{ clearance: "secret" as never }, "clearance"],
      [{ recall: { maxTokens: 10 } }, "recall.maxTokens"],
      [{ recall: { maxTokens: 1.5 } }, "recall.maxTokens"],
      [{ recall: { max: 5 } as never }, "recall.max"],
    ];
    for (const [options, field] of cases) {
      let error: unknown;
      try {
        engineOn(createMemoryStores(), options);
      } catch (e) {
        error = e;
      }
      expect(error, JSON.stringify(options)).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).where.field).toBe(field);
    }
  });
});
