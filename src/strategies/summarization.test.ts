import { describe, expect, it } from "vitest";
import { call, result, text } from "../../test/support/builders.js";
import { simpleCounter } from "../../test/support/simple-counter.js";
import { renderHistory, runStrategy } from "../../test/support/strategy-context.js";
import { SummarizerError, type SummarizerFailure, ValidationError } from "../errors/ledger-error.js";
import type { MessageInput } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import { emptyPlan, type PlanAction } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog } from "../plan/resolve-for-log.js";
import { validatePlan } from "../plan/validate-plan.js";
import { createSummarization } from "./summarization.js";
import {
  type Summarizer,
  type SummaryCachePort,
  type SummaryRequest,
  type SummaryResult,
  summaryCacheKey,
} from "./summarizer.js";
import { createExtractiveSummarizer } from "./summarizers/extractive-summarizer.js";

/** System, user request, then `n` tool rounds; round i's assistant message carries a reasoning part. */
function agentRun(n: number, from = 0): MessageInput[] {
  const out: MessageInput[] = [];
  if (from === 0) {
    out.push({ id: "sys", role: "system", parts: [text("You are an agent.")] });
    out.push({ id: "u0", role: "user", parts: [text("Rename the config loader.")] });
  }
  for (let i = from; i < from + n; i++) {
    out.push({
      id: `a${i}`,
      role: "assistant",
      parts: [
        { type: "reasoning", text: `thinking ${i}`, signature: `sig${i}` },
        call(`c${i}`, `{"n":${i}}`, "grep"),
      ],
    });
    out.push({ id: `t${i}`, role: "tool", parts: [result(`c${i}`, `match ${i} ${"y".repeat(200)}`)] });
  }
  return out;
}

function recording(summary = "what happened"): Summarizer & { requests: SummaryRequest[] } {
  const requests: SummaryRequest[] = [];
  return {
    id: "rec",
    promptVersion: "v1",
    requests,
    summarize: async (request) => {
      requests.push(request);
      const previous = request.previous?.text ?? "";
      return {
        text: `${previous}${previous ? " + " : ""}${summary} (${request.messages.length})`,
        structured: {},
      };
    },
  };
}

/** A summary cache as the strategy sees it (the stores' caches are tested with the stores). */
function mapCache(): SummaryCachePort & { readonly keys: string[] } {
  const entries = new Map<string, SummaryResult>();
  const keys: string[] = [];
  return {
    keys,
    get: async (key) => entries.get(key),
    set: async (key, summary) => {
      keys.push(key);
      entries.set(key, summary);
    },
  };
}

const simpleCount = simpleCounter();
const summaries = (actions: ReadonlyArray<PlanAction>) => actions.filter((a) => a.kind === "summarize");

