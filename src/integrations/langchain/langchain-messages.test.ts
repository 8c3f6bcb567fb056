import {
  AIMessage,
  type BaseMessage,
  ChatMessage,
  HumanMessage,
  SystemMessage,
  ToolMessage,
} from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { simpleCounter } from "../../../test/support/simple-counter.js";
import { createContextEngine } from "../../context-engine.js";
import { ValidationError } from "../../errors/ledger-error.js";
import type { MessageInput } from "../../log/message.js";
import { ThreadLog } from "../../log/thread-log.js";
import { emptyPlan, extendPlan, type PlanAction } from "../../plan/compaction-plan.js";
import { renderPrompt } from "../../render/render-prompt.js";
import { createMemoryStores } from "../../stores/memory/memory-stores.js";
import { fromLangChainMessages } from "./from-langchain.js";
import { toLangChainMessages } from "./to-langchain.js";

// A signed thinking block as Anthropic returns it: the text and signature must come back byte for byte.
const THINKING = "Let me check…\n\n  the  spacing\ttoo → ✓ \u{1F600}\r\n";
const SIGNATURE = "EqQBCkgIAhABGAIiQL+/0Zx9w1Fq3+Tb==\n";
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/** Every kind of message and content block the converters carry, as LangChain builds them. */
function conversation(): BaseMessage[] {
  return [
    new SystemMessage({ id: "sys", content: "You are a careful coding agent." }),
    new HumanMessage({ id: "u1", content: "Fix the flaky test in parser.test.ts" }),
    new HumanMessage({
      id: "u2",
      content: [
        { type: "text", text: "Here is the screenshot and the log:" },
        { type: "image", url: "https://example.com/shot.png" },
        { type: "image", url: "https://example.com/shot.webp", mimeType: "image/webp" },
        { type: "image", data: PNG, mimeType: "image/png" },
        { type: "file", url: "https://example.com/spec.pdf", mimeType: "application/pdf" },
        { type: "audio", data: "UklGRg==", mimeType: "audio/wav" },
      ],
    }),
    new AIMessage({
      id: "a1",
      content: [
        { type: "thinking", thinking: THINKING, signature: SIGNATURE },
        { type: "text", text: "I will read the test first." },
      ],
      tool_calls: [
        {
          type: "tool_call",
          id: "call_1",
          name: "read_file",
          args: { path: "parser.test.ts", lines: [1, 40] },
        },
        {
          type: "tool_call",
          id: "call_2",
          name: "grep",
          args: { pattern: "setTimeout", nested: { deep: true } },
        },
      ],
    }),
    new ToolMessage({
      id: "t1",
      tool_call_id: "call_1",
      name: "read_file",
      content: "1: import …",
      status: "success",
    }),
    new ToolMessage({ id: "t2", tool_call_id: "call_2", name: "grep", content: "no match", status: "error" }),
    new AIMessage({
      id: "a2",
      content: [{ type: "redacted_thinking", data: "RUVEQUNURUQ=" }],
      tool_calls: [{ type: "tool_call", id: "call_3", name: "run_tests", args: {} }],
    }),
    new ToolMessage({ id: "t3", tool_call_id: "call_3", name: "run_tests", content: "12 passed" }),
    new AIMessage({
      id: "a3",
      content: [
        {
          type: "reasoning",
          reasoning: "The timer is the culprit.",
          id: "rs_1",
          encrypted_content: "gAAAA==",
        },
        { type: "reasoning", reasoning: "Plain reasoning, no signature." },
        { type: "text", text: "Found it: " },
        { type: "text", text: "the timeout is too short." },
      ],
    }),
    new AIMessage({ id: "a4", content: "Done: raised the timeout to 5 s." }),
    new HumanMessage({ id: "u3", content: "" }),
  ];
}

/** What a model is sent of a message: the fields compared by the round trip. */
function sent(message: BaseMessage): Record<string, unknown> {
  const m = message as unknown as {
    type: string;
    id?: string;
    content: unknown;
    tool_calls?: unknown[];
    invalid_tool_calls?: unknown[];
    tool_call_id?: string;
    status?: string;
    name?: string;
  };
  return {
    type: m.type,
    id: m.id,
    content: m.content,
    ...(m.type === "ai"
      ? { tool_calls: m.tool_calls ?? [], invalid_tool_calls: m.invalid_tool_calls ?? [] }
      : {}),
    ...(m.type === "tool" ? { tool_call_id: m.tool_call_id, status: m.status, name: m.name } : {}),
  };
}

