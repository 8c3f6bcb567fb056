import { describe, expect, it } from "vitest";
import { listTrajectories, trajectoriesAvailable } from "../../../test/support/trajectories.js";
import { SummarizerError } from "../../errors/ledger-error.js";
import { importTranscript } from "../../log/import-jsonl.js";
import type { MessageInput } from "../../log/message.js";
import { ThreadLog } from "../../log/thread-log.js";
import { createTokenizer } from "../../tokens/create-tokenizer.js";
import type { SummaryRequest } from "../summarizer.js";
import { createExtractiveSummarizer } from "./extractive-summarizer.js";
import { estimateTokens, formatSummary } from "./summary-format.js";

const inputs: ReadonlyArray<MessageInput> = [
  { role: "system", parts: [{ type: "text", text: "You are a coding agent. You must never push to main." }] },
  {
    role: "user",
    parts: [
      {
        type: "text",
        text: "Please fix the failing date parser in src/parse-date.ts. Do not change the public API. See https://example.com/issues/42 for details.",
      },
    ],
  },
  {
    role: "assistant",
    parts: [
      { type: "text", text: "I will start by running the tests. ```bash\nnpm test\n```" },
      { type: "tool_call", callId: "c1", name: "bash", args: '{"command":"npm test -- parse-date"}' },
    ],
  },
  {
    role: "tool",
    parts: [
      {
        type: "tool_result",
        callId: "c1",
        content:
          "\n> vitest run\nTraceback (most recent call last):\nTypeError: cannot read 'year' of undefined\n",
      },
    ],
  },
  {
    role: "assistant",
    parts: [
      { type: "text", text: "The root cause is a missing null check." },
      { type: "tool_call", callId: "c2", name: "read_file", args: '{"path":"./src/parse-date.ts"}' },
      { type: "tool_call", callId: "c3", name: "search", args: '{"q":"parseDate"}' },
    ],
  },
  {
    role: "tool",
    parts: [
      { type: "tool_result", callId: "c2", content: "export function parseDate(s) {\n  return s.year;\n}" },
      { type: "tool_result", callId: "c3", content: "rate limited", isError: true },
    ],
  },
  { role: "user", parts: [{ type: "text", text: "Also look at artifact art_7f3a. Should we add a test?" }] },
  {
    role: "assistant",
    parts: [{ type: "tool_call", callId: "c4", name: "write_file", args: '{"path":"src/parse-date.ts"}' }],
  },
];

const log = ThreadLog.from("t1", inputs);
const request = (extra: Partial<SummaryRequest> = {}): SummaryRequest => ({
  threadId: "t1",
  messages: log.messages,
  maxTokens: 2_000,
  ...extra,
});

async function failure(promise: Promise<unknown>): Promise<SummarizerError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SummarizerError);
  return error as SummarizerError;
}