describe("createSummarization", () => {
  it("by count: keeps `target` groups verbatim once more than target + threshold are", async () => {
    const log = ThreadLog.from("t", agentRun(10));
    const summarizer = recording();
    const quiet = createSummarization({ summarizer, target: 6, threshold: 4 });
    expect((await runStrategy(quiet, log, emptyPlan("t"))).proposal.actions).toEqual([]);
    const strategy = createSummarization({ summarizer, target: 6, threshold: 3 });
    const { proposal, plan } = await runStrategy(strategy, log, emptyPlan("t"));
    const [action] = summaries(proposal.actions);
    // 10 tool groups > 6 + 3: the 4 oldest become one summary; user and system untouched.
    expect(action!.span).toEqual(["a0", "t0", "a1", "t1", "a2", "t2", "a3", "t3"]);
    expect(validatePlan(plan, log)).toEqual([]);
    expect(summarizer.requests[0]!.messages.map((m) => m.id)).toEqual(action!.span);
    // Reasoning travels with its call: the whole group is summarized, nothing is edited.
    const rendered = renderHistory(log, plan, simpleCount).messages;
    expect(rendered.filter((m) => m.provenance.kind === "summary")).toHaveLength(1);
  });

  it("under token pressure summarizes enough of the oldest groups to reach the goal, keeping minKeepGroups", async () => {
    const log = ThreadLog.from("t", agentRun(12));
    const strategy = createSummarization({ summarizer: recording(), minKeepGroups: 3 });
    const { plan } = await runStrategy(strategy, log, emptyPlan("t"), { target: 500, goal: 400 });
    const tokens = renderHistory(log, plan, simpleCount).tokenCount;
    expect(tokens).toBeLessThanOrEqual(400 + 150);
    const resolution = resolveForLog(plan, log);
    for (const id of ["a9", "t9", "a10", "t10", "a11", "t11", "u0", "sys"]) {
      expect(decisionAt(resolution, log.seqOf(id)!)).toBeUndefined();
    }
  });

  it("sizes the summary by the room the goal leaves after the verbatim rest, and a full-size summary fits the goal", async () => {
    const log = ThreadLog.from("t", agentRun(12));
    // A summarizer that uses every token it is given (as the renderer's counter measures it).
    const greedy: Summarizer & { requests: SummaryRequest[] } = {
      id: "greedy",
      promptVersion: "v1",
      requests: [],
      summarize: async (request) => {
        greedy.requests.push(request);
        const count = request.countTokens!;
        let text = "x";
        while (count(`${text} word`) <= request.maxTokens) text += " word";
        return { text, structured: {} };
      },
    };
    const strategy = createSummarization({ summarizer: greedy, minKeepGroups: 3 });
    for (const goal of [300, 450, 700]) {
      const { plan } = await runStrategy(strategy, log, emptyPlan("t"), { target: goal + 100, goal });
      const request = greedy.requests.at(-1)!;
      expect(request.maxTokens).toBeGreaterThanOrEqual(64);
      expect(renderHistory(log, plan, simpleCount).tokenCount, `goal ${goal}`).toBeLessThanOrEqual(goal);
      // The room goes to the summary: more than the old fixed 10 % of the goal, less than the goal.
      expect(request.maxTokens).toBeGreaterThan(goal * 0.1);
      // What stays verbatim is passed along, so the summary can leave out what it still shows.
      const spanIds = new Set(request.messages.map((m) => m.id));
      expect(request.tail?.map((m) => m.id)).toContain("sys");
      expect(request.tail?.some((m) => spanIds.has(m.id))).toBe(false);
    }
  });

  it("holds the summary to maxSummaryTokens and to half the span when the goal leaves plenty of room", async () => {
    const log = ThreadLog.from("t", agentRun(10));
    const summarizer = recording();
    await runStrategy(createSummarization({ summarizer, target: 3 }), log, emptyPlan("t"));
    const spanTokens = summarizer.requests[0]!.messages.reduce((n, m) => n + simpleCount.countMessage(m), 0);
    expect(summarizer.requests[0]!.maxTokens).toBeLessThanOrEqual(Math.max(64, spanTokens / 2));
    await runStrategy(
      createSummarization({ summarizer, target: 3, maxSummaryTokens: 100 }),
      log,
      emptyPlan("t"),
    );
    expect(summarizer.requests[1]!.maxTokens).toBe(100);
  });

  it("with maxStacked 1 a later summary absorbs the earlier one: one summary in force, the previous one passed to the summarizer", async () => {
    const summarizer = recording();
    const strategy = createSummarization({ summarizer, target: 2, threshold: 2, maxStacked: 1 });
    const first = ThreadLog.from("t", agentRun(6));
    const one = await runStrategy(strategy, first, emptyPlan("t"));
    const grown = first.append(agentRun(6, 6));
    const two = await runStrategy(strategy, grown, one.plan);
    const [older, newer] = summaries(two.plan.actions);
    expect(newer!.span.slice(0, older!.span.length)).toEqual(older!.span);
    expect(summarizer.requests[1]!.previous?.text).toBe((older!.record as { summary: string }).summary);
    // The second request only carries the new messages; the old ones reach it through `previous`.
    expect(summarizer.requests[1]!.messages.some((m) => older!.span.includes(m.id))).toBe(false);
    const rendered = renderHistory(grown, two.plan, simpleCount);
    const summaryMessages = rendered.messages.filter((m) => m.provenance.kind === "summary");
    expect(summaryMessages).toHaveLength(1);
    // The summary sits where the oldest summarized message was: right after the user request.
    expect(rendered.messages[2]!.provenance.kind).toBe("summary");
  });

  it("by default a later summary is stacked after the earlier one, which the request keeps byte for byte", async () => {
    const summarizer = recording();
    const strategy = createSummarization({ summarizer, target: 2, threshold: 2 });
    const first = ThreadLog.from("t", agentRun(6));
    const one = await runStrategy(strategy, first, emptyPlan("t"));
    const before = renderHistory(first, one.plan, simpleCount).messages;
    const grown = first.append(agentRun(6, 6));
    const two = await runStrategy(strategy, grown, one.plan);
    const [older, newer] = summaries(two.plan.actions);
    expect(newer!.span.some((id) => older!.span.includes(id))).toBe(false);
    expect(summarizer.requests[1]!.previous).toBeUndefined();
    expect(newer!.reason).toContain("after the earlier summary");
    const after = renderHistory(grown, two.plan, simpleCount).messages;
    expect(after.filter((m) => m.provenance.kind === "summary")).toHaveLength(2);
    // System prompt, user request and the first summary: the same bytes as before, so a prompt cache keeps them.
    expect(after.slice(0, 3).map((m) => m.contentHash)).toEqual(before.slice(0, 3).map((m) => m.contentHash));
    expect(after[3]!.provenance.kind).toBe("summary");
    expect(validatePlan(two.plan, grown)).toEqual([]);
  });

  it("once maxStacked summaries are in force the next absorbs them all, their texts and fields passed on in order", async () => {
    const summarizer: Summarizer & { requests: SummaryRequest[] } = {
      id: "fields",
      promptVersion: "v1",
      requests: [],
      async summarize(request) {
        this.requests.push(request);
        const n = this.requests.length;
        return { text: `summary ${n}`, structured: { decisions: [`decision ${n}`] } };
      },
    };
    const strategy = createSummarization({ summarizer, target: 2, threshold: 2, maxStacked: 2 });
    let log = ThreadLog.from("t", agentRun(6));
    let { plan } = await runStrategy(strategy, log, emptyPlan("t"));
    for (const from of [6, 12]) {
      log = log.append(agentRun(6, from));
      ({ plan } = await runStrategy(strategy, log, plan));
    }
    expect(summarizer.requests[1]!.previous).toBeUndefined();
    expect(summarizer.requests[2]!.previous).toEqual({
      text: "summary 1\n\nsummary 2",
      structured: { decisions: ["decision 1", "decision 2"] },
    });
    const resolution = resolveForLog(plan, log);
    const last = plan.actions[plan.actions.length - 1]!;
    expect(last.reason).toContain("absorbing 2 earlier summaries");
    // Everything the two stacked summaries stood for is now under the third.
    for (const earlier of summaries(plan.actions).slice(0, 2)) {
      for (const id of earlier.span) expect(decisionAt(resolution, log.seqOf(id)!)?.action).toBe(last);
    }
    const rendered = renderHistory(log, plan, simpleCount).messages;
    expect(rendered.filter((m) => m.provenance.kind === "summary")).toHaveLength(1);
  });

  it("leaves the tail byte-identical: messages after the span render exactly as before", async () => {
    const log = ThreadLog.from("t", agentRun(8));
    const before = renderHistory(log, emptyPlan("t"), simpleCount).messages;
    const { plan } = await runStrategy(
      createSummarization({ summarizer: recording(), target: 3 }),
      log,
      emptyPlan("t"),
    );
    const after = renderHistory(log, plan, simpleCount).messages;
    // Everything after the summary message is the verbatim tail: the same messages as the end of the old render.
    const at = after.findIndex((m) => m.provenance.kind === "summary");
    expect(at).toBeGreaterThan(0);
    const tail = after.slice(at + 1);
    expect(tail.length).toBeGreaterThan(0);
    expect(tail.map((m) => m.contentHash)).toEqual(before.slice(-tail.length).map((m) => m.contentHash));
    expect(tail.every((m) => m.provenance.kind === "original")).toBe(true);
  });

  it("caches by span content, summarizer and prompt version: the same span is summarized once", async () => {
    const summarizer = recording();
    const cache = mapCache();
    const strategy = createSummarization({ summarizer, cache, target: 2 });
    const log = ThreadLog.from("t", agentRun(6));
    const a = await runStrategy(strategy, log, emptyPlan("t"));
    const b = await runStrategy(strategy, log, emptyPlan("t"));
    expect(summarizer.requests).toHaveLength(1);
    expect(b.plan.actions).toEqual(a.plan.actions);
    // Another prompt version is another key: that summarizer is asked.
    const v2 = { ...recording(), promptVersion: "v2" };
    await runStrategy(createSummarization({ summarizer: v2, cache, target: 2 }), log, emptyPlan("t"));
    expect(v2.requests).toHaveLength(1);
    const { spanHash } = summaries(a.plan.actions)[0]!.record as { spanHash: string };
    expect(cache.keys).toEqual([
      summaryCacheKey(spanHash, "rec", "v1"),
      summaryCacheKey(spanHash, "rec", "v2"),
    ]);
  });

  it("never touches pending calls, pinned messages or the last user message", async () => {
    const inputs = agentRun(6);
    inputs.splice(4, 0, { id: "pin", role: "user", parts: [text("never use sudo")], meta: { pinned: true } });
    inputs.push({ id: "u1", role: "user", parts: [text("now also update the docs")] });
    inputs.push({ id: "late", role: "assistant", parts: [call("cp", "{}", "grep")] });
    const log = ThreadLog.from("t", inputs);
    const { plan } = await runStrategy(
      createSummarization({ summarizer: recording(), minKeepGroups: 1 }),
      log,
      emptyPlan("t"),
      {
        target: 60,
        goal: 50,
      },
    );
    const resolution = resolveForLog(plan, log);
    // It did summarize (so the check below is about what it chose to leave alone).
    expect(plan.actions.some((a) => a.kind === "summarize")).toBe(true);
    for (const id of ["sys", "pin", "u1", "late"])
      expect(decisionAt(resolution, log.seqOf(id)!)).toBeUndefined();
    expect(validatePlan(plan, log)).toEqual([]);
  });

  const failures: SummarizerFailure[] = [
    "timeout",
    "rate_limited",
    "server_error",
    "bad_request",
    "empty",
    "malformed",
    "aborted",
  ];
  for (const reason of failures) {
    it(`a summarizer failing with ${reason} proposes nothing and reports it as an error note`, async () => {
      const failing: Summarizer = {
        id: "f",
        promptVersion: "1",
        summarize: async () => {
          throw new SummarizerError("f", reason, `upstream said ${reason}`);
        },
      };
      const log = ThreadLog.from("t", agentRun(6));
      const { proposal, plan } = await runStrategy(
        createSummarization({ summarizer: failing, target: 2 }),
        log,
        emptyPlan("t"),
      );
      expect(proposal.actions).toEqual([]);
      expect(plan.version).toBe(0);
      expect(proposal.notes?.[0]).toMatchObject({ level: "error", code: "summarizer_failed" });
      expect(proposal.notes?.[0]?.message).toContain(reason);
    });
  }

  it("works with the extractive summarizer on a real-looking run and stays deterministic", async () => {
    const log = ThreadLog.from("t", agentRun(10));
    const strategy = () => createSummarization({ summarizer: createExtractiveSummarizer(), target: 3 });
    const a = await runStrategy(strategy(), log, emptyPlan("t"));
    const b = await runStrategy(strategy(), log, emptyPlan("t"));
    expect(a.plan.actions).toEqual(b.plan.actions);
    const record = summaries(a.plan.actions)[0]!.record as { summary: string; spanHash?: string };
    expect(record.summary.length).toBeGreaterThan(0);
    expect(record.spanHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("rejects bad options with the field", () => {
    const summarizer = recording();
    for (const [options, field] of [
      [{ target: -1 }, "target"],
      [{ threshold: 1.5 }, "threshold"],
      [{ minKeepGroups: 0 }, "minKeepGroups"],
      [{ maxSummaryTokens: 0 }, "maxSummaryTokens"],
      [{ tagret: 3 }, "tagret"],
    ] as const) {
      try {
        createSummarization({ summarizer, ...(options as object) });
        expect.unreachable();
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).where.field).toBe(field);
      }
    }
    expect(() => createSummarization({} as never)).toThrow(/summarizer/);
  });
});
