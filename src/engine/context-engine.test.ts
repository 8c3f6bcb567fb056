import { describe, expect, it } from "vitest";
import { createContextEngine } from "../context-engine.js";
import {
  BudgetInfeasibleError,
  NotFoundError,
  SummarizerError,
  ValidationError,
  VersionConflictError,
} from "../errors/ledger-error.js";
import type { MessageInput } from "../log/message.js";
import { nextPlan } from "../plan/compaction-plan.js";
import { validateProviderRequest } from "../render/provider-rules.js";
import { createMemoryStores } from "../stores/memory/memory-stores.js";
import type { Stores } from "../stores/stores.js";
import type { Summarizer } from "../strategies/summarizer.js";
import type { CountableMessage, MessageCounter } from "../tokens/tokenizer.js";
import type { ContextEngine } from "./context-engine.js";
import type { EngineEvent } from "./engine-events.js";
import type { ContextEngineOptions, ContextEngineSettings, EngineBudget } from "./engine-options.js";
import { formatExplanation } from "./explain.js";

// ---- helpers -------------------------------------------------------------------------------------------

/** A dependency-free counter: 1 token per 4 characters plus 3 per message; counts the calls it answers. */
function countingCounter(id = "test:chars/4"): MessageCounter & { calls: number } {
  const counter = {
    id,
    requestOverhead: 3,
    calls: 0,
    countMessage(message: CountableMessage): number {
      counter.calls++;
      let chars = 0;
      for (const p of message.parts) {
        if (p.type === "text" || p.type === "reasoning") chars += p.text.length;
        else if (p.type === "tool_call") chars += p.name.length + p.args.length;
        else if (p.type === "tool_result") chars += p.content.length;
        else chars += 340;
      }
      return 3 + Math.ceil(chars / 4);
    },
  };
  return counter;
}

const SYSTEM: MessageInput = {
  id: "sys",
  role: "system",
  parts: [{ type: "text", text: "You are careful." }],
};

/** A user question and a long assistant answer (~`chars / 4` tokens): only summaries or drops shrink it. */
function chatTurn(n: number, chars = 1_600): MessageInput[] {
  const answer = `Finding ${n}: the module keeps its state in a cache. `
    .repeat(Math.ceil(chars / 50))
    .slice(0, chars);
  return [
    {
      id: `u${n}`,
      role: "user",
      parts: [{ type: "text", text: `Question ${n}: what does module ${n} do?` }],
    },
    { id: `a${n}`, role: "assistant", parts: [{ type: "text", text: answer }] },
  ];
}

/** A user request, a tool call with a big result and the assistant's short answer. */
function toolTurn(n: number, resultChars = 2_000): MessageInput[] {
  return [
    { id: `u${n}`, role: "user", parts: [{ type: "text", text: `Please inspect file ${n}.` }] },
    {
      id: `a${n}`,
      role: "assistant",
      parts: [{ type: "tool_call", callId: `c${n}`, name: "read_file", args: `{"path":"f${n}.txt"}` }],
    },
    {
      id: `r${n}`,
      role: "tool",
      parts: [{ type: "tool_result", callId: `c${n}`, content: "x".repeat(resultChars) }],
    },
    { id: `d${n}`, role: "assistant", parts: [{ type: "text", text: `File ${n} is fine.` }] },
  ];
}

function turns(make: (n: number) => MessageInput[], count: number, question = true): MessageInput[] {
  const out = [SYSTEM];
  for (let n = 0; n < count; n++) out.push(...make(n));
  if (question) out.push({ id: "q", role: "user", parts: [{ type: "text", text: "What next?" }] });
  return out;
}

const brokenSummarizer: Summarizer = {
  id: "broken",
  promptVersion: "1",
  summarize: async () => {
    throw new SummarizerError("broken", "server_error", "always down");
  },
};

interface Harness {
  readonly engine: ContextEngine;
  readonly events: EngineEvent[];
  readonly counter: MessageCounter & { calls: number };
}

function harness(stores: Stores, extra: Partial<ContextEngineOptions> = {}): Harness {
  const events: EngineEvent[] = [];
  const counter = countingCounter();
  const engine = createContextEngine({
    stores,
    counter,
    budget: { contextWindow: 100_000, reserveOutput: 0, safetyMargin: 0 },
    events: (e) => events.push(e),
    now: () => Date.UTC(2025, 0, 1),
    // These tests follow the path a model summarizer takes (summaries in the background); the extractive
    // default makes its summaries inline, which its own test below covers.
    summarization: "background",
    ...extra,
  });
  return { engine, events, counter };
}

