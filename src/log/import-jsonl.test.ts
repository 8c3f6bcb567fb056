import fc from "fast-check";
import { describe, expect, expectTypeOf, it } from "vitest";
import { validationError } from "../../test/support/builders.js";
import { ValidationError } from "../errors/ledger-error.js";
import {
  exportTranscript,
  importTranscript,
  parseTranscript,
  parseTranscriptLine,
  parseTranscriptLines,
  toTranscriptLines,
} from "./import-jsonl.js";
import type { MessageInput } from "./message.js";
import { ThreadLog } from "./thread-log.js";
import type { TranscriptLine, TranscriptLineFromSchema } from "./transcript-line-schema.js";

const j = (value: unknown): string => JSON.stringify(value);
const jsonl = (...lines: unknown[]): string => lines.map((l) => `${j(l)}\n`).join("");

describe("transcript line schema", () => {
  it("infers the hand-written TranscriptLine type", () => {
    expectTypeOf<TranscriptLineFromSchema>().toExtend<TranscriptLine>();
    expectTypeOf<TranscriptLineFromSchema["role"]>().toEqualTypeOf<TranscriptLine["role"]>();
    type Keys<R extends TranscriptLine["role"], T> = keyof Extract<T, { role: R }>;
    expectTypeOf<Keys<"assistant", TranscriptLineFromSchema>>().toEqualTypeOf<
      Keys<"assistant", TranscriptLine>
    >();
    expectTypeOf<Keys<"tool", TranscriptLineFromSchema>>().toEqualTypeOf<Keys<"tool", TranscriptLine>>();
    expectTypeOf<Keys<"user", TranscriptLineFromSchema>>().toEqualTypeOf<Keys<"user", TranscriptLine>>();
  });
});