describe("createExtractiveSummarizer", () => {
  const summarizer = createExtractiveSummarizer();

  it("has a stable identity", () => {
    expect(summarizer.id).toBe("extractive");
    expect(summarizer.promptVersion).toBe("extractive/3");
  });

  it("extracts goals, facts, calls with their outcomes, open items and references", async () => {
    const { structured, text } = await summarizer.summarize(request());
    expect(structured.goals).toEqual([
      "Please fix the failing date parser in src/parse-date.ts. Do not change the public API.",
      "Also look at artifact art_7f3a. Should we add a test?",
    ]);
    expect(structured.toolOutcomes).toEqual([
      "bash(npm test -- parse-date) → error: TypeError: cannot read 'year' of undefined",
      "read_file(./src/parse-date.ts) → export function parseDate(s) {",
      "search(parseDate) → error: rate limited",
    ]);
    expect(structured.openItems).toEqual([
      "user asked: Should we add a test?",
      "waiting for the result of write_file(src/parse-date.ts)",
    ]);
    expect(structured.artifacts).toEqual([
      "https://example.com/issues/42",
      "src/parse-date.ts",
      "./src/parse-date.ts",
      "artifact art_7f3a",
    ]);
    // Narration ("I will start by …") and the agent's own reasoning next to its calls are not decisions.
    expect(structured.decisions).toBeUndefined();
    expect(text).toBe(formatSummary(structured));
    expect(text).toContain("Facts and constraints:\n");
  });

  it("gives the same bytes for the same input, frozen", async () => {
    const a = await summarizer.summarize(request());
    const b = await createExtractiveSummarizer().summarize(request());
    expect(b.text).toBe(a.text);
    expect(Object.isFrozen(a)).toBe(true);
    expect(Object.isFrozen(a.structured.goals)).toBe(true);
  });

  it("absorbs the previous summary: its items first, without repeats", async () => {
    const previous = {
      text: "",
      structured: { goals: ["Ship release 2.0"], artifacts: ["src/parse-date.ts", "docs/release.md"] },
    };
    const { structured } = await summarizer.summarize(request({ previous }));
    expect(structured.goals?.[0]).toBe("Ship release 2.0");
    expect(structured.artifacts?.slice(0, 3)).toEqual([
      "src/parse-date.ts",
      "docs/release.md",
      "https://example.com/issues/42",
    ]);
  });

  it("stays within maxTokens with the given counter, dropping old tool outcomes first", async () => {
    const countTokens = (t: string) => t.split(/\s+/).length;
    const small = createExtractiveSummarizer({ countTokens });
    const { text, structured } = await small.summarize(request({ maxTokens: 60 }));
    expect(countTokens(text)).toBeLessThanOrEqual(60);
    expect(structured.goals?.[0]).toContain("Please fix the failing date parser");
    expect(structured.toolOutcomes ?? []).not.toContain(expect.stringContaining("bash("));
  });

  it("caps each item", async () => {
    const { structured } = await createExtractiveSummarizer({ maxItemChars: 30 }).summarize(request());
    for (const items of Object.values(structured))
      for (const item of items) expect(item.length).toBeLessThanOrEqual(30);
  });

  it("fails with empty for an empty span, aborted for an aborted signal, failed for a hopeless budget", async () => {
    expect((await failure(summarizer.summarize(request({ messages: [] })))).reason).toBe("empty");
    const blank = ThreadLog.from("t1", [{ role: "user", parts: [{ type: "text", text: "  " }] }]).messages;
    expect((await failure(summarizer.summarize(request({ messages: blank })))).reason).toBe("empty");
    const signal = AbortSignal.abort();
    expect((await failure(summarizer.summarize(request({ signal })))).reason).toBe("aborted");
    const tiny = await failure(summarizer.summarize(request({ maxTokens: 2 })));
    expect(tiny.reason).toBe("failed");
    expect(tiny.message).toContain('thread "t1"');
  });
});

describe.skipIf(!trajectoriesAvailable)("extractive summarizer on the real trajectories", () => {
  const files = listTrajectories();
  const summarizer = createExtractiveSummarizer();

  it.each(files.map((f) => [f.name, f] as const))(
    "%s: non-empty, within budget, deterministic",
    async (_, file) => {
      const messages = importTranscript(ThreadLog.empty(`traj:${file.name}`), file.text).messages;
      for (const maxTokens of [120, 400, 1_500]) {
        const req = { threadId: "traj", messages, maxTokens };
        const first = await summarizer.summarize(req);
        const again = await summarizer.summarize(req);
        expect(again.text).toBe(first.text);
        expect(first.text.length).toBeGreaterThan(0);
        expect(estimateTokens(first.text)).toBeLessThanOrEqual(maxTokens);
        expect(first.structured.goals?.length ?? 0).toBeGreaterThan(0);
      }
      // Chunked: the second half absorbs the first half's summary and keeps its first goal.
      const half = Math.floor(messages.length / 2);
      const head = await summarizer.summarize({
        threadId: "traj",
        messages: messages.slice(0, half),
        maxTokens: 400,
      });
      const tail = await summarizer.summarize({
        threadId: "traj",
        messages: messages.slice(half),
        maxTokens: 400,
        previous: head,
      });
      expect(tail.structured.goals?.[0]).toBe(head.structured.goals?.[0]);
      expect(estimateTokens(tail.text)).toBeLessThanOrEqual(400);
    },
  );

  it("respects a real tokenizer's count", async () => {
    const tokenizer = createTokenizer({ model: "gpt-4o" });
    const exact = createExtractiveSummarizer({ countTokens: (t) => tokenizer.count(t) });
    for (const file of files) {
      const messages = importTranscript(ThreadLog.empty("t"), file.text).messages;
      const { text } = await exact.summarize({ threadId: "t", messages, maxTokens: 300 });
      expect(tokenizer.count(text), file.name).toBeLessThanOrEqual(300);
      // The request's counter (the renderer's) wins over the summarizer's own estimate.
      const countTokens = (t: string) => tokenizer.count(t);
      const byRequest = await summarizer.summarize({ threadId: "t", messages, maxTokens: 300, countTokens });
      expect(tokenizer.count(byRequest.text), file.name).toBeLessThanOrEqual(300);
    }
  });
});