const counter = simpleCounter();

function rendered(inputs: ReadonlyArray<MessageInput>, actions: ReadonlyArray<PlanAction> = []) {
  const log = ThreadLog.empty("t").append(inputs);
  return renderPrompt(log, extendPlan(emptyPlan("t"), actions, log.length), { counter });
}

function validationError(run: () => unknown): ValidationError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error("expected a ValidationError");
}

describe("fromLangChainMessages", () => {
  it("reads every role and content kind into parts the log accepts", () => {
    const inputs = fromLangChainMessages(conversation());
    expect(() => ThreadLog.empty("t").append(inputs)).not.toThrow();
    expect(inputs.map((m) => [m.id, m.role])).toEqual([
      ["sys", "system"],
      ["u1", "user"],
      ["u2", "user"],
      ["a1", "assistant"],
      ["t1", "tool"],
      ["t2", "tool"],
      ["a2", "assistant"],
      ["t3", "tool"],
      ["a3", "assistant"],
      ["a4", "assistant"],
      ["u3", "user"],
    ]);
    expect(inputs[2]!.parts).toEqual([
      { type: "text", text: "Here is the screenshot and the log:" },
      { type: "media", mediaType: "image/*", uri: "https://example.com/shot.png" },
      { type: "media", mediaType: "image/webp", uri: "https://example.com/shot.webp" },
      { type: "media", mediaType: "image/png", uri: `data:image/png;base64,${PNG}` },
      { type: "media", mediaType: "application/pdf", uri: "https://example.com/spec.pdf" },
      { type: "media", mediaType: "audio/wav", uri: "data:audio/wav;base64,UklGRg==" },
    ]);
    expect(inputs[3]!.parts).toEqual([
      { type: "reasoning", text: THINKING, signature: SIGNATURE },
      { type: "text", text: "I will read the test first." },
      {
        type: "tool_call",
        callId: "call_1",
        name: "read_file",
        args: '{"path":"parser.test.ts","lines":[1,40]}',
      },
      {
        type: "tool_call",
        callId: "call_2",
        name: "grep",
        args: '{"pattern":"setTimeout","nested":{"deep":true}}',
      },
    ]);
    expect(inputs[4]).toEqual({
      id: "t1",
      role: "tool",
      parts: [{ type: "tool_result", callId: "call_1", content: "1: import …", isError: false }],
      meta: { toolName: "read_file" },
    });
    expect(inputs[5]!.parts).toEqual([
      { type: "tool_result", callId: "call_2", content: "no match", isError: true },
    ]);
    expect(inputs[6]!.parts[0]).toEqual({ type: "reasoning", text: "", redacted: "RUVEQUNURUQ=" });
    expect(inputs[7]!.parts).toEqual([{ type: "tool_result", callId: "call_3", content: "12 passed" }]);
    expect(inputs[8]!.parts.slice(0, 2)).toEqual([
      { type: "reasoning", text: "The timer is the culprit.", signature: "rs_1", redacted: "gAAAA==" },
      { type: "reasoning", text: "Plain reasoning, no signature." },
    ]);
    expect(inputs[10]!.parts).toEqual([]);
  });

  it("reads the other shapes of images, thinking and tool use that LangChain providers produce", () => {
    const [human, ai] = fromLangChainMessages([
      new HumanMessage({
        content: [
          { type: "image_url", image_url: "https://example.com/a.jpg" },
          { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}`, detail: "low" } },
          { type: "image", source: { type: "base64", media_type: "image/gif", data: "R0lGOD==" } },
          { type: "image", source_type: "url", url: "https://example.com/b.png", mime_type: "image/png" },
          { type: "image", data: new Uint8Array([1, 2, 3]), mimeType: "image/png" },
        ],
      }),
      new AIMessage({
        content: [
          { type: "reasoning", reasoning: "signed", signature: "sig" },
          { type: "thinking", thinking: "unsigned" },
          { type: "non_standard", value: { type: "redacted_thinking", data: "opaque" } },
          { type: "tool_use", id: "toolu_1", name: "search", input: { q: "x" } },
        ],
        tool_calls: [{ id: "toolu_1", name: "search", args: { q: "x" } }],
        invalid_tool_calls: [
          { id: "toolu_2", name: "search", args: '{"q": "unterminated', error: "bad json" },
        ],
      }),
    ]);
    expect(human!.id).toBeUndefined();
    expect(human!.parts).toEqual([
      { type: "media", mediaType: "image/*", uri: "https://example.com/a.jpg" },
      { type: "media", mediaType: "image/png", uri: `data:image/png;base64,${PNG}` },
      { type: "media", mediaType: "image/gif", uri: "data:image/gif;base64,R0lGOD==" },
      { type: "media", mediaType: "image/png", uri: "https://example.com/b.png" },
      { type: "media", mediaType: "image/png", uri: "data:image/png;base64,AQID" },
    ]);
    expect(ai!.parts).toEqual([
      { type: "reasoning", text: "signed", signature: "sig" },
      { type: "reasoning", text: "unsigned" },
      { type: "reasoning", text: "", redacted: "opaque" },
      { type: "tool_call", callId: "toolu_1", name: "search", args: '{"q":"x"}' },
      { type: "tool_call", callId: "toolu_2", name: "search", args: '{"q": "unterminated' },
    ]);
  });

  it("joins a tool message's text blocks into its result", () => {
    const [tool] = fromLangChainMessages([
      new ToolMessage({
        tool_call_id: "c1",
        content: [
          { type: "text", text: "line 1\n" },
          { type: "text", text: "line 2" },
        ],
      }),
    ]);
    expect(tool!.parts).toEqual([{ type: "tool_result", callId: "c1", content: "line 1\nline 2" }]);
  });

  const badInputs: ReadonlyArray<[string, () => BaseMessage[], number, string, RegExp]> = [
    [
      "a message type the log has no role for",
      () => [new HumanMessage("hi"), new ChatMessage({ content: "x", role: "critic", id: "m2" })],
      1,
      "type",
      /type "generic" are not supported/,
    ],
    [
      "a tool call without an id",
      () => [new AIMessage({ content: "", tool_calls: [{ name: "search", args: {} }] })],
      0,
      "tool_calls[0].id",
      /needs an id/,
    ],
    [
      "a tool message without tool_call_id",
      () => [new HumanMessage("hi"), { type: "tool", content: "x" } as unknown as BaseMessage],
      1,
      "tool_call_id",
      /tool_call_id/,
    ],
    [
      "an image in a tool result",
      () => [
        new ToolMessage({
          tool_call_id: "c1",
          content: [
            { type: "text", text: "see" },
            { type: "image", url: "https://example.com/x.png" },
          ],
        }),
      ],
      0,
      "content[1]",
      /tool message cannot hold media/,
    ],
    [
      "an image in an assistant message",
      () => [new AIMessage({ content: [{ type: "image", url: "https://example.com/x.png" }] })],
      0,
      "content[0]",
      /assistant message cannot hold media/,
    ],
    [
      "a content block of an unknown type",
      () => [new HumanMessage({ content: [{ type: "document", source: { type: "text", data: "x" } }] })],
      0,
      "content[0].type",
      /"document" are not supported/,
    ],
    [
      "a tool_use block whose call is not in tool_calls",
      () => [new AIMessage({ content: [{ type: "tool_use", id: "toolu_9", name: "x", input: {} }] })],
      0,
      "content[0].id",
      /not among the message's tool_calls/,
    ],
    [
      "an image named by a provider file id",
      () => [new HumanMessage({ content: [{ type: "image", fileId: "file-abc" }] })],
      0,
      "content[0].fileId",
      /file id/,
    ],
    [
      "base64 data without its media type",
      () => [new HumanMessage({ content: [{ type: "audio", data: "UklGRg==" } as never] })],
      0,
      "content[0].mimeType",
      /needs its mimeType/,
    ],
    [
      "a tool status LangChain does not know",
      () => [new ToolMessage({ tool_call_id: "c1", content: "x", status: "failed" as "error" })],
      0,
      "status",
      /status must be/,
    ],
    [
      "a thinking block whose text is not a string",
      () => [new AIMessage({ id: "a9", content: [{ type: "thinking", thinking: 42, signature: "s" }] })],
      0,
      "content[0].thinking",
      /string thinking/,
    ],
  ];
  it.each(badInputs)(
    "%s fails with a ValidationError naming the index and field",
    (_, make, index, field, text) => {
      const error = validationError(() => fromLangChainMessages(make()));
      expect(error.where.index).toBe(index);
      expect(error.where.field).toBe(field);
      expect(error.message).toMatch(text);
      expect(error.message).toContain(`field ${field}`);
    },
  );

  it("names the message id when the message has one, and refuses what is not an array", () => {
    const error = validationError(() =>
      fromLangChainMessages([new AIMessage({ id: "a9", content: [{ type: "video" } as never] })]),
    );
    expect(error.where).toEqual({ index: 0, messageId: "a9", field: "content[0]" });
    expect(validationError(() => fromLangChainMessages({} as never)).where.field).toBe("messages");
  });
});

describe("toLangChainMessages", () => {
  it("round trip: from → log → render → to gives back the messages that went in", () => {
    const input = conversation();
    const out = toLangChainMessages(rendered(fromLangChainMessages(input)));
    expect(out.map(sent)).toEqual(input.map(sent));
    // The signed block is the very same text and signature.
    const thinking = (out[3]!.content as Array<{ thinking?: string; signature?: string }>)[0]!;
    expect(thinking.thinking).toBe(THINKING);
    expect(thinking.signature).toBe(SIGNATURE);
    // Real message classes, which any LangChain chat model takes.
    expect(out.map((m) => m.constructor.name)).toEqual(input.map((m) => m.constructor.name));
  });

  it("round trip through the engine: append → prepareTurn → to", async () => {
    const engine = createContextEngine({
      stores: createMemoryStores(),
      counter,
      budget: { contextWindow: 100_000 },
    });
    const input = conversation();
    await engine.append("t", fromLangChainMessages(input));
    const turn = await engine.prepareTurn("t", { format: "anthropic" });
    expect(toLangChainMessages(turn.prompt).map(sent)).toEqual(input.map(sent));
  });

  it("gives the standard form of shapes that have one", () => {
    const input = [
      new AIMessage({ id: "call", content: "", tool_calls: [{ id: "c1", name: "f", args: {} }] }),
      new ToolMessage({ tool_call_id: "c1", content: [{ type: "text", text: "result" }] }),
      new HumanMessage({
        content: [
          { type: "image_url", image_url: { url: "https://example.com/a.jpg" } },
          { type: "image", source: { type: "base64", media_type: "image/gif", data: "R0lGOD==" } },
        ],
      }),
      new HumanMessage({ content: [{ type: "text", text: "one block" }] }),
      new AIMessage({
        content: [
          { type: "reasoning", reasoning: "r", signature: "sig" },
          { type: "non_standard", value: { type: "redacted_thinking", data: "opaque" } },
        ],
      }),
    ];
    const out = toLangChainMessages(rendered(fromLangChainMessages(input))).slice(1);
    expect(out.map((m) => m.content)).toEqual([
      "result",
      [
        { type: "image", url: "https://example.com/a.jpg" },
        { type: "image", data: "R0lGOD==", mimeType: "image/gif" },
      ],
      "one block",
      [
        { type: "thinking", thinking: "r", signature: "sig" },
        { type: "redacted_thinking", data: "opaque" },
      ],
    ]);
    expect((out[0] as ToolMessage).name).toBe("f");
  });

  it("keeps arguments that are not a JSON object as an invalid tool call, paired with its result", () => {
    const out = toLangChainMessages(
      rendered([
        { role: "user", parts: [{ type: "text", text: "go" }] },
        {
          id: "a",
          role: "assistant",
          parts: [
            { type: "tool_call", callId: "c1", name: "search", args: '{"q":"ok"}' },
            { type: "tool_call", callId: "c2", name: "search", args: '{"q": "unterminated' },
            { type: "tool_call", callId: "c3", name: "raw", args: "[1,2]" },
          ],
        },
        { role: "tool", parts: [{ type: "tool_result", callId: "c1", content: "1" }] },
        { role: "tool", parts: [{ type: "tool_result", callId: "c2", content: "2", isError: true }] },
        { role: "tool", parts: [{ type: "tool_result", callId: "c3", content: "3" }] },
      ]),
    );
    const ai = out[1] as AIMessage;
    expect(ai.tool_calls).toEqual([{ type: "tool_call", id: "c1", name: "search", args: { q: "ok" } }]);
    expect(ai.invalid_tool_calls?.map((c) => [c.id, c.args])).toEqual([
      ["c2", '{"q": "unterminated'],
      ["c3", "[1,2]"],
    ]);
    expect(out.slice(2).map((m) => [(m as ToolMessage).tool_call_id, (m as ToolMessage).status])).toEqual([
      ["c1", undefined],
      ["c2", "error"],
      ["c3", undefined],
    ]);
  });

  it("splits a log message holding several results into one ToolMessage each, named after its call", () => {
    const out = toLangChainMessages(
      rendered([
        {
          id: "a",
          role: "assistant",
          parts: [
            { type: "tool_call", callId: "c1", name: "read", args: "{}" },
            { type: "tool_call", callId: "c2", name: "list", args: "{}" },
          ],
        },
        {
          id: "r",
          role: "tool",
          parts: [
            { type: "tool_result", callId: "c1", content: "one" },
            { type: "tool_result", callId: "c2", content: "two" },
          ],
        },
      ]),
    );
    expect(out.slice(1).map((m) => [m.id, (m as ToolMessage).tool_call_id, m.name, m.content])).toEqual([
      ["r#0", "c1", "read", "one"],
      ["r#1", "c2", "list", "two"],
    ]);
  });

  it("a cleared message keeps its id and pairing; a summary, a stub and per-turn content have no id", () => {
    const inputs: MessageInput[] = [
      { id: "sys", role: "system", parts: [{ type: "text", text: "system" }] },
      { id: "u1", role: "user", parts: [{ type: "text", text: "old question" }] },
      { id: "x1", role: "assistant", parts: [{ type: "text", text: "old answer" }] },
      {
        id: "a1",
        role: "assistant",
        parts: [{ type: "tool_call", callId: "c1", name: "search", args: '{"q":"a"}' }],
      },
      { id: "t1", role: "tool", parts: [{ type: "tool_result", callId: "c1", content: "big ".repeat(500) }] },
      {
        id: "a2",
        role: "assistant",
        parts: [{ type: "tool_call", callId: "c2", name: "search", args: "{}" }],
      },
    ];
    const log = ThreadLog.empty("t").append(inputs);
    const plan = extendPlan(
      emptyPlan("t"),
      [
        {
          kind: "summarize",
          span: ["u1", "x1"],
          record: {
            kind: "summarize",
            summary: "The user asked; it was answered.",
            summarizerId: "t",
            promptVersion: "1",
          },
          strategy: "test",
          reason: "test",
        },
        {
          kind: "clear",
          span: ["a1", "t1"],
          record: { kind: "clear", clearArgs: true },
          strategy: "test",
          reason: "test",
        },
      ],
      log.length,
    );
    const prompt = renderPrompt(log, plan, { counter, injections: [{ text: "Reminder: run the tests." }] });
    expect(prompt.messages.map((m) => m.provenance.kind)).toEqual([
      "original",
      "summary",
      "cleared",
      "cleared",
      "original",
      "pending_stub",
      "injection",
    ]);
    const out = toLangChainMessages(prompt);
    expect(out.map((m) => m.id)).toEqual(["sys", undefined, "a1", "t1", "a2", undefined, undefined]);
    expect((out[2] as AIMessage).tool_calls?.[0]).toMatchObject({
      id: "c1",
      args: { _cleared: expect.any(String) },
    });
    expect(out[3]).toMatchObject({ tool_call_id: "c1", name: "search" });
    expect(out[3]!.content).toMatch(/result cleared/);
    expect(out[5]).toMatchObject({ tool_call_id: "c2", name: "search" });
    expect(out[6]!.content).toBe("Reminder: run the tests.");
  });
});