describe("parseTranscriptLine", () => {
  it("maps system and user lines to one text part, even when empty", () => {
    expect(parseTranscriptLine(j({ role: "system", content: "rules" }), 1)).toEqual({
      role: "system",
      parts: [{ type: "text", text: "rules" }],
      meta: { sourceLine: 1 },
    });
    expect(parseTranscriptLine(j({ role: "user", content: "" }), 7, { source: "a.jsonl" })).toEqual({
      role: "user",
      parts: [{ type: "text", text: "" }],
      meta: { sourceLine: 7, source: "a.jsonl" },
    });
  });

  it("does not set an id (the log generates one)", () => {
    expect(parseTranscriptLine(j({ role: "user", content: "x" }), 1)).not.toHaveProperty("id");
  });

  it("maps assistant lines: reasoning first, then text if non-empty, then one tool_call per call", () => {
    const line = {
      role: "assistant",
      content: "Let me look.",
      tool_calls: [
        { id: "c1", name: "grep", arguments: '{"q": "x"}' },
        { id: "c2", name: "ls", arguments: "not json, kept verbatim " },
      ],
      reasoning: "thinking",
    };
    expect(parseTranscriptLine(j(line), 3).parts).toEqual([
      { type: "reasoning", text: "thinking" },
      { type: "text", text: "Let me look." },
      { type: "tool_call", callId: "c1", name: "grep", args: '{"q": "x"}' },
      { type: "tool_call", callId: "c2", name: "ls", args: "not json, kept verbatim " },
    ]);
  });

  it.each([
    ["calls only", { content: "", tool_calls: [{ id: "c", name: "f", arguments: "{}" }] }, ["tool_call"]],
    ["empty, no calls", { content: "" }, ["text"]],
    ["empty tool_calls array", { content: "", tool_calls: [] }, ["text"]],
    ["reasoning only", { content: "", reasoning: "r" }, ["reasoning", "text"]],
    ["empty reasoning", { content: "x", reasoning: "" }, ["reasoning", "text"]],
  ])("handles an assistant line with %s", (_name, fields, types) => {
    const input = parseTranscriptLine(j({ role: "assistant", ...fields }), 1);
    expect(input.parts.map((p) => p.type)).toEqual(types);
  });

  it("maps a tool line to one tool_result part and its name to meta.toolName", () => {
    expect(
      parseTranscriptLine(j({ role: "tool", content: "out", tool_call_id: "c1", name: "bash" }), 4),
    ).toEqual({
      role: "tool",
      parts: [{ type: "tool_result", callId: "c1", content: "out" }],
      meta: { sourceLine: 4, toolName: "bash" },
    });
    const unnamed = parseTranscriptLine(j({ role: "tool", content: "", tool_call_id: "c1" }), 5);
    expect(unnamed.meta).toEqual({ sourceLine: 5 });
    expect(unnamed.parts).toEqual([{ type: "tool_result", callId: "c1", content: "" }]);
  });

  const bad: ReadonlyArray<[string, string, string, RegExp]> = [
    ["invalid JSON", '{"role": "user", "content": "x"', "(line)", /not valid JSON/],
    ["an array", "[1, 2]", "(line)", /expected a JSON object, got an array/],
    ["null", "null", "(line)", /got null/],
    ["a number", "42", "(line)", /got number 42/],
    [
      "an unknown role",
      j({ role: "function", content: "x" }),
      "role",
      /role must be one of .* \(got string "function"\)/,
    ],
    ["no role", j({ content: "x" }), "role", /got nothing/],
    ["a non-string role", j({ role: 1, content: "x" }), "role", /got number 1/],
    ["no content", j({ role: "user" }), "content", /content is required on a user line/],
    [
      "null content",
      j({ role: "assistant", content: null }),
      "content",
      /content must be a string \(got null\)/,
    ],
    ["numeric content", j({ role: "system", content: 5 }), "content", /must be a string \(got number 5\)/],
    [
      "a tool line without tool_call_id",
      j({ role: "tool", content: "x" }),
      "tool_call_id",
      /required on a tool line/,
    ],
    [
      "an empty tool_call_id",
      j({ role: "tool", content: "x", tool_call_id: "" }),
      "tool_call_id",
      /non-empty/,
    ],
    [
      "a numeric tool_call_id",
      j({ role: "tool", content: "x", tool_call_id: 3 }),
      "tool_call_id",
      /must be a string/,
    ],
    [
      "a non-string name",
      j({ role: "tool", content: "x", tool_call_id: "c", name: 1 }),
      "name",
      /must be a string/,
    ],
    [
      "tool_calls on a user line",
      j({ role: "user", content: "x", tool_calls: [] }),
      "tool_calls",
      /unknown key\(s\) "tool_calls" on a user line \(allowed: role, content\)/,
    ],
    [
      "an unknown key",
      j({ role: "assistant", content: "x", function_call: {}, extra: 1 }),
      "function_call",
      /"function_call", "extra"/,
    ],
    [
      "tool_call_id on an assistant line",
      j({ role: "assistant", content: "", tool_call_id: "c" }),
      "tool_call_id",
      /unknown key/,
    ],
    [
      "reasoning on a user line",
      j({ role: "user", content: "", reasoning: "r" }),
      "reasoning",
      /unknown key/,
    ],
    ["name on an assistant line", j({ role: "assistant", content: "", name: "bot" }), "name", /unknown key/],
    [
      "non-array tool_calls",
      j({ role: "assistant", content: "", tool_calls: {} }),
      "tool_calls",
      /must be an array/,
    ],
    [
      "object arguments",
      j({ role: "assistant", content: "", tool_calls: [{ id: "c", name: "f", arguments: {} }] }),
      "tool_calls[0].arguments",
      /must be a string \(got an object\)/,
    ],
    [
      "a call without id",
      j({
        role: "assistant",
        content: "",
        tool_calls: [
          { id: "c", name: "f", arguments: "" },
          { name: "f", arguments: "" },
        ],
      }),
      "tool_calls[1].id",
      /required/,
    ],
    [
      "a call with an empty name",
      j({ role: "assistant", content: "", tool_calls: [{ id: "c", name: "", arguments: "" }] }),
      "tool_calls[0].name",
      /non-empty/,
    ],
    [
      "an unknown key in a call",
      j({
        role: "assistant",
        content: "",
        tool_calls: [{ id: "c", name: "f", arguments: "", type: "function" }],
      }),
      "tool_calls[0].type",
      /unknown key\(s\) "type" on tool_calls\[0\] \(allowed: id, name, arguments\)/,
    ],
    [
      "non-string reasoning",
      j({ role: "assistant", content: "", reasoning: 1 }),
      "reasoning",
      /must be a string/,
    ],
  ];

  it.each(bad)("rejects %s, naming the line and the field", (_name, line, field, message) => {
    const error = validationError(() => parseTranscriptLine(line, 12, { source: "x.jsonl" }));
    expect(error.where).toEqual({ line: 12, field });
    expect(error.message).toMatch(message);
    expect(error.message).toContain("line 12");
    expect(error.message).toContain("in x.jsonl");
  });
});

