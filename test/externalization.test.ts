/**
 * Externalization into a real artifact store: the artifacts it writes (content, ids, sensitivity, what a reader
 * with a given clearance gets back), the pointers the request shows in their place, and the requests staying
 * valid, on small logs, random logs and the real trajectories.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AccessDeniedError } from "../src/errors/ledger-error.js";
import { importTranscript } from "../src/log/import-jsonl.js";
import type { MessageInput } from "../src/log/message.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { type CompactionPlan, createPlan, emptyPlan, type PlanAction } from "../src/plan/compaction-plan.js";
import { decisionAt, resolveForLog } from "../src/plan/resolve-for-log.js";
import { validatePlan } from "../src/plan/validate-plan.js";
import { toProviderRequest, validateProviderRequest } from "../src/render/provider-rules.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import type { ArtifactStore } from "../src/stores/artifact-store.js";
import { createMemoryArtifactStore } from "../src/stores/memory/memory-artifact-store.js";
import {
  clip,
  createExternalization,
  describeGroup,
  type ExternalizationOptions,
  externalizationOptionsSchema,
  groupArtifactContent,
} from "../src/strategies/externalization.js";
import type { Strategy } from "../src/strategies/strategy.js";
import { pointerText } from "../src/texts/placeholders.js";
import { arbitraryLogAndPlan, fcParams, fusedIdReuseLog } from "./support/arbitrary-log.js";
import { call, records, result, text, validationError } from "./support/builders.js";
import { simpleCounter } from "./support/simple-counter.js";
import { runStrategy, type StrategyContextOptions } from "./support/strategy-context.js";
import { listTrajectories, trajectoriesAvailable } from "./support/trajectories.js";

const counter = simpleCounter();
const big = (tag: string, n = 3000) => `${tag}: ${"lorem ipsum ".repeat(n / 12)}`;

function agentLog(extra: MessageInput[] = []): ThreadLog {
  return ThreadLog.from("t", [
    { id: "sys", role: "system", parts: [text(big("system", 5000))] },
    { id: "u1", role: "user", parts: [text(big("user", 5000))] },
    { id: "a1", role: "assistant", parts: [call("c1", '{"path":"big.txt"}', "read_file")] },
    { id: "t1", role: "tool", parts: [result("c1", big("file"))] },
    { id: "a2", role: "assistant", parts: [call("c2", '{"q":"x"}', "search")] },
    { id: "t2", role: "tool", parts: [result("c2", "small")] },
    { id: "r1", role: "assistant", parts: [text(big("report"))] },
    { id: "a3", role: "assistant", parts: [call("c3", "{}", "ls")] },
    { id: "t3", role: "tool", parts: [result("c3", big("listing"))] },
    ...extra,
  ]);
}

async function step(
  strategy: Strategy,
  log: ThreadLog,
  plan = emptyPlan(log.threadId),
  options: StrategyContextOptions = {},
) {
  const run = await runStrategy(strategy, log, plan, options);
  expect(validatePlan(run.plan, log)).toEqual([]);
  renderPrompt(log, run.plan, { counter });
  return run;
}

const spans = (actions: ReadonlyArray<PlanAction>) => actions.map((a) => a.span.join("+"));

describe("createExternalization options", () => {
  const store = createMemoryArtifactStore();
  it("rejects bad values, unknown keys and a missing store, naming the field", () => {
    const cases: Array<[unknown, string]> = [
      [{ store, minChars: 10 }, "tenant"],
      [{ store, tenant: "", minChars: 10 }, "tenant"],
      [{ store, tenant: "a" }, "minChars"],
      [{ store, tenant: "a", minChars: 0 }, "minChars"],
      [{ store, tenant: "a", minChars: -5 }, "minChars"],
      [{ store, tenant: "a", minChars: 2.5 }, "minChars"],
      [{ store, tenant: "a", minChars: 10, summaryChars: 0 }, "summaryChars"],
      [{ store, tenant: "a", minChars: 10, keepRecentGroups: -1 }, "keepRecentGroups"],
      [{ store, tenant: "a", minChars: 10, ttlMs: 0 }, "ttlMs"],
      [{ store, tenant: "a", minChars: 10, trigger: {} }, "trigger"],
      [{ store, tenant: "a", minChars: 10, maxChars: 5 }, "maxChars"],
      [{ tenant: "a", minChars: 10 }, "store"],
      [{ store: {}, tenant: "a", minChars: 10 }, "store"],
    ];
    for (const [options, field] of cases) {
      const error = validationError(() => createExternalization(options as ExternalizationOptions));
      expect(error.where.field, JSON.stringify(options)).toBe(field);
    }
  });

  it("is a free externalize strategy; the JSON part round-trips through its schema", () => {
    const json = {
      tenant: "acme",
      minChars: 100,
      summaryChars: 50,
      keepRecentGroups: 0,
      ttlMs: 1000,
      name: "ext",
    };
    expect(externalizationOptionsSchema.parse(JSON.parse(JSON.stringify(json)))).toEqual(json);
    const strategy = createExternalization({ ...json, store });
    expect([strategy.name, strategy.cost, strategy.kinds]).toEqual(["ext", "free", ["externalize"]]);
  });
});

describe("createExternalization", () => {
  it("moves big settled groups out, one artifact and one action per group, and renders pointers", async () => {
    const store = createMemoryArtifactStore();
    const log = agentLog();
    const strategy = createExternalization({ store, tenant: "acme", minChars: 1000, ttlMs: 60_000 });
    const { proposal, plan } = await step(strategy, log);
    // System and user stay, the small search is not worth it, the newest group (a3+t3) is about to be read.
    expect(spans(proposal.actions)).toEqual(["a1+t1", "r1"]);
    const first = proposal.actions[0]!;
    if (first.kind !== "externalize") throw new Error("expected an externalize action");
    expect(first.record.summary).toBe(`read_file({"path":"big.txt"}) → ${clip(big("file"), 80)}`);
    const artifact = await store.get(first.record.artifactId, { tenant: "acme" });
    expect(artifact?.content).toBe(groupArtifactContent(log, log.groupAt(2)));
    expect(artifact?.meta).toMatchObject({ threadId: "t", sourceIds: ["a1", "t1"], sensitivity: "internal" });
    expect(artifact?.meta.expiresAt).toBeDefined();
    expect(first.record.sizeChars).toBe(artifact?.content.length);
    const rendered = renderPrompt(log, plan, { counter });
    expect(rendered.messages.map((m) => m.provenance.kind)).toContain("pointer");
    expect(JSON.stringify(rendered.messages)).toContain(
      JSON.stringify(pointerText(first.record, 2)).slice(1, -1),
    );
    expect(rendered.tokenCount).toBeLessThan(renderPrompt(log, emptyPlan("t"), { counter }).tokenCount);
  });

  it("clip collapses whitespace, cuts with an ellipsis and never splits a surrogate pair", () => {
    expect(clip("  a \n\t b  ", 10)).toBe("a b");
    expect(clip(" \n ", 10)).toBe("");
    expect(clip("abcdef", 4)).toBe("abc…");
    expect(clip("ab😀cd", 4)).toBe("ab…");
    expect(clip("x".repeat(100_000), 5)).toBe("xxxx…");
    expect(clip(`${" ".repeat(500)}y`, 5)).toBe("y");
  });

  it("writes a faithful, deterministic artifact: every part, one canonical JSON line per message", () => {
    const log = agentLog();
    const content = groupArtifactContent(log, log.groupAt(2));
    expect(content.split("\n").map((line) => JSON.parse(line))).toEqual([
      { id: "a1", parts: [call("c1", '{"path":"big.txt"}', "read_file")], role: "assistant" },
      { id: "t1", parts: [result("c1", big("file"))], role: "tool" },
    ]);
    expect(groupArtifactContent(log, log.groupAt(2))).toBe(content);
  });

  it("is idempotent and cumulative: the same content gives the same artifact, a rerun adds nothing", async () => {
    const store = createMemoryArtifactStore();
    const log = agentLog();
    const strategy = createExternalization({ store, tenant: "acme", minChars: 1000 });
    const one = await step(strategy, log);
    const two = await step(strategy, log);
    expect(two.proposal.actions).toEqual(one.proposal.actions);
    expect(store.size).toBe(2);
    const again = await step(strategy, log, one.plan);
    expect(again.proposal).toEqual({ actions: [] });
    expect(again.plan).toBe(one.plan);
  });

  it("keepRecentGroups 0 moves the newest group too; a larger one keeps more", async () => {
    const store = createMemoryArtifactStore();
    const log = agentLog();
    const all = await step(
      createExternalization({ store, tenant: "a", minChars: 1000, keepRecentGroups: 0 }),
      log,
    );
    expect(spans(all.proposal.actions)).toEqual(["a1+t1", "r1", "a3+t3"]);
    const few = await step(
      createExternalization({ store, tenant: "a", minChars: 1000, keepRecentGroups: 2 }),
      log,
    );
    expect(spans(few.proposal.actions)).toEqual(["a1+t1"]);
  });

  it("leaves pending calls, pinned messages and groups the plan already touched alone", async () => {
    const store = createMemoryArtifactStore();
    const log = agentLog([
      { id: "a4", role: "assistant", parts: [call("c4", big("args"))] },
      { id: "u2", role: "user", parts: [text("hurry")] },
    ]);
    const pinned = ThreadLog.from("p", [
      { id: "a", role: "assistant", parts: [text(big("kept"))], meta: { pinned: true } },
      { id: "b", role: "assistant", parts: [text("next")] },
    ]);
    const strategy = createExternalization({ store, tenant: "a", minChars: 1000, keepRecentGroups: 0 });
    const touched = createPlan({
      threadId: "t",
      version: 1,
      basedOnSeq: log.length,
      actions: [{ kind: "clear", span: ["a1", "t1"], record: records.clear, strategy: "x", reason: "" }],
    });
    expect(spans((await step(strategy, log, touched)).proposal.actions)).toEqual(["r1", "a3+t3"]);
    expect((await step(strategy, pinned)).proposal).toEqual({ actions: [] });
  });

  it("takes the strictest sensitivity of the group's messages", async () => {
    const store = createMemoryArtifactStore();
    const log = ThreadLog.from("t", [
      { id: "a", role: "assistant", parts: [call("c")], meta: { sensitivity: "public" } },
      { id: "r", role: "tool", parts: [result("c", big("payroll"))], meta: { sensitivity: "confidential" } },
      { id: "u", role: "user", parts: [text("thanks")] },
    ]);
    const { proposal } = await step(createExternalization({ store, tenant: "hr", minChars: 100 }), log);
    const record = proposal.actions[0]!.record;
    if (record.kind !== "externalize") throw new Error("expected an externalize record");
    await expect(store.get(record.artifactId, { tenant: "hr" })).rejects.toBeInstanceOf(AccessDeniedError);
    expect(
      (await store.head(record.artifactId, { tenant: "hr", clearance: "confidential" }))?.sensitivity,
    ).toBe("confidential");
  });

  it("summarizes parallel calls with reasoning, errors and reused call ids by the log's own pairing", async () => {
    const log = ThreadLog.from("t", [
      { id: "a0", role: "assistant", parts: [call("c1", '{"n":0}', "first")] },
      { id: "t0", role: "tool", parts: [result("c1", "zero")] },
      {
        id: "a1",
        role: "assistant",
        parts: [
          { type: "reasoning", text: "two at once", signature: "sig" },
          call("c1", '{"n":1}', "grep"),
          call("c2", "{}", "cat"),
        ],
      },
      { id: "t1", role: "tool", parts: [result("c2", big("cat out", 600)), result("c1", "no match", true)] },
      { id: "u", role: "user", parts: [text("ok")] },
    ]);
    const store = createMemoryArtifactStore();
    const { proposal } = await step(
      createExternalization({ store, tenant: "a", minChars: 100, summaryChars: 1000 }),
      log,
    );
    expect(spans(proposal.actions)).toEqual(["a1+t1"]);
    const record = proposal.actions[0]!.record;
    if (record.kind !== "externalize") throw new Error("expected an externalize record");
    expect(record.summary).toBe(
      `grep({"n":1}) → error: no match; cat({}) → ${clip(big("cat out", 600), 80)}`,
    );
    const content = (await store.get(record.artifactId, { tenant: "a" }))!.content;
    expect(JSON.parse(content.split("\n")[0]!).parts[0]).toEqual({
      type: "reasoning",
      text: "two at once",
      signature: "sig",
    });
    const short = await step(
      createExternalization({ store, tenant: "a", minChars: 100, summaryChars: 12 }),
      log,
    );
    const shortRecord = short.proposal.actions[0]!.record;
    expect(shortRecord.kind === "externalize" && shortRecord.summary).toBe('grep({"n":1…');
  });

  it("pairs results by the log, not by id, when one tool message answers two messages reusing an id", () => {
    const log = fusedIdReuseLog();
    expect(describeGroup(log, log.groupAt(0), 200)).toBe("alpha({}) → r1; beta({}) → r2; gamma({}) → r3");
  });

  it("skips groups whose pointer would cost more than the group", async () => {
    const log = ThreadLog.from("t", [
      { id: "a", role: "assistant", parts: [call("c")] },
      { id: "r", role: "tool", parts: [result("c", "tiny result")] },
      { id: "u", role: "user", parts: [text("ok")] },
    ]);
    const store = createMemoryArtifactStore();
    expect((await step(createExternalization({ store, tenant: "a", minChars: 1 }), log)).proposal).toEqual({
      actions: [],
    });
    expect(store.size).toBe(0);
  });

  it("turns a failed put into an error note and leaves that group in place; the others still move", async () => {
    const inner = createMemoryArtifactStore();
    const flaky: ArtifactStore = {
      put: async (input) => {
        if (input.sourceIds?.includes("r1")) throw new Error("disk full");
        return inner.put(input);
      },
      get: inner.get,
      head: inner.head,
    };
    const log = agentLog();
    const { proposal } = await step(
      createExternalization({ store: flaky, tenant: "a", minChars: 1000 }),
      log,
    );
    expect(spans(proposal.actions)).toEqual(["a1+t1"]);
    expect(proposal.notes).toHaveLength(1);
    expect(proposal.notes?.[0]).toMatchObject({ level: "error", code: "artifact_store_failed" });
    expect(proposal.notes?.[0]?.message).toMatch(/r1.*disk full/);
    const down: ArtifactStore = { ...flaky, put: () => Promise.reject(new Error("offline")) };
    const none = await step(createExternalization({ store: down, tenant: "a", minChars: 1000 }), log);
    expect(none.proposal.actions).toEqual([]);
    expect(none.proposal.notes?.map((n) => n.level)).toEqual(["error", "error"]);
  });

  it("waits for its trigger and stops when the run is aborted", async () => {
    const store = createMemoryArtifactStore();
    const log = agentLog();
    const tokens = renderPrompt(log, emptyPlan("t"), { counter }).tokenCount;
    const strategy = createExternalization({ store, tenant: "a", minChars: 1000, trigger: { usage: 0.5 } });
    expect((await step(strategy, log, undefined, { contextWindow: tokens * 2 })).proposal).toEqual({
      actions: [],
    });
    expect((await step(strategy, log, undefined, { contextWindow: tokens })).proposal.actions).toHaveLength(
      2,
    );
    const aborted = await step(
      createExternalization({ store, tenant: "a", minChars: 1000 }),
      log,
      undefined,
      {
        signal: AbortSignal.abort(),
      },
    );
    expect(aborted.proposal.actions).toEqual([]);
    expect(aborted.proposal.notes?.[0]).toMatchObject({ level: "warning", code: "aborted" });
  });

  it("property: on random logs and plans the proposal validates, renders no bigger, and touches only untouched groups", async () => {
    const optionsArb = fc.record({
      minChars: fc.integer({ min: 1, max: 2000 }),
      summaryChars: fc.integer({ min: 1, max: 300 }),
      keepRecentGroups: fc.integer({ min: 0, max: 3 }),
    });
    await fc.assert(
      fc.asyncProperty(arbitraryLogAndPlan(), optionsArb, async ({ log, plan }, options) => {
        const store = createMemoryArtifactStore();
        const strategy = createExternalization({ ...options, store, tenant: "t" });
        const before = renderPrompt(log, plan, { counter }).tokenCount;
        const run = await step(strategy, log, plan);
        expect(renderPrompt(log, run.plan, { counter }).tokenCount).toBeLessThanOrEqual(before);
        expect(changedOnlyIncluded(log, plan, run.plan)).toBe(true);
        expect((await step(strategy, log, run.plan)).proposal).toEqual({ actions: [] });
      }),
      fcParams(150),
    );
  });
});

/** True when every message whose decision changed was included before and belongs to a non-pending group. */
function changedOnlyIncluded(log: ThreadLog, before: CompactionPlan, after: CompactionPlan): boolean {
  const was = resolveForLog(before, log);
  const now = resolveForLog(after, log);
  return log.messages.every((m) => {
    const old = decisionAt(was, m.seq)?.kind ?? "include";
    const next = decisionAt(now, m.seq)?.kind ?? "include";
    if (old === next) return true;
    const group = log.groupAt(log.groupIndexOf(m.seq));
    return (
      old === "include" &&
      next === "externalize" &&
      !group.pending &&
      group.kind !== "system" &&
      group.kind !== "user"
    );
  });
}

describe.skipIf(!trajectoriesAvailable)("createExternalization on the real trajectories", () => {
  for (const file of listTrajectories()) {
    it(`${file.name}: valid, no bigger, idempotent`, async () => {
      const log = importTranscript(ThreadLog.empty(file.name), file.text);
      const store = createMemoryArtifactStore();
      const strategy = createExternalization({ store, tenant: "bench", minChars: 2000 });
      const before = renderPrompt(log, emptyPlan(log.threadId), { counter }).tokenCount;
      const run = await step(strategy, log);
      expect(renderPrompt(log, run.plan, { counter }).tokenCount).toBeLessThanOrEqual(before);
      expect(changedOnlyIncluded(log, emptyPlan(log.threadId), run.plan)).toBe(true);
      const prompt = renderPrompt(log, run.plan, { counter });
      for (const format of ["openai", "responses", "anthropic"] as const) {
        expect(validateProviderRequest(format, toProviderRequest(format, prompt)), format).toEqual([]);
      }
      const size = store.size;
      expect((await step(strategy, log)).proposal.actions).toEqual(run.proposal.actions);
      expect(store.size).toBe(size);
      expect((await step(strategy, log, run.plan)).proposal).toEqual({ actions: [] });
    });
  }
});