function ofType<K extends EngineEvent["type"]>(events: ReadonlyArray<EngineEvent>, type: K) {
  return events.filter((e): e is Extract<EngineEvent, { type: K }> => e.type === type);
}

/** Stores whose log append lets `race` write first, `times` times. */
function racingLog(stores: Stores, race: () => Promise<unknown>, times = 1): Stores {
  let left = times;
  const log = {
    ...stores.log,
    append: async (...args: Parameters<Stores["log"]["append"]>) => {
      if (left-- > 0) await race();
      return stores.log.append(...args);
    },
  };
  return { ...stores, log };
}

/** Stores whose plan commits find another writer's commit first, `times` times. */
function racingPlans(stores: Stores, times = 1): Stores {
  let left = times;
  const plans = {
    ...stores.plans,
    commit: async (...args: Parameters<Stores["plans"]["commit"]>) => {
      if (left-- > 0) {
        const latest = await stores.plans.latest(args[0].threadId);
        await stores.plans.commit(nextPlan(latest, latest.actions, latest.basedOnSeq), latest.version);
      }
      return stores.plans.commit(...args);
    },
  };
  return { ...stores, plans };
}

// ---- append ------------------------------------------------------------------------------------------

describe("append", () => {
  it("validates the batch, stores each message with its token count and reports it", async () => {
    const stores = createMemoryStores();
    const { engine, events, counter } = harness(stores);
    const result = await engine.append("t", [SYSTEM, ...chatTurn(0, 40)]);
    expect(result).toEqual({ threadId: "t", fromSeq: 0, logSeq: 3, ids: ["sys", "u0", "a0"] });
    const stored = await stores.log.read("t");
    expect(stored.map((e) => e.message.seq)).toEqual([0, 1, 2]);
    expect(stored[2]!.tokens[counter.id]).toBe(3 + 10);
    expect(ofType(events, "appended")).toMatchObject([{ threadId: "t", messages: 3, logSeq: 3 }]);
    const next = await engine.append("t", [{ role: "user", parts: [{ type: "text", text: "more" }] }]);
    expect(next).toMatchObject({ fromSeq: 3, logSeq: 4, ids: ["msg-3"] });
  });

  it("writes nothing when any message of the batch is bad, and names the message and field", async () => {
    const stores = createMemoryStores();
    const { engine, events } = harness(stores);
    await engine.append("t", [SYSTEM]);
    const bad: MessageInput[] = [
      { id: "ok", role: "user", parts: [{ type: "text", text: "fine" }] },
      { id: "orphan", role: "tool", parts: [{ type: "tool_result", callId: "nope", content: "?" }] },
    ];
    const error = await engine.append("t", bad).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).where).toMatchObject({ messageId: "orphan", field: "parts[0].callId" });
    expect(await stores.log.length("t")).toBe(1);
    expect(ofType(events, "error")).toMatchObject([{ operation: "append", code: "VALIDATION" }]);
  });

  it("reloads and appends after the batch of a writer that got there first", async () => {
    const stores = createMemoryStores();
    const other = harness(stores).engine;
    const raced = racingLog(stores, () =>
      other.append("t", [{ id: "theirs", role: "user", parts: [{ type: "text", text: "hi" }] }]),
    );
    const { engine, events } = harness(raced);
    const result = await engine.append("t", [
      { id: "mine", role: "user", parts: [{ type: "text", text: "hello" }] },
    ]);
    expect(result).toMatchObject({ fromSeq: 1, logSeq: 2 });
    expect((await stores.log.read("t")).map((e) => e.message.id)).toEqual(["theirs", "mine"]);
    expect(ofType(events, "version_conflict")).toMatchObject([
      { operation: "append", store: "log", expected: 0, actual: 1 },
    ]);
    const [retry] = ofType(events, "conflict_retry");
    expect(retry).toMatchObject({ operation: "append", attempt: 1 });
    // Full jitter under the default first ceiling (2 ms).
    expect(retry!.delayMs).toBeGreaterThanOrEqual(0);
    expect(retry!.delayMs).toBeLessThan(2);
  });

  it("surfaces the conflict after the configured retries", async () => {
    const stores = createMemoryStores();
    const other = harness(stores).engine;
    let n = 0;
    const raced = racingLog(
      stores,
      () => other.append("t", [{ id: `theirs${n++}`, role: "user", parts: [{ type: "text", text: "x" }] }]),
      5,
    );
    const { engine, events } = harness(raced, { maxConflictRetries: 1 });
    const error = await engine
      .append("t", [{ id: "mine", role: "user", parts: [{ type: "text", text: "y" }] }])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VersionConflictError);
    expect((error as VersionConflictError).attempts).toBe(2);
    expect((error as Error).message).toMatch(/gave up after 2 attempts \(no retries left/);
    expect(ofType(events, "conflict_retry").map((e) => e.attempt)).toEqual([1]);
    expect(ofType(events, "error")).toMatchObject([{ operation: "append", code: "VERSION_CONFLICT" }]);
  });

  it("stops retrying at the deadline of conflictBackoff", async () => {
    const stores = createMemoryStores();
    const other = harness(stores).engine;
    let n = 0;
    const raced = racingLog(
      stores,
      () => other.append("t", [{ id: `theirs${n++}`, role: "user", parts: [{ type: "text", text: "x" }] }]),
      1_000,
    );
    const { engine, events } = harness(raced, { conflictBackoff: { initialMs: 5, maxMs: 5, deadlineMs: 0 } });
    const error = await engine
      .append("t", [{ id: "mine", role: "user", parts: [{ type: "text", text: "y" }] }])
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/gave up after 1 attempt \(the retry deadline would pass/);
    expect(ofType(events, "conflict_retry")).toEqual([]);
  });
});