describe("parseTranscript", () => {
  it("skips blank lines and numbers lines as in the file", () => {
    const text = `\n${j({ role: "user", content: "a" })}\n   \n\t\n${j({ role: "assistant", content: "b" })}\n\n`;
    const inputs = parseTranscript(text, { source: "s" });
    expect(inputs.map((i) => i.meta)).toEqual([
      { sourceLine: 2, source: "s" },
      { sourceLine: 5, source: "s" },
    ]);
    expect(parseTranscript("")).toEqual([]);
    expect(parseTranscript("\n\r\n")).toEqual([]);
  });

  it("splits on CRLF (and lone CR) but keeps escaped CRLF inside strings", () => {
    const a = j({ role: "tool", content: "progress\r\n50%\r100%\r\n", tool_call_id: "c" });
    const b = j({ role: "user", content: "line1\nline2\u2028same line" });
    const inputs = parseTranscript(`${a}\r\n${b}\r\n`);
    expect(inputs).toHaveLength(2);
    expect(inputs[0]!.parts).toEqual([
      { type: "tool_result", callId: "c", content: "progress\r\n50%\r100%\r\n" },
    ]);
    expect(inputs[1]!.parts).toEqual([{ type: "text", text: "line1\nline2\u2028same line" }]);
    expect(parseTranscript(`${a}\r${b}`).map((i) => i.meta?.sourceLine)).toEqual([1, 2]);
  });

  it("ignores a leading byte order mark", () => {
    expect(parseTranscript(`\uFEFF${j({ role: "user", content: "x" })}\n`)).toHaveLength(1);
  });

  it("throws at the first bad line with its 1-based number (blank lines counted)", () => {
    const text = `${j({ role: "user", content: "a" })}\r\n\r\n${j({ role: "tool", content: "x" })}\r\n{oops}\r\n`;
    const error = validationError(() => parseTranscript(text));
    expect(error.where).toEqual({ line: 3, field: "tool_call_id" });
  });
});