describe("what the extractive summary keeps", () => {
  const summarizer = createExtractiveSummarizer();
  const complaint = "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.";
  const code = (n: number) =>
    Array.from(
      { length: n },
      (_, i) =>
        `    def handler_${i % 7}(self, request):\n        return self.dispatch(request, handler_${i % 7})`,
    ).join("\n");

  /** A run: the task, then rounds of narration + a call + a result (code), with the harness complaining between. */
  function run(extra: { round?: number; result: string }[] = []): MessageInput[] {
    const out: MessageInput[] = [
      { role: "user", parts: [{ type: "text", text: "Fix the dispatcher so handlers get the request." }] },
    ];
    for (let i = 0; i < 6; i++) {
      const found = extra.find((e) => e.round === i);
      out.push({
        role: "assistant",
        parts: [
          { type: "text", text: `I'll look at the dispatcher again. Let me check part ${i}.` },
          {
            type: "tool_call",
            callId: `c${i}`,
            name: "bash",
            args: JSON.stringify({ command: `cat part${i}.py` }),
          },
        ],
      });
      const body = found === undefined ? code(20) : `${code(10)}\n${found.result}\n${code(10)}`;
      out.push({ role: "tool", parts: [{ type: "tool_result", callId: `c${i}`, content: body }] });
      out.push({
        role: "assistant",
        parts: [{ type: "text", text: "Let me think about what could be wrong here?" }],
      });
      out.push({ role: "user", parts: [{ type: "text", text: complaint }] });
    }
    return out;
  }
  const messagesOf = (inputs: ReadonlyArray<MessageInput>) => ThreadLog.from("t", inputs).messages;

  it("leaves out the harness complaint repeated in many messages, narration and rhetorical questions", async () => {
    const { text } = await summarizer.summarize({
      threadId: "t",
      messages: messagesOf(run()),
      maxTokens: 4_000,
    });
    expect(text).not.toContain("EXACTLY ONE");
    expect(text).not.toContain("I'll look");
    expect(text).not.toContain("Let me");
    expect(text).not.toContain("what could be wrong");
    expect(text).toContain("bash(cat part0.py)");
  });

  it("keeps facts stated once in code output, identifier-like or plain made-up words, over recurring code", async () => {
    const messages = messagesOf(
      run([
        { round: 1, result: "The staging host is called velmorine." },
        { round: 4, result: "Order KX-48213 was shipped to the second warehouse." },
      ]),
    );
    for (const maxTokens of [120, 400]) {
      const { text } = await summarizer.summarize({ threadId: "t", messages, maxTokens });
      expect(text, `maxTokens ${maxTokens}`).toContain("velmorine");
      expect(text, `maxTokens ${maxTokens}`).toContain("KX-48213");
    }
    // Recurring code is no fact (a listing's first line still names a call's outcome).
    const { structured } = await summarizer.summarize({ threadId: "t", messages, maxTokens: 400 });
    for (const fact of structured.constraints ?? []) expect(fact).not.toMatch(/handler_|dispatch/);
  });

  it("gives no room to a fact the kept tail still shows verbatim", async () => {
    const messages = messagesOf(run([{ round: 1, result: "The staging host is called velmorine." }]));
    const tail = ThreadLog.from("u", [
      { role: "user", parts: [{ type: "text", text: "Deploy to velmorine when done." }] },
      { role: "user", parts: [{ type: "text", text: "Note: The staging host is called velmorine." }] },
    ]).messages;
    const { text } = await summarizer.summarize({ threadId: "t", messages, maxTokens: 400, tail });
    expect(text).not.toContain("velmorine");
  });

  it("keeps tool errors, exceptions, exit codes and test results", async () => {
    const messages = messagesOf([
      { role: "user", parts: [{ type: "text", text: "Make the date tests pass." }] },
      {
        role: "assistant",
        parts: [
          { type: "tool_call", callId: "t1", name: "bash", args: '{"command":"pytest tests/test_dates.py"}' },
        ],
      },
      {
        role: "tool",
        parts: [
          {
            type: "tool_result",
            callId: "t1",
            content: `<returncode>1</returncode>\n<output>\n${code(30)}\nTraceback (most recent call last):\n  File "dates.py", line 3\nValueError: month must be in 1..12\n===== 3 passed, 1 failed in 0.52s =====\n</output>`,
          },
        ],
      },
    ]);
    const { structured } = await summarizer.summarize({ threadId: "t", messages, maxTokens: 100 });
    expect(structured.toolOutcomes).toEqual([
      "bash(pytest tests/test_dates.py) → error: exit 1: ValueError: month must be in 1..12; ===== 3 passed, 1 failed in 0.52s =====",
    ]);
  });

  it("keeps an earlier summary's facts when absorbing it, dropping the least salient first when room runs out", async () => {
    const messages = messagesOf(run([{ round: 2, result: "The staging host is called velmorine." }]));
    const previous = {
      text: "",
      structured: {
        constraints: ["The vault code is QZ-90210.", "The dispatcher request handler dispatches handlers."],
      },
    };
    const roomy = await summarizer.summarize({ threadId: "t", messages, maxTokens: 2_000, previous });
    expect(roomy.structured.constraints).toContain("The vault code is QZ-90210.");
    expect(roomy.structured.constraints).toContain("The dispatcher request handler dispatches handlers.");
    // The earlier summary's items come first in reading order.
    expect(roomy.structured.constraints?.[0]).toBe("The vault code is QZ-90210.");
    // As room shrinks the least salient item goes first: the line of recurring words before the vault code.
    let salientOnly = 0;
    for (let maxTokens = 20; maxTokens <= 300; maxTokens += 10) {
      const { text } = await summarizer.summarize({ threadId: "t", messages, maxTokens, previous });
      if (text.includes("dispatches handlers")) expect(text, `maxTokens ${maxTokens}`).toContain("QZ-90210");
      else if (text.includes("QZ-90210")) salientOnly++;
    }
    expect(salientOnly).toBeGreaterThan(0);
  });

  it("stays within maxTokens as the repo's tokenizer counts, and is deterministic", async () => {
    const tokenizer = createTokenizer({ model: "gpt-4o" });
    const countTokens = (t: string) => tokenizer.count(t);
    const messages = messagesOf(run([{ round: 3, result: "Order KX-48213 was shipped." }]));
    for (const maxTokens of [20, 64, 150, 500]) {
      const req = { threadId: "t", messages, maxTokens, countTokens };
      const a = await summarizer.summarize(req);
      const b = await createExtractiveSummarizer().summarize(req);
      expect(countTokens(a.text)).toBeLessThanOrEqual(maxTokens);
      expect(b.text).toBe(a.text);
    }
  });
});

