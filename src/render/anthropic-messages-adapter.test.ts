import { describe, expect, it } from "vitest";
import { neutralMessages } from "../../test/support/arbitrary-conversation.js";
import { call, result, text } from "../../test/support/builders.js";
import {
  CONVERSATION_CONTINUES,
  EMPTY_MESSAGE,
  toAnthropicMessages,
  toolInput,
} from "./anthropic-messages-adapter.js";
import { validateAnthropicMessages } from "./anthropic-messages-rules.js";

/** A message's blocks as plain records, for reading fields that only some block types have. */
const blocksOf = (m: { readonly content: unknown } | undefined): ReadonlyArray<Record<string, unknown>> =>
  Array.isArray(m?.content) ? (m.content as Record<string, unknown>[]) : [];

describe("toAnthropicMessages", () => {
  it("puts leading system messages in `system` and a later one as a [system] user block", () => {
    const out = toAnthropicMessages(
      neutralMessages([
        { role: "system", parts: [text("policy")] },
        { role: "user", parts: [text("hi")] },
        { role: "system", parts: [text("reminder")] },
      ]),
    );
    expect(out.system).toEqual([{ type: "text", text: "policy" }]);
    expect(out.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "hi" },
          { type: "text", text: "[system] reminder" },
        ],
      },
    ]);
    expect(validateAnthropicMessages(out)).toEqual([]);
  });

  it("puts a user message first when the history starts with the assistant", () => {
    const out = toAnthropicMessages(
      neutralMessages([{ role: "assistant", parts: [text("earlier answer")] }]),
    );
    expect(out.messages[0]).toEqual({
      role: "user",
      content: [{ type: "text", text: CONVERSATION_CONTINUES }],
    });
    expect(out).not.toHaveProperty("system");
  });

  it("merges consecutive messages of one role", () => {
    const out = toAnthropicMessages(
      neutralMessages([
        { role: "user", parts: [text("demo")] },
        { role: "user", parts: [text("task")] },
        { role: "assistant", parts: [text("a")] },
        { role: "assistant", parts: [text("b")] },
      ]),
    );
    expect(out.messages.map((m) => [m.role, (m.content as unknown[]).length])).toEqual([
      ["user", 2],
      ["assistant", 2],
    ]);
    expect(validateAnthropicMessages(out)).toEqual([]);
  });

  it("answers parallel calls in the next user message, results first, even when the log has a user message between", () => {
    const out = toAnthropicMessages(
      neutralMessages([
        { role: "user", parts: [text("go")] },
        { role: "assistant", parts: [text("two calls"), call("a", '{"x":1}'), call("b")] },
        { role: "user", parts: [text("(user typed meanwhile)")] },
        { role: "tool", parts: [result("b", "B"), result("a", "", true)] },
      ]),
    );
    expect(out.messages[1]).toEqual({
      role: "assistant",
      content: [
        { type: "text", text: "two calls" },
        { type: "tool_use", id: "a", name: "bash", input: { x: 1 } },
        { type: "tool_use", id: "b", name: "bash", input: {} },
      ],
    });
    expect(out.messages[2]).toEqual({
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "b", content: "B" },
        { type: "tool_result", tool_use_id: "a", content: "(no output)", is_error: true },
        { type: "text", text: "(user typed meanwhile)" },
      ],
    });
    expect(validateAnthropicMessages(out)).toEqual([]);
  });

  it("puts tool results before text when a user message follows the results", () => {
    const out = toAnthropicMessages(
      neutralMessages([
        { role: "user", parts: [text("q")] },
        { role: "assistant", parts: [call("c1")] },
        { role: "tool", parts: [result("c1", "r")] },
        { role: "user", parts: [text("thanks")] },
      ]),
    );
    expect(out.messages[2]?.content).toEqual([
      { type: "tool_result", tool_use_id: "c1", content: "r" },
      { type: "text", text: "thanks" },
    ]);
  });

  it("keeps signed thinking byte for byte and first, sends redacted thinking, drops unsigned reasoning", () => {
    const thinking = "Let me think…\r\n  step 1 ✓";
    const signature = "EqQBCkgIARABGAIiQL+/z9x==";
    const out = toAnthropicMessages(
      neutralMessages([
        { role: "user", parts: [text("q")] },
        {
          role: "assistant",
          parts: [
            text("calling"),
            { type: "reasoning", text: thinking, signature },
            { type: "reasoning", text: "unsigned" },
            { type: "reasoning", text: "", redacted: "ErUBCkYIAx==" },
            call("c1"),
          ],
        },
        { role: "tool", parts: [result("c1", "ok")] },
      ]),
    );
    const content = blocksOf(out.messages[1]);
    expect(content[0]).toEqual({ type: "thinking", thinking, signature });
    expect(content[1]).toEqual({ type: "redacted_thinking", data: "ErUBCkYIAx==" });
    expect(content.map((b) => b.type)).toEqual(["thinking", "redacted_thinking", "text", "tool_use"]);
    expect(validateAnthropicMessages(out)).toEqual([]);
  });

  it("parses arguments into input, wrapping anything that is not a JSON object", () => {
    expect(toolInput('{"a":[1,2]}')).toEqual({ a: [1, 2] });
    expect(toolInput("  ")).toEqual({});
    expect(toolInput("{not json")).toEqual({ _raw: "{not json" });
    expect(toolInput("[1,2]")).toEqual({ _raw: "[1,2]" });
    expect(toolInput("null")).toEqual({ _raw: "null" });
  });

  it("rewrites reused and malformed call ids so tool_use ids are unique, and results follow them", () => {
    const out = toAnthropicMessages(
      neutralMessages([
        { role: "user", parts: [text("q")] },
        { role: "assistant", parts: [call("call_1")] },
        { role: "tool", parts: [result("call_1", "first")] },
        { role: "assistant", parts: [call("call_1"), call("fn:lookup.2")] },
        { role: "tool", parts: [result("fn:lookup.2", "b"), result("call_1", "second")] },
      ]),
    );
    const ids = out.messages.flatMap((m) => blocksOf(m).map((b) => b.id ?? b.tool_use_id));
    expect(ids).toEqual([
      undefined,
      "call_1",
      "call_1",
      "call_1_2",
      "fn_lookup_2",
      "fn_lookup_2",
      "call_1_2",
    ]);
    expect(validateAnthropicMessages(out)).toEqual([]);
  });

  it("skips blank text and gives an otherwise empty message a placeholder", () => {
    const out = toAnthropicMessages(
      neutralMessages([
        { role: "user", parts: [text("  \n")] },
        { role: "assistant", parts: [text(""), { type: "reasoning", text: "unsigned" }] },
      ]),
    );
    expect(out.messages).toEqual([
      { role: "user", content: [{ type: "text", text: EMPTY_MESSAGE }] },
      { role: "assistant", content: [{ type: "text", text: EMPTY_MESSAGE }] },
    ]);
  });

  it("sends a tool result without output without content", () => {
    const out = toAnthropicMessages(
      neutralMessages([
        { role: "assistant", parts: [call("c1")] },
        { role: "tool", parts: [result("c1", "")] },
      ]),
    );
    expect(out.messages[2]?.content).toEqual([{ type: "tool_result", tool_use_id: "c1" }]);
  });

  it("sends url and base64 images as image blocks and other media as text", () => {
    const out = toAnthropicMessages(
      neutralMessages([
        {
          role: "user",
          parts: [
            { type: "media", mediaType: "image/png", uri: "https://x.test/a.png" },
            { type: "media", mediaType: "image/jpeg", uri: "data:image/jpeg;base64,/9j/4AAQ" },
            { type: "media", mediaType: "image/png", uri: "s3://bucket/a.png" },
            { type: "media", mediaType: "application/pdf", uri: "https://x.test/r.pdf" },
          ],
        },
      ]),
    );
    expect(out.messages[0]?.content).toEqual([
      { type: "image", source: { type: "url", url: "https://x.test/a.png" } },
      { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "/9j/4AAQ" } },
      { type: "text", text: "[media image/png: s3://bucket/a.png]" },
      { type: "text", text: "[media application/pdf: https://x.test/r.pdf]" },
    ]);
  });

  it("puts cache_control on the last block of each breakpoint message", () => {
    const messages = neutralMessages([
      { role: "system", parts: [text("policy")] },
      { role: "user", parts: [text("a"), text("b")] },
      { role: "assistant", parts: [call("c1")] },
      { role: "tool", parts: [result("c1", "r")] },
      { role: "assistant", parts: [{ type: "reasoning", text: "t", signature: "s" }] },
    ]);
    const out = toAnthropicMessages(messages, { cacheBreakpoints: [0, 1, 4] });
    const ephemeral = { type: "ephemeral" };
    expect(out.system).toEqual([{ type: "text", text: "policy", cache_control: ephemeral }]);
    expect(out.messages[0]?.content).toEqual([
      { type: "text", text: "a" },
      { type: "text", text: "b", cache_control: ephemeral },
    ]);
    // message 4 has only a thinking block, which cannot carry cache_control: the tool result of message 3 does.
    expect(out.messages[2]?.content).toEqual([
      { type: "tool_result", tool_use_id: "c1", content: "r", cache_control: ephemeral },
    ]);
    expect(validateAnthropicMessages(out)).toEqual([]);
  });

  it("does not change its input", () => {
    const messages = neutralMessages([
      { role: "assistant", parts: [call("call.1")] },
      { role: "tool", parts: [result("call.1", "r")] },
    ]);
    const before = JSON.stringify(messages);
    toAnthropicMessages(messages, { cacheBreakpoints: [1] });
    expect(JSON.stringify(messages)).toBe(before);
  });
});