describe("importTranscript", () => {
  const empty = ThreadLog.empty("t");

  it("appends every line in one batch", () => {
    const log = importTranscript(
      empty,
      jsonl(
        { role: "system", content: "s" },
        { role: "user", content: "u" },
        { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "f", arguments: "{}" }] },
        { role: "tool", content: "r", tool_call_id: "c1", name: "f" },
        { role: "assistant", content: "done" },
      ),
      { source: "demo" },
    );
    expect(log.length).toBe(5);
    expect(log.messages.map((m) => m.id)).toEqual(["msg-0", "msg-1", "msg-2", "msg-3", "msg-4"]);
    expect(log.at(3)?.meta).toEqual({ sourceLine: 4, source: "demo", toolName: "f" });
    expect(log.answersOf(3)).toEqual([2]);
    expect(log.groups.map((g) => g.kind)).toEqual(["system", "user", "tool_call", "assistant_text"]);
    expect(empty.length).toBe(0);
  });

  it("continues an existing log: a result may answer a call already in it", () => {
    const start = importTranscript(
      empty,
      jsonl({ role: "assistant", content: "", tool_calls: [{ id: "c", name: "f", arguments: "" }] }),
    );
    const next = importTranscript(start, jsonl({ role: "tool", content: "late", tool_call_id: "c" }));
    expect(next.answersOf(1)).toEqual([0]);
    expect(next.at(1)?.meta.sourceLine).toBe(1);
  });

  it("handles reused ids, trailing unanswered calls, non-adjacent results and same-role runs", () => {
    const call = (id: string, name = "f") => ({
      role: "assistant",
      content: "",
      tool_calls: [{ id, name, arguments: "{}" }],
    });
    const log = importTranscript(
      empty,
      jsonl(
        { role: "user", content: "u1" },
        { role: "user", content: "u2" }, // two user lines in a row
        call("a"), // 3
        { role: "assistant", content: "thinking aloud" }, // 4: between call and result
        { role: "user", content: "hurry" }, // 5
        { role: "tool", content: "ra", tool_call_id: "a" }, // 6: not adjacent to its call
        { role: "user", content: "format error" }, // 7: user after tool
        call("a"), // 8: id reused once answered
        { role: "tool", content: "ra2", tool_call_id: "a" }, // 9
        { role: "assistant", content: "x" }, // 10
        { role: "assistant", content: "y" }, // 11: two assistant lines in a row
        call("z", "submit"), // 12: never answered
      ),
    );
    expect(log.answersOf(5)).toEqual([2]);
    expect(log.answersOf(8)).toEqual([7]);
    expect([...log.pendingCalls.values()]).toEqual([{ seq: 11, partIndex: 0, callId: "z", name: "submit" }]);
    expect(log.groups.map((g) => [g.kind, g.seqs, g.pending])).toEqual([
      ["user", [0], false],
      ["user", [1], false],
      ["tool_call", [2, 5], false],
      ["assistant_text", [3], false],
      ["user", [4], false],
      ["user", [6], false],
      ["tool_call", [7, 8], false],
      ["assistant_text", [9], false],
      ["assistant_text", [10], false],
      ["tool_call", [11], true],
    ]);
  });

  const rejected: ReadonlyArray<[string, string, number, string, RegExp]> = [
    [
      "an orphaned tool result",
      jsonl({ role: "user", content: "u" }, { role: "tool", content: "r", tool_call_id: "nope" }),
      2,
      "tool_call_id",
      /orphaned result/,
    ],
    [
      "a second result for the same call",
      jsonl(
        { role: "assistant", content: "", tool_calls: [{ id: "c", name: "f", arguments: "" }] },
        { role: "tool", content: "r", tool_call_id: "c" },
        { role: "tool", content: "r", tool_call_id: "c" },
      ),
      3,
      "tool_call_id",
      /orphaned/,
    ],
    [
      "a call id reused while pending",
      jsonl(
        { role: "assistant", content: "", tool_calls: [{ id: "c", name: "f", arguments: "" }] },
        { role: "user", content: "u" },
        {
          role: "assistant",
          content: "",
          tool_calls: [
            { id: "d", name: "f", arguments: "" },
            { id: "c", name: "g", arguments: "" },
          ],
        },
      ),
      3,
      "tool_calls[1].id",
      /reused while the earlier call/,
    ],
    [
      "a malformed last line",
      `${jsonl({ role: "user", content: "u" }, { role: "assistant", content: "a" })}{"role": "user"`,
      3,
      "(line)",
      /not valid JSON/,
    ],
  ];

  it.each(rejected)(
    "rejects %s with its line number and appends nothing",
    (_name, text, line, field, message) => {
      const log = importTranscript(empty, jsonl({ role: "system", content: "s" }));
      const messages = log.messages;
      const groups = log.groups;
      const error = validationError(() => importTranscript(log, text, { source: "f.jsonl" }));
      expect(error.where.line).toBe(line);
      expect(error.where.field).toBe(field);
      expect(error.where.index).toBeUndefined();
      expect(error.message).toMatch(message);
      expect(error.message).toContain(`line ${line}`);
      expect(error.message).toContain("f.jsonl");
      if (field !== "(line)") {
        // Log errors are re-thrown with the original (batch index) error as the cause.
        expect(error.cause).toBeInstanceOf(ValidationError);
        expect((error.cause as ValidationError).where.index).toBe(line - 1);
        expect(error.where.threadId).toBe("t");
      }
      expect(log.length).toBe(1);
      expect(log.messages).toBe(messages);
      expect(log.groups).toBe(groups);
      expect(log.pendingCalls.size).toBe(0);
      // The untouched value still accepts a good import.
      expect(importTranscript(log, jsonl({ role: "user", content: "ok" })).length).toBe(2);
    },
  );

  it("maps a log error to the line even with blank lines and CRLF before it", () => {
    const text = `\r\n${j({ role: "user", content: "u" })}\r\n\r\n${j({ role: "tool", content: "r", tool_call_id: "x" })}\r\n`;
    const error = validationError(() => importTranscript(empty, text));
    expect(error.where).toMatchObject({ line: 4, field: "tool_call_id", messageId: "msg-1" });
  });
});