describe("the calls made", () => {
  const summarizer = createExtractiveSummarizer();
  const tokenizer = createTokenizer({ model: "gpt-4o" });
  const countTokens = (t: string) => tokenizer.count(t);
  const messagesOf = (inputs: ReadonlyArray<MessageInput>) => ThreadLog.from("t", inputs).messages;

  /** A long agent run: the task, then `n` calls, each with a result of a few lines and a fact of its own. */
  function calls(n: number, command: (i: number) => string): MessageInput[] {
    const out: MessageInput[] = [
      { role: "user", parts: [{ type: "text", text: "Find out why the nightly export is slow." }] },
    ];
    for (let i = 0; i < n; i++) {
      const args = JSON.stringify({ command: command(i) });
      out.push({ role: "assistant", parts: [{ type: "tool_call", callId: `c${i}`, name: "bash", args }] });
      const content = `step ${i} finished\nThe export shard velmor${i}x took ${i + 3} seconds.\ndone`;
      out.push({ role: "tool", parts: [{ type: "tool_result", callId: `c${i}`, content }] });
    }
    return out;
  }
  const callLines = (items: ReadonlyArray<string> | undefined) =>
    (items ?? []).filter((line) => line.startsWith("bash("));

  it("a span of 100 calls at a small maxTokens keeps its call lines, their outcomes given back first", async () => {
    const messages = messagesOf(calls(100, (i) => `python scripts/export_${i}.py --shard ${i}`));
    const req = { threadId: "t", messages, maxTokens: 400, countTokens };
    const { structured, text } = await summarizer.summarize(req);
    expect(countTokens(text)).toBeLessThanOrEqual(400);
    const lines = callLines(structured.toolOutcomes);
    // Before call lines had a share of the room of their own, the 18 facts took it all: no call line was kept.
    expect(lines.length).toBeGreaterThanOrEqual(6);
    expect(lines.filter((l) => !l.includes(" → ")).length).toBeGreaterThan(0);
    // Facts still get most of the room.
    expect(structured.constraints?.length ?? 0).toBeGreaterThanOrEqual(4);
    const roomy = await summarizer.summarize({ ...req, maxTokens: 4_000 });
    const withOutcome = (r: typeof structured) => callLines(r.toolOutcomes).filter((l) => l.includes(" → "));
    expect(withOutcome(roomy.structured).length).toBeGreaterThan(withOutcome(structured).length);
    expect(callLines(roomy.structured.toolOutcomes).length).toBeGreaterThan(lines.length);
  });

  it("keeps a call line after its outcome no longer fits", async () => {
    const messages = messagesOf(calls(1, () => "python scripts/export.py --all"));
    const seen = new Set<string>();
    for (let maxTokens = 20; maxTokens <= 120; maxTokens += 2) {
      const { structured } = await summarizer.summarize({ threadId: "t", messages, maxTokens, countTokens });
      for (const line of callLines(structured.toolOutcomes)) seen.add(line);
    }
    expect(seen).toEqual(
      new Set([
        "bash(python scripts/export.py --all)",
        "bash(python scripts/export.py --all) → step 0 finished",
      ]),
    );
  });

  it("folds consecutive identical calls into one line with a count and the last outcome", async () => {
    const messages = messagesOf(calls(5, (i) => (i < 4 ? "make status" : "make deploy")));
    const { structured } = await summarizer.summarize({ threadId: "t", messages, maxTokens: 2_000 });
    expect(callLines(structured.toolOutcomes)).toEqual([
      "bash(make status) ×4 → step 3 finished",
      "bash(make deploy) → step 4 finished",
    ]);
  });

  it("folds repeats across the span and an absorbed summary, where the last of them was made", async () => {
    const previous = { text: "", structured: { toolOutcomes: ["bash(make status) ×2 → idle"] } };
    const commands = ["make status", "make deploy", "make status"];
    const messages = messagesOf(calls(3, (i) => commands[i]!));
    const { structured } = await summarizer.summarize({
      threadId: "t",
      messages,
      maxTokens: 2_000,
      previous,
    });
    expect(callLines(structured.toolOutcomes)).toEqual([
      "bash(make deploy) → step 1 finished",
      "bash(make status) ×4 → step 2 finished",
    ]);
  });

  it("keeps an earlier summary's call lines when absorbing it, dropping their outcomes first", async () => {
    const previous = {
      text: "",
      structured: {
        toolOutcomes: [
          "bash(git log --oneline -5) → a1b2c3 first commit",
          "bash(cat config/export.yaml) → error: No such file or directory",
        ],
      },
    };
    const messages = messagesOf(calls(3, (i) => `python scripts/export_${i}.py`));
    const roomy = await summarizer.summarize({ threadId: "t", messages, maxTokens: 2_000, previous });
    expect(roomy.structured.toolOutcomes?.slice(0, 2)).toEqual(previous.structured.toolOutcomes);
    // With nothing new to compete, the earlier call lines outlive their outcomes as room shrinks.
    const next = messagesOf([{ role: "user", parts: [{ type: "text", text: "Keep going." }] }]);
    const bare = new Set<string>();
    for (let maxTokens = 20; maxTokens <= 80; maxTokens += 2) {
      const req = { threadId: "t", messages: next, maxTokens, previous, countTokens };
      const kept = (await summarizer.summarize(req)).structured.toolOutcomes ?? [];
      if (kept.some((l) => l.includes(" → "))) expect(kept, `maxTokens ${maxTokens}`).toHaveLength(2);
      for (const line of kept) if (!line.includes(" → ")) bare.add(line);
    }
    expect(bare).toEqual(new Set(["bash(git log --oneline -5)", "bash(cat config/export.yaml)"]));
  });
});