// ---- prepareTurn ------------------------------------------------------------------------------------

describe("prepareTurn", () => {
  it("renders, validates and records the call when the thread fits", async () => {
    const stores = createMemoryStores();
    const { engine, events } = harness(stores, { newCallId: () => "call-1" });
    await engine.append(
      "t",
      turns((n) => chatTurn(n, 200), 2),
    );
    const from = events.length;
    const turn = await engine.prepareTurn("t", { format: "anthropic", model: "claude-x" });
    expect(turn.callId).toBe("call-1");
    expect(validateProviderRequest("anthropic", turn.request)).toEqual([]);
    expect(turn.stats).toMatchObject({
      compacted: false,
      planVersion: 0,
      logSeq: 6,
      loadedFrom: "warm",
      tokens: turn.prompt.tokenCount,
    });
    expect(await stores.plans.versions("t")).toEqual([]);
    expect(await stores.calls.get("call-1")).toEqual({
      callId: "call-1",
      callNumber: 1,
      clearance: "internal",
      threadId: "t",
      logSeq: 6,
      planVersion: 0,
      format: "anthropic",
      model: "claude-x",
      requestHash: turn.prompt.hash,
      tokenEstimate: turn.prompt.tokenCount,
      budget: turn.stats.budget,
      summaries: [],
      evictions: [],
      createdAt: "2025-01-01T00:00:00.000Z",
      durationMs: expect.any(Number),
      // The chain heads the request was rendered from (docs/decisions/0018).
      logHead: expect.stringMatching(/^[0-9a-f]{64}$/),
      planHead: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const types = events.slice(from).map((e) => e.type);
    // One proposal event per free strategy of the turn (tool-result retention, oversized excerpts).
    expect(types).toEqual([
      "loaded",
      "check_started",
      "proposal",
      "proposal",
      "rendered",
      "call_recorded",
      "completed",
    ]);
  });

  it("compacts inline with the free strategies, commits, and summarizes in the background", async () => {
    const stores = createMemoryStores();
    const { engine, events } = harness(stores);
    await engine.append(
      "t",
      turns((n) => chatTurn(n), 12),
    );
    const turn = await engine.prepareTurn("t", { format: "openai", budget: 2_000 });
    expect(turn.prompt.tokenCount).toBeLessThanOrEqual(2_000);
    expect(turn.stats).toMatchObject({ compacted: true, planVersion: 1, backgroundScheduled: true });
    expect(turn.stats.actionsByKind.summarize).toBe(0);
    expect(turn.stats.actionsByKind.drop).toBeGreaterThan(0);
    expect((await stores.calls.get(turn.callId))!.evictions[0]).toMatch(/^drop:a0\+\d+$/);
    await engine.idle();
    const plan = await stores.plans.latest("t");
    expect(plan.version).toBe(2);
    expect(plan.actions.some((a) => a.kind === "summarize" && a.strategy === "summarize")).toBe(true);
    expect(ofType(events, "committed").map((e) => e.operation)).toEqual(["prepareTurn", "background"]);
    expect(ofType(events, "summarized")).toHaveLength(1);
    const next = await engine.prepareTurn("t", { format: "openai", budget: 2_000 });
    expect(next.stats.planVersion).toBe(2);
    expect(next.prompt.messages.some((m) => m.provenance.kind === "summary")).toBe(true);
    expect((await stores.calls.get(next.callId))!.summaries).toHaveLength(1);
  });

  it("discards a background run when the plan moved on meanwhile", async () => {
    const stores = createMemoryStores();
    const { engine, events } = harness(stores);
    await engine.append(
      "t",
      turns((n) => chatTurn(n), 12),
    );
    await engine.prepareTurn("t", { format: "openai", budget: 3_000 });
    // No macrotask has run yet, so the background run has not started: this turn commits v2 first.
    const second = await engine.prepareTurn("t", { format: "openai", budget: 1_000 });
    expect(second.stats).toMatchObject({ planVersion: 2, backgroundScheduled: false });
    await engine.idle();
    expect((await stores.plans.latest("t")).version).toBe(2);
    expect(ofType(events, "background_discarded")[0]!.reason).toMatch(
      /v1 is no longer the latest \(now v2\)/,
    );
  });

  it("a failing summarizer in the background changes nothing", async () => {
    const stores = createMemoryStores();
    const { engine, events } = harness(stores, { summarizer: brokenSummarizer });
    await engine.append(
      "t",
      turns((n) => chatTurn(n), 12),
    );
    await engine.prepareTurn("t", { format: "openai", budget: 2_000 });
    await engine.idle();
    expect((await stores.plans.latest("t")).version).toBe(1);
    expect(ofType(events, "proposal").some((e) => e.strategy === "summarize" && e.outcome === "failed")).toBe(
      true,
    );
    expect(ofType(events, "background_discarded")).toMatchObject([
      { reason: "no model strategy applied anything" },
    ]);
  });

  it("with summarization inline, the turn itself summarizes and nothing runs in the background", async () => {
    const stores = createMemoryStores();
    const { engine, events } = harness(stores, { summarization: "inline" });
    await engine.append(
      "t",
      turns((n) => chatTurn(n), 12),
    );
    const turn = await engine.prepareTurn("t", { format: "responses", budget: 2_000 });
    expect(turn.stats.actionsByKind.summarize).toBeGreaterThan(0);
    expect(turn.stats.backgroundScheduled).toBe(false);
    expect(ofType(events, "background_scheduled")).toHaveLength(0);
  });

  it("throws BudgetInfeasibleError and records nothing when the protected content alone does not fit", async () => {
    const stores = createMemoryStores();
    const { engine, events } = harness(stores);
    await engine.append(
      "t",
      turns((n) => chatTurn(n), 3),
    );
    await expect(engine.prepareTurn("t", { format: "openai", budget: 10 })).rejects.toBeInstanceOf(
      BudgetInfeasibleError,
    );
    expect(await stores.calls.list("t")).toEqual([]);
    expect(await stores.plans.versions("t")).toEqual([]);
    expect(ofType(events, "error")).toMatchObject([{ operation: "prepareTurn", code: "BUDGET_INFEASIBLE" }]);
  });

  it("rejects an unknown format before touching the stores", async () => {
    const { engine } = harness(createMemoryStores());
    await expect(engine.prepareTurn("t", { format: "gemini" as never })).rejects.toThrow(
      /option format: must be one of openai, responses, anthropic/,
    );
  });

  it("renders injections last and keeps them for replay", async () => {
    const stores = createMemoryStores();
    const { engine } = harness(stores);
    await engine.append(
      "t",
      turns((n) => chatTurn(n, 100), 2),
    );
    const turn = await engine.prepareTurn("t", {
      format: "openai",
      injected: ["Reminder: be brief."],
      budget: 300,
    });
    expect(turn.prompt.messages.at(-1)).toMatchObject({ provenance: { kind: "injection" } });
    expect(turn.prompt.tokenCount).toBeLessThanOrEqual(300);
    const reserved = { contextWindow: 1_000, reserveOutput: 0, injectionReserve: 10 };
    await expect(
      engine.prepareTurn("t", { format: "openai", injected: ["x ".repeat(200)], budget: reserved }),
    ).rejects.toThrow(/overflows its reserve/);
    const replay = await engine.replay(turn.callId);
    expect(replay).toMatchObject({ ok: true, actualHash: turn.prompt.hash });
  });

  it("retries the turn when another worker committed a plan first", async () => {
    const stores = createMemoryStores();
    const { engine, events } = harness(racingPlans(stores));
    await engine.append(
      "t",
      turns((n) => chatTurn(n), 12),
    );
    const turn = await engine.prepareTurn("t", { format: "openai", budget: 2_000 });
    expect(turn.stats).toMatchObject({ conflicts: 1, planVersion: 2 });
    expect(ofType(events, "version_conflict")).toMatchObject([
      { operation: "prepareTurn", store: "plan", expected: 0, actual: 1, attempt: 1 },
    ]);
    expect(ofType(events, "conflict_retry")).toMatchObject([{ operation: "prepareTurn", attempt: 1 }]);
    expect((await engine.replay(turn.callId)).ok).toBe(true);
  });

  it("surfaces a plan conflict after the configured retries", async () => {
    const stores = createMemoryStores();
    const { engine } = harness(racingPlans(stores, 10), { maxConflictRetries: 2, summarization: "inline" });
    await engine.append(
      "t",
      turns((n) => chatTurn(n), 12),
    );
    const error = await engine.prepareTurn("t", { format: "openai", budget: 2_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VersionConflictError);
    expect((error as VersionConflictError).attempts).toBe(3);
  });
});

// ---- calibration, loading -------------------------------------------------------------------------------

describe("calibration from reported usage", () => {
  it("learns the provider/estimate ratio per model and compacts to the calibrated budget", async () => {
    const stores = createMemoryStores();
    const { engine, events } = harness(stores);
    await engine.append(
      "t",
      turns((n) => chatTurn(n, 400), 6),
    );
    const estimates: number[] = [];
    for (let i = 0; i < 3; i++) {
      const turn = await engine.prepareTurn("t", { format: "openai", model: "m1" });
      estimates.push(turn.stats.tokens);
      const calibration = await engine.recordUsage(turn.callId, {
        inputTokens: Math.round(turn.stats.tokens * 1.5),
      });
      expect(calibration.samples).toBe(i + 1);
    }
    expect(await engine.calibration("m1")).toMatchObject({ ratio: 1.5, samples: 3 });
    expect(await engine.calibration("m2")).toMatchObject({ ratio: 1, samples: 0 });
    expect(ofType(events, "usage_recorded").at(-1)).toMatchObject({ model: "m1", ratio: 1.5 });
    // The raw estimate fits this budget; calibrated (×1.5) it does not, so m1 compacts and m2 does not.
    const budget = Math.ceil(estimates[0]! * 1.2);
    const m2 = await engine.prepareTurn("t", { format: "openai", model: "m2", budget });
    expect(m2.stats.compacted).toBe(false);
    const m1 = await engine.prepareTurn("t", { format: "openai", model: "m1", budget });
    expect(m1.stats.compacted).toBe(true);
    expect(m1.stats.budget.available).toBe(Math.floor(budget / 1.5));
    expect(m1.stats.calibratedTokens).toBeLessThanOrEqual(budget);
    await expect(engine.recordUsage("nope", { inputTokens: 1 })).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe("loading", () => {
  it("a warm engine reads only the appended tail; a stateless one rebuilds from the stores", async () => {
    const stores = createMemoryStores();
    const a = harness(stores);
    const b = harness(stores, { cacheThreads: 0 });
    await a.engine.append(
      "t",
      turns((n) => chatTurn(n, 100), 3, false),
    );
    await b.engine.append("t", chatTurn(9, 100));
    const warm = await a.engine.prepareTurn("t", { format: "openai" });
    const cold = await b.engine.prepareTurn("t", { format: "openai" });
    expect(warm.stats.loadedFrom).toBe("warm");
    expect(cold.stats.loadedFrom).toBe("cold");
    expect(cold.prompt.hash).toBe(warm.prompt.hash);
    expect(ofType(a.events, "loaded").at(-1)).toMatchObject({ source: "warm", messages: 9 });
  });

  it("a stateless worker counts no stored message again, and stores counts a new counter makes", async () => {
    const stores = createMemoryStores();
    await harness(stores).engine.append(
      "t",
      turns((n) => chatTurn(n, 300), 4),
    );
    const worker = harness(stores, { cacheThreads: 0 });
    worker.counter.calls = 0;
    await worker.engine.prepareTurn("t", { format: "openai" });
    expect(worker.counter.calls).toBe(0);
    const other = countingCounter("other:counter");
    const engine = createContextEngine({ stores, counter: other, budget: { contextWindow: 100_000 } });
    await engine.prepareTurn("t", { format: "openai" });
    const stored = await stores.log.read("t");
    expect(
      stored.every((e) => e.tokens["other:counter"] !== undefined && e.tokens["test:chars/4"] !== undefined),
    ).toBe(true);
  });
});

// ---- replay --------------------------------------------------------------------------------------------

/** Stores whose log reads return the message at `seq` changed by `edit` (as if someone rewrote the row). */
function tampered(stores: Stores, seq: number, keepHash: boolean): Stores {
  const edit = <T extends { message: { parts: ReadonlyArray<unknown>; hash: string } }>(entry: T): T => {
    const parts = [{ type: "text", text: "something else entirely" }];
    const hash = keepHash ? entry.message.hash : "0".repeat(64);
    return { ...entry, message: { ...entry.message, parts, hash } };
  };
  const read: Stores["log"]["read"] = async (threadId, from, to) =>
    (await stores.log.read(threadId, from, to)).map((e) => (e.message.seq === seq ? edit(e) : e));
  return { ...stores, log: { ...stores.log, read } };
}

describe("replay", () => {
  it("re-renders every call of a compacting thread with the recorded hash", async () => {
    const stores = createMemoryStores();
    const { engine } = harness(stores);
    const ids: string[] = [];
    const all = turns((n) => [...chatTurn(n), ...toolTurn(100 + n)], 8, false);
    for (let i = 0; i < all.length; i += 3) {
      await engine.append("t", all.slice(i, i + 3));
      // Chunks of three end anywhere, pending tool calls included: those are stubbed, never compacted.
      ids.push((await engine.prepareTurn("t", { format: "anthropic", budget: 2_500 })).callId);
      await engine.idle();
    }
    expect((await stores.plans.versions("t")).length).toBeGreaterThan(2);
    for (const id of ids) {
      const replay = await engine.replay(id);
      expect(replay).toMatchObject({ ok: true, problems: [], format: "anthropic" });
      expect(replay.actualHash).toBe(replay.expectedHash);
    }
  });

  it("names a message whose content no longer matches its stored hash", async () => {
    const stores = createMemoryStores();
    const { engine } = harness(stores);
    await engine.append(
      "t",
      turns((n) => chatTurn(n, 100), 3),
    );
    const { callId } = await engine.prepareTurn("t", { format: "openai" });
    const auditor = harness(tampered(stores, 2, true)).engine;
    const replay = await auditor.replay(callId);
    expect(replay.ok).toBe(false);
    expect(replay.mismatch).toMatch(
      /request hash differs: message "a0" \(seq 2\) no longer matches the content hash/,
    );
  });

  it("reports a hash mismatch when the edit also rewrote the stored hash", async () => {
    const stores = createMemoryStores();
    const { engine } = harness(stores);
    await engine.append(
      "t",
      turns((n) => chatTurn(n, 100), 3),
    );
    const { callId } = await engine.prepareTurn("t", { format: "openai" });
    const replay = await harness(tampered(stores, 2, false)).engine.replay(callId);
    expect(replay.ok).toBe(false);
    expect(replay.actualHash).not.toBe(replay.expectedHash);
    expect(replay.mismatch).toMatch(/a0/);
  });

  it("reports a shortened log and throws for an unknown call", async () => {
    const stores = createMemoryStores();
    const { engine } = harness(stores);
    await engine.append(
      "t",
      turns((n) => chatTurn(n, 100), 2),
    );
    const { callId } = await engine.prepareTurn("t", { format: "openai" });
    const short: Stores = {
      ...stores,
      log: { ...stores.log, read: async (t) => (await stores.log.read(t)).slice(0, 2) },
    };
    const replay = await harness(short).engine.replay(callId);
    expect(replay).toMatchObject({ ok: false, mismatch: "the log holds 2 of the 6 messages the call saw" });
    await expect(engine.replay("missing")).rejects.toBeInstanceOf(NotFoundError);
  });
});

// ---- audit views, maintenance, options ------------------------------------------------------------------

describe("explain, diff and render", () => {
  async function compacted(): Promise<{ engine: ContextEngine; stores: Stores; callId: string }> {
    const stores = createMemoryStores();
    const { engine } = harness(stores);
    await engine.append(
      "t",
      turns((n) => [...chatTurn(n), ...toolTurn(100 + n)], 6),
    );
    const { callId } = await engine.prepareTurn("t", { format: "openai", budget: 2_000 });
    await engine.idle();
    return { engine, stores, callId };
  }

  it("explain lists every message with its state, tokens, strategy and reason", async () => {
    const { engine } = await compacted();
    const v1 = await engine.explain("t", { planVersion: 1 });
    expect(v1.rows).toHaveLength(v1.logSeq);
    expect(v1.rows[0]).toEqual({
      seq: 0,
      id: "sys",
      role: "system",
      state: "kept",
      tokens: 7,
      preview: expect.any(String),
    });
    const dropped = v1.rows.find((r) => r.state === "dropped")!;
    expect(dropped.strategy).toBe("hardFallback");
    expect(dropped.reason).toMatch(/dropped/);
    const latest = await engine.explain("t");
    expect(latest.planVersion).toBe(2);
    expect(latest.totals.summarized.messages).toBeGreaterThan(0);
    expect(Object.values(latest.totals).reduce((n, t) => n + t.messages, 0)).toBe(latest.logSeq);
    const text = formatExplanation(latest);
    // Title, column header, a line per message or per run of three or more under one action, totals.
    const lines = text.split("\n");
    const runs = lines.filter((l) => /^\s+\d+-\d+ /.test(l));
    const inRuns = runs.reduce((n, l) => {
      const [a, b] = l.trim().split(/\s/)[0]!.split("-").map(Number);
      return n + b! - a! + 1;
    }, 0);
    expect(lines.length - 3 - runs.length + inRuns).toBe(latest.logSeq);
    expect(lines[1]).toMatch(/^\s+seq\s+id\s+role\s+state\s+tokens\s+content\s+strategy: reason$/);
    expect(text).toMatch(/summarized/);
    // A filter picks rows; the totals still cover the whole plan.
    const summarized = await engine.explain("t", { state: "summarized" });
    expect(summarized.rows.every((r) => r.state === "summarized")).toBe(true);
    expect(summarized.rows).toHaveLength(latest.totals.summarized.messages);
    expect(summarized.totals).toEqual(latest.totals);
    expect((await engine.explain("t", { id: "sys" })).rows.map((r) => r.id)).toEqual(["sys"]);
  });

  it("diff lists the changes between versions in log order, readable", async () => {
    const { engine } = await compacted();
    const { diff, text } = await engine.diff("t", 1, 2);
    expect(diff).toMatchObject({ threadId: "t", fromVersion: 1, toVersion: 2 });
    const positions = diff.changes.map((c) => c.position!);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(diff.changes.some((c) => c.from.kind === "drop" && c.to.kind === "summarize")).toBe(true);
    expect(text).toMatch(/^plan diff for thread t: v1 → v2/);
    // Each change carries the message's own tokens, and the text shows them per line.
    const explained = await engine.explain("t", { planVersion: 2 });
    for (const change of diff.changes) {
      expect(change.tokens).toBe(explained.rows.find((r) => r.id === change.messageId)!.tokens);
    }
    expect(text.split("\n")[1]).toMatch(/ \d+ tokens {2}\w+ → \w+/);
    expect((await engine.diff("t", 2, 2)).diff.changes).toEqual([]);
  });

  it("render reproduces a recorded request from its plan version and log seq", async () => {
    const { engine, stores, callId } = await compacted();
    const record = (await stores.calls.get(callId))!;
    await engine.append("t", chatTurn(50));
    const rendered = await engine.render("t", {
      format: "openai",
      planVersion: record.planVersion,
      logSeq: record.logSeq,
    });
    expect(rendered.prompt.hash).toBe(record.requestHash);
    expect(validateProviderRequest("openai", rendered.request)).toEqual([]);
    const now = await engine.render("t", { format: "responses" });
    expect(now.prompt).toMatchObject({ planVersion: 2, logSeq: record.logSeq + 2 });
    await expect(engine.render("t", { format: "openai", planVersion: 9 })).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });
});

describe("compact (maintenance on stored history)", () => {
  it("runs the whole pipeline, summarization included, and commits", async () => {
    const stores = createMemoryStores();
    const { engine, events } = harness(stores);
    await engine.append(
      "t",
      turns((n) => chatTurn(n), 12),
    );
    const result = await engine.compact("t", { budget: 2_000 });
    expect(result).toMatchObject({ ok: true, changed: true, planVersion: 1, previousVersion: 0, logSeq: 26 });
    expect(result.tokensAfter).toBeLessThanOrEqual(2_000);
    expect(result.report.actionsByKind.summarize).toBeGreaterThan(0);
    expect(ofType(events, "completed").at(-1)).toMatchObject({ operation: "compact", compacted: true });
    const again = await engine.compact("t", { budget: 2_000 });
    expect(again).toMatchObject({ ok: true, changed: false, planVersion: 1 });
  });

  it("returns an impossible budget as data and commits nothing; compactAll covers every thread", async () => {
    const stores = createMemoryStores();
    const { engine } = harness(stores);
    await engine.append(
      "a",
      turns((n) => chatTurn(n), 8),
    );
    await engine.append(
      "b",
      turns((n) => chatTurn(n), 2),
    );
    const impossible = await engine.compact("a", { budget: 5 });
    expect(impossible.ok).toBe(false);
    expect(impossible.error).toBeInstanceOf(BudgetInfeasibleError);
    expect(await stores.plans.versions("a")).toEqual([]);
    const all = await engine.compactAll({ budget: 1_500 });
    expect(all.map((r) => [r.threadId, r.ok])).toEqual([
      ["a", true],
      ["b", true],
    ]);
    expect((await stores.plans.versions("a")).length).toBe(1);
  });
});

describe("options", () => {
  const stores = createMemoryStores();

  it("are validated at the edge, naming the field", () => {
    const make = (extra: object) => () =>
      createContextEngine({ stores, budget: { contextWindow: 1_000 }, ...extra } as ContextEngineOptions);
    expect(make({ summarization: "later" })).toThrow(/summarization/);
    expect(make({ maxConflictRetries: -1 })).toThrow(/maxConflictRetries/);
    expect(make({ calibration: { window: 0 } })).toThrow(/calibration\.window/);
    expect(make({ tenat: "x" })).toThrow(/tenat/);
    expect(make({ events: "log" })).toThrow(/events/);
    expect(() => createContextEngine({ stores } as ContextEngineOptions)).toThrow(/needs a budget/);
    expect(() => createContextEngine({ budget: { contextWindow: 10 } } as ContextEngineOptions)).toThrow(
      ValidationError,
    );
  });

  it("take a pipeline config, and its budget when none is given", async () => {
    const engine = createContextEngine({
      stores: createMemoryStores(),
      counter: countingCounter(),
      pipeline: {
        budget: { contextWindow: 600, reserveOutput: 0, safetyMargin: 0 },
        strategies: [{ use: "slidingWindow", keepGroups: 4 }],
      },
    });
    await engine.append(
      "t",
      turns((n) => chatTurn(n, 200), 8),
    );
    const turn = await engine.prepareTurn("t", { format: "openai" });
    expect(turn.stats.budget.contextWindow).toBe(600);
    expect(turn.prompt.tokenCount).toBeLessThanOrEqual(600);
  });
});

describe("createContextEngine: counting", () => {
  it("frames counts by the budget's model: Anthropic models get Anthropic framing unless told otherwise", async () => {
    const messages: MessageInput[] = [
      { role: "system", parts: [{ type: "text", text: "be brief" }] },
      { role: "user", parts: [{ type: "text", text: "hello there" }] },
    ];
    const tokensWith = async (options: Partial<ContextEngineSettings> & EngineBudget) => {
      const engine = createContextEngine({ stores: createMemoryStores(), ...options });
      await engine.append("t", messages);
      return (await engine.prepareTurn("t", { format: "anthropic" })).prompt.tokenCount;
    };
    const claude = { budget: { model: "claude-sonnet-4" } };
    const anthropic = await tokensWith(claude);
    expect(await tokensWith({ ...claude, overhead: "anthropic" })).toBe(anthropic);
    expect(await tokensWith({ ...claude, overhead: "openai" })).not.toBe(anthropic);
    const gpt = { budget: { model: "gpt-4o" } };
    expect(await tokensWith(gpt)).toBe(await tokensWith({ ...gpt, overhead: "openai" }));
  });
});

describe("createContextEngine: stores written elsewhere", () => {
  it("works with a plan store that has no latestVersion (falls back to versions)", async () => {
    const stores = createMemoryStores();
    const { latestVersion: _omitted, ...plans } = stores.plans;
    const engine = createContextEngine({
      stores: { ...stores, plans },
      budget: { contextWindow: 60 },
      summarization: "inline",
    });
    await engine.append("t", [
      { role: "user", parts: [{ type: "text", text: "first question" }] },
      { role: "assistant", parts: [{ type: "text", text: "a long answer ".repeat(40) }] },
      { role: "user", parts: [{ type: "text", text: "next" }] },
    ]);
    const turn = await engine.prepareTurn("t", { format: "openai" });
    expect(turn.stats.compacted).toBe(true);
    const again = await engine.prepareTurn("t", { format: "openai" });
    expect(again.stats.planVersion).toBe(turn.stats.planVersion);
  });
});