describe("parseTranscriptLines", () => {
  it("numbers lines and reports exactly how much text each line consumed, whatever the line breaks", () => {
    const a = j({ role: "user", content: "a" });
    const b = j({ role: "assistant", content: "b" });
    const text = `\uFEFF${a}\r\n\r\n${b}\r${a}\n`;
    const consumed: number[] = [];
    const parsed = parseTranscriptLines(text, { source: "x" }, (n) => consumed.push(n));
    expect(parsed.lines).toEqual([1, 3, 4]);
    expect(parsed.inputs.map((i) => i.role)).toEqual(["user", "assistant", "user"]);
    const ends = [
      1 + a.length + 2,
      1 + a.length + 4,
      1 + a.length + 4 + b.length + 1,
      text.length,
      text.length,
    ];
    expect(consumed).toEqual(ends);
    expect(parseTranscript(text, { source: "x" })).toEqual(parsed.inputs);
  });
});

describe("exportTranscript", () => {
  const lines = [
    { role: "system", content: "" },
    { role: "user", content: "héllo\r\nwörld 🌍" },
    { role: "assistant", content: "", tool_calls: [{ id: "c1", name: "f", arguments: '{"a": 1}' }] },
    { role: "tool", content: "", tool_call_id: "c1" },
    { role: "assistant", content: "", reasoning: "" },
    {
      role: "assistant",
      content: "both",
      tool_calls: [{ id: "c2", name: "g", arguments: "" }],
      reasoning: "why",
    },
    { role: "tool", content: "out", tool_call_id: "c2", name: "g" },
    { role: "assistant", content: "" },
    { role: "user", content: "" },
  ];

  it("round-trips every empty-content case exactly (byte for byte in JSON.stringify form)", () => {
    const text = jsonl(...lines);
    const log = importTranscript(ThreadLog.empty("t"), text);
    expect(toTranscriptLines(log)).toEqual(lines);
    expect(exportTranscript(log)).toBe(text);
  });

  it("writes an empty log as an empty string", () => {
    expect(exportTranscript(ThreadLog.empty("t"))).toBe("");
  });

  it("writes one line per result of a tool message with several results", () => {
    const log = ThreadLog.from("t", [
      {
        role: "assistant",
        parts: [
          { type: "tool_call", callId: "a", name: "f", args: "" },
          { type: "tool_call", callId: "b", name: "f", args: "" },
        ],
      },
      {
        role: "tool",
        parts: [
          { type: "tool_result", callId: "a", content: "1" },
          { type: "tool_result", callId: "b", content: "2" },
        ],
        meta: { toolName: "f" },
      },
    ]);
    expect(toTranscriptLines(log).slice(1)).toEqual([
      { role: "tool", content: "1", tool_call_id: "a", name: "f" },
      { role: "tool", content: "2", tool_call_id: "b", name: "f" },
    ]);
  });

  it.each<[string, MessageInput, string]>([
    [
      "a media part",
      { role: "user", parts: [{ type: "media", mediaType: "image/png", uri: "x" }] },
      "parts[0]",
    ],
    [
      "a signed reasoning part",
      {
        role: "assistant",
        parts: [
          { type: "text", text: "a" },
          { type: "reasoning", text: "r", signature: "sig" },
        ],
      },
      "parts[1]",
    ],
  ])("refuses to drop %s silently", (_name, input, field) => {
    const log = ThreadLog.from("t", [{ ...input, id: "m1" }]);
    const error = validationError(() => exportTranscript(log));
    expect(error.where).toEqual({ threadId: "t", messageId: "m1", field });
  });

  it("refuses to drop an error flag on a tool result", () => {
    const log = ThreadLog.from("t", [
      { role: "assistant", parts: [{ type: "tool_call", callId: "a", name: "f", args: "" }] },
      {
        id: "r",
        role: "tool",
        parts: [{ type: "tool_result", callId: "a", content: "boom", isError: true }],
      },
    ]);
    expect(validationError(() => exportTranscript(log)).where).toMatchObject({
      messageId: "r",
      field: "parts[0]",
    });
  });

  it("round-trips random transcripts (property)", () => {
    fc.assert(
      fc.property(randomTranscript(), (transcript) => {
        const text = transcript.map((l) => `${j(l)}\n`).join("");
        const log = importTranscript(ThreadLog.empty("t"), text);
        expect(log.length).toBe(transcript.length);
        expect(toTranscriptLines(log)).toEqual(transcript);
        expect(exportTranscript(log)).toBe(text);
        const again = importTranscript(ThreadLog.empty("t2"), exportTranscript(log));
        expect(again.messages.map((m) => m.hash)).toEqual(log.messages.map((m) => m.hash));
      }),
      { numRuns: 200 },
    );
  });
});

