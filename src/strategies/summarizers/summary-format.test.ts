import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fcParams } from "../../../test/support/arbitrary-log.js";
import { SummarizerError } from "../../errors/ledger-error.js";
import type { MessageInput } from "../../log/message.js";
import { ThreadLog } from "../../log/thread-log.js";
import { callWithDeadline, parseSummaryOutput, summaryFromAnswer } from "./model-answer.js";
import {
  estimateTokens,
  fitRanked,
  fitSummary,
  formatSummary,
  mergeSummaries,
  normalizeItem,
  SUMMARY_FIELDS,
  shorten,
} from "./summary-format.js";
import { buildSummaryPrompt, renderTranscript, transcriptChunks } from "./summary-prompt.js";

const messagesOf = (inputs: ReadonlyArray<MessageInput>) => ThreadLog.from("t1", inputs).messages;

function summarizerError(fn: () => unknown): SummarizerError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SummarizerError);
    return error as SummarizerError;
  }
  throw new Error("expected a SummarizerError, nothing was thrown");
}

describe("formatSummary", () => {
  it("writes one section per non-empty field, in a fixed order", () => {
    const text = formatSummary({
      artifacts: ["src/a.ts"],
      goals: ["Fix the bug", "  keep\n it  short "],
      decisions: [],
    });
    expect(text).toBe("Goals:\n- Fix the bug\n- keep it short\n\nArtifacts:\n- src/a.ts");
    expect(formatSummary({})).toBe("");
    expect(SUMMARY_FIELDS).toEqual([
      "goals",
      "constraints",
      "decisions",
      "openItems",
      "toolOutcomes",
      "artifacts",
    ]);
  });
});

describe("shorten", () => {
  it("keeps the head and says how much was left out", () => {
    expect(shorten("abcdef", 10)).toBe("abcdef");
    expect(shorten("abcdefghij", 4)).toBe("abcd… [6 chars omitted]");
  });
});

describe("fitSummary", () => {
  const big = {
    goals: ["The original task", "A later request"],
    constraints: ["Never touch production"],
    toolOutcomes: Array.from({ length: 40 }, (_, i) => `search(q=${i}) → result number ${i} with some words`),
    decisions: ["Use the cache"],
  };

  it("returns the summary unchanged in content when it already fits", () => {
    const fitted = fitSummary(big, 10_000);
    expect(fitted).toEqual(big);
    expect(Object.isFrozen(fitted)).toBe(true);
  });

  it("drops old tool outcomes first and keeps the first goal and the constraints", () => {
    for (const maxTokens of [40, 80, 150, 300]) {
      const fitted = fitSummary(big, maxTokens);
      expect(fitted).toBeDefined();
      expect(estimateTokens(formatSummary(fitted!))).toBeLessThanOrEqual(maxTokens);
      expect(fitted!.goals?.[0]).toBe("The original task");
    }
    const fitted = fitSummary(big, 150)!;
    expect(fitted.constraints).toEqual(["Never touch production"]);
    const kept = fitted.toolOutcomes ?? [];
    expect(kept.length).toBeLessThan(40);
    if (kept.length > 0) expect(kept.at(-1)).toBe(big.toolOutcomes.at(-1));
  });

  it("uses the given token counter, caps items and removes duplicates", () => {
    const fitted = fitSummary({ goals: ["x".repeat(500), "x".repeat(500), "b"] }, 1_000, {
      maxItemChars: 50,
      countTokens: (t) => t.length,
    });
    expect(fitted?.goals).toEqual([`${"x".repeat(49)}…`, "b"]);
  });

  it("shortens the last item, and gives up when nothing fits", () => {
    const one = fitSummary({ goals: ["word ".repeat(100)] }, 20);
    expect(one?.goals?.[0]?.endsWith("…")).toBe(true);
    expect(fitSummary({ goals: ["a goal"] }, 1)).toBeUndefined();
    expect(fitSummary({}, 100)).toBeUndefined();
  });
});

describe("fitRanked", () => {
  const items = [
    { field: "toolOutcomes" as const, text: "bash(ls) → ok", priority: 0.7, order: 1 },
    { field: "constraints" as const, text: "The vault code is QZ-90210.", priority: 1.6, order: 3 },
    {
      field: "constraints" as const,
      text: "A line of little worth that is rather long",
      priority: 0.2,
      order: 2,
    },
    { field: "goals" as const, text: "Ship it", priority: 3, order: 0 },
    { field: "goals" as const, text: "Ship it", priority: 1, order: 5 },
  ];

  it("keeps the most valuable items that fit, shown in reading order, without repeats", () => {
    expect(fitRanked(items, 1_000)).toEqual({
      goals: ["Ship it"],
      constraints: ["A line of little worth that is rather long", "The vault code is QZ-90210."],
      toolOutcomes: ["bash(ls) → ok"],
    });
    const tight = fitRanked(items, 20, { countTokens: (t) => t.split(/\s+/).length })!;
    expect(formatSummary(tight).split(/\s+/).length).toBeLessThanOrEqual(20);
    expect(tight.goals).toEqual(["Ship it"]);
    expect(tight.constraints).toEqual(["The vault code is QZ-90210."]);
  });

  it("appends an item's detail only while room allows, and gives the detail back before the item", () => {
    const words = { countTokens: (t: string) => t.split(/\s+/).filter(Boolean).length };
    const call = {
      field: "toolOutcomes" as const,
      text: "bash(make test)",
      priority: 2,
      order: 1,
      detail: { text: " → error: 3 tests failed in the parser module", priority: 0.5 },
    };
    const fact = { field: "constraints" as const, text: "The port is 8443.", priority: 1, order: 0 };
    expect(fitRanked([call, fact], 100, words)?.toolOutcomes).toEqual([
      "bash(make test) → error: 3 tests failed in the parser module",
    ]);
    // The fact is worth more than the outcome: the call line stays, its outcome goes.
    const tight = fitRanked([call, fact], 20, words)!;
    expect(tight).toEqual({ constraints: ["The port is 8443."], toolOutcomes: ["bash(make test)"] });
    // A detail worth more than its item comes with it, or the item comes alone.
    const failed = { ...call, priority: 0.8, detail: { ...call.detail, priority: 1.5 } };
    expect(fitRanked([failed], 100, words)?.toolOutcomes?.[0]).toContain("→ error");
    expect(fitRanked([failed], 8, words)?.toolOutcomes).toEqual(["bash(make test)"]);
    // When the exact count of the whole text is over, the detail is given back before the item it came with.
    const joined = { countTokens: (t: string) => t.length + (t.includes("\n") ? 50 : 0) };
    const room = joined.countTokens(formatSummary({ toolOutcomes: ["bash(make test)"] }));
    expect(fitRanked([failed], room, joined)).toEqual({ toolOutcomes: ["bash(make test)"] });
  });

  it("shortens the best item when nothing fits whole, and gives up when even that fails", () => {
    const long = [{ field: "goals" as const, text: "word ".repeat(100), priority: 1, order: 0 }];
    expect(fitRanked(long, 20)?.goals?.[0]?.endsWith("…")).toBe(true);
    expect(fitRanked(long, 1)).toBeUndefined();
    expect(fitRanked([], 100)).toBeUndefined();
  });
});

describe("mergeSummaries", () => {
  it("puts the earlier items first and drops repeats", () => {
    const merged = mergeSummaries({ goals: ["a", "b"] }, { goals: ["b", "c"], artifacts: ["x"] });
    expect(merged).toEqual({ goals: ["a", "b", "c"], artifacts: ["x"] });
  });
});