/** Random valid transcripts, written with the key order the exporter uses so the text can be compared too. */
function randomTranscript(): fc.Arbitrary<TranscriptLine[]> {
  const str = fc.string({ unit: "binary", maxLength: 12 });
  type Step =
    | { kind: "system" | "user"; content: string }
    | { kind: "assistant"; content: string; calls: number; reasoning: string | null }
    | { kind: "tool"; content: string; pick: number; named: boolean };
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({ kind: fc.constantFrom("system" as const, "user" as const), content: str }),
    fc.record({
      kind: fc.constant("assistant" as const),
      content: str,
      calls: fc.integer({ min: 0, max: 2 }),
      reasoning: fc.option(str),
    }),
    fc.record({ kind: fc.constant("tool" as const), content: str, pick: fc.nat(), named: fc.boolean() }),
  );
  return fc.array(step, { maxLength: 25 }).map((steps) => {
    const out: TranscriptLine[] = [];
    const pending: { id: string; name: string }[] = [];
    let n = 0;
    for (const s of steps) {
      if (s.kind === "system" || s.kind === "user") out.push({ role: s.kind, content: s.content });
      else if (s.kind === "assistant") {
        const calls: { id: string; name: string; arguments: string }[] = [];
        for (let i = 0; i < s.calls; i++) {
          // Ids come from a small pool (so they get reused once answered), never reused while pending.
          let id = `call_${n++ % 4}`;
          while (pending.some((p) => p.id === id) || calls.some((c) => c.id === id)) id = `call_${n++}`;
          calls.push({ id, name: `t${n % 2}`, arguments: `{"n":${n}}` });
        }
        pending.push(...calls);
        out.push({
          role: "assistant",
          content: s.content,
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
          ...(s.reasoning === null ? {} : { reasoning: s.reasoning }),
        });
      } else if (s.kind === "tool" && pending.length > 0) {
        const [call] = pending.splice(s.pick % pending.length, 1);
        out.push({
          role: "tool",
          content: s.content,
          tool_call_id: call!.id,
          ...(s.named ? { name: call!.name } : {}),
        });
      }
    }
    return out;
  });
}