describe("buildSummaryPrompt", () => {
  const messages = messagesOf([
    { role: "user", parts: [{ type: "text", text: "Please fix the flaky test in src/app.ts" }] },
    {
      role: "assistant",
      parts: [
        {
          type: "tool_call",
          callId: "c1",
          name: "read_file",
          args: JSON.stringify({ path: "x".repeat(5_000) }),
        },
      ],
    },
    {
      role: "tool",
      parts: [{ type: "tool_result", callId: "c1", content: "y".repeat(10_000), isError: true }],
    },
  ]);

  it("shows the span, shortens long tool parts and asks for JSON only", () => {
    const prompt = buildSummaryPrompt(messages, { maxTokens: 500, maxPartChars: 200 });
    expect(prompt.system).toContain("ONLY a JSON object");
    for (const field of SUMMARY_FIELDS) expect(prompt.system).toContain(`"${field}"`);
    expect(prompt.user).toContain("#0 user:\nPlease fix the flaky test in src/app.ts");
    expect(prompt.user).toContain("→ call read_file [c1]");
    expect(prompt.user).toContain("← result [c1] (error): ");
    expect(prompt.user).toContain("chars omitted]");
    expect(prompt.user).toContain("under about 500 tokens");
    expect(prompt.user.length).toBeLessThan(1_500);
  });

  it("includes the previous summary to absorb", () => {
    const previous = { text: "Goals:\n- old goal", structured: { goals: ["old goal"] } };
    const prompt = buildSummaryPrompt(messages, { maxTokens: 500, previous });
    expect(prompt.user).toContain('<earlier_summary>\n{"goals":["old goal"]}');
    expect(prompt.user.indexOf("earlier_summary")).toBeLessThan(prompt.user.indexOf("<transcript>"));
  });

  it("keeps the transcript within maxInputChars, leaving out middle messages when it must", () => {
    const many = messagesOf(
      Array.from({ length: 400 }, (_, i) => ({
        role: i % 2 === 0 ? ("user" as const) : ("assistant" as const),
        parts: [{ type: "text" as const, text: `message ${i} ${"z".repeat(300)}` }],
      })),
    );
    const transcript = renderTranscript(many, 10_000);
    expect(transcript.length).toBeLessThanOrEqual(10_100);
    expect(transcript).toContain("#0 user:");
    expect(transcript).toContain("#399 assistant:");
    expect(transcript).toMatch(/… \[\d+ messages omitted\]/);
    expect(renderTranscript(many, 10_000)).toBe(transcript);
  });

  it("splits a span too long for one transcript into consecutive chunks that each render whole", () => {
    const many = messagesOf(
      Array.from({ length: 400 }, (_, i) => ({
        role: i % 2 === 0 ? ("user" as const) : ("assistant" as const),
        parts: [{ type: "text" as const, text: `message ${i} ${"z".repeat(300)}` }],
      })),
    );
    const chunks = transcriptChunks(many, 10_000);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.flat()).toEqual(many);
    for (const chunk of chunks) {
      const transcript = renderTranscript(chunk, 10_000);
      expect(transcript.length).toBeLessThanOrEqual(10_000);
      expect(transcript).not.toMatch(/omitted/);
    }
    // A span that fits (with its parts shortened if need be) stays one chunk: the same array.
    const few = many.slice(0, 20);
    expect(transcriptChunks(few, 10_000)).toEqual([few]);
    expect(transcriptChunks(few, 10_000)[0]).toBe(few);
  });

  it("cuts a single message too long for the transcript instead of leaving it out", () => {
    const parts = Array.from({ length: 200 }, (_, i) => ({
      type: "text" as const,
      text: `part ${i} ${"y".repeat(500)}`,
    }));
    const [huge] = messagesOf([{ role: "user", parts }]);
    expect(transcriptChunks([huge!], 10_000)).toEqual([[huge]]);
    const transcript = renderTranscript([huge!], 10_000);
    expect(transcript.length).toBeLessThanOrEqual(10_000);
    expect(transcript).toMatch(/^#0 user:\npart 0 /);
    expect(transcript).not.toMatch(/messages omitted/);
  });
});

describe("parseSummaryOutput", () => {
  it("accepts a JSON object, with or without a ```json fence", () => {
    const raw = '{"goals":["Fix it"],"decisions":[],"toolOutcomes":null,"extra":"ignored"}';
    const plain = parseSummaryOutput("m", raw);
    expect(plain).toEqual({ text: "Goals:\n- Fix it", structured: { goals: ["Fix it"] } });
    expect(Object.isFrozen(plain.structured)).toBe(true);
    expect(parseSummaryOutput("m", `\`\`\`json\n${raw}\n\`\`\``)).toEqual(plain);
    expect(parseSummaryOutput("m", `  \`\`\`\n${raw}\n\`\`\`  `)).toEqual(plain);
  });

  it("rejects empty output as empty", () => {
    for (const raw of ["", "  \n ", null, undefined]) {
      const error = summarizerError(() => parseSummaryOutput("openai:x", raw, { threadId: "t1" }));
      expect(error.reason).toBe("empty");
      expect(error.summarizerId).toBe("openai:x");
      expect(error.message).toContain('thread "t1"');
    }
  });

  it("rejects text, wrong shapes and all-empty answers as malformed", () => {
    const bad = [
      "Sorry, I cannot help with that.",
      '{"goals": ["cut',
      "[]",
      '"just a string"',
      '{"goals": "not a list"}',
      '{"goals": [1, 2]}',
      '{"goals": [], "decisions": ["  "]}',
      "{}",
      "```json\nnope\n```",
    ];
    for (const raw of bad) {
      const error = summarizerError(() => parseSummaryOutput("m", raw));
      expect(error.reason, raw).toBe("malformed");
    }
  });
});

describe("summaryFromAnswer", () => {
  const request = { threadId: "t1", messages: [], maxTokens: 20 };

  it("fits a good answer into maxTokens", () => {
    const answer = JSON.stringify({ toolOutcomes: Array.from({ length: 30 }, (_, i) => `outcome ${i}`) });
    const result = summaryFromAnswer("m", answer, { cut: false, request });
    expect(estimateTokens(result.text)).toBeLessThanOrEqual(20);
    expect(result.structured.toolOutcomes?.at(-1)).toBe("outcome 29");
  });

  it("says when a broken answer was cut at the token limit", () => {
    const error = summarizerError(() => summaryFromAnswer("m", '{"goals": ["a', { cut: true, request }));
    expect(error.reason).toBe("malformed");
    expect(error.message).toContain("cut at the output token limit");
  });
});

describe("callWithDeadline", () => {
  const classify = (error: unknown) => new SummarizerError("m", "failed", String(error));
  const hang = (signal: AbortSignal) =>
    new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(new Error("stopped"))));

  it("turns its own deadline into a timeout", async () => {
    const failure = callWithDeadline("m", { threadId: "t" }, 20, hang, classify);
    await expect(failure).rejects.toMatchObject({ reason: "timeout" });
  });

  it("turns the caller's abort into aborted, also before the call", async () => {
    const controller = new AbortController();
    const failure = callWithDeadline(
      "m",
      { threadId: "t", signal: controller.signal },
      5_000,
      hang,
      classify,
    );
    controller.abort();
    await expect(failure).rejects.toMatchObject({ reason: "aborted" });
    const early = callWithDeadline("m", { threadId: "t", signal: controller.signal }, 5_000, hang, classify);
    await expect(early).rejects.toMatchObject({ reason: "aborted" });
  });

  it("classifies other failures and passes results through", async () => {
    const boom = () => Promise.reject(new Error("boom"));
    await expect(callWithDeadline("m", { threadId: "t" }, 1_000, boom, classify)).rejects.toMatchObject({
      reason: "failed",
    });
    await expect(callWithDeadline("m", { threadId: "t" }, 1_000, async () => 42, classify)).resolves.toBe(42);
  });
});

describe("normalizeItem", () => {
  it("collapses every run of whitespace to one space and trims, as one replace does", () => {
    const piece = fc.constantFrom(
      "a",
      "b c",
      " ",
      "  ",
      "\t",
      "\n",
      "\r\n",
      "\u00a0",
      "\u2028",
      "\ufeff",
      "é",
      "😀",
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
        const text = pieces.join("");
        expect(normalizeItem(text)).toBe(text.replace(/\s+/g, " ").trim());
      }),
      fcParams(500),
    );
  });
});
