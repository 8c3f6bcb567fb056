import { describe, expect, it } from "vitest";
import { neutralMessages } from "../../test/support/arbitrary-conversation.js";
import { call, text } from "../../test/support/builders.js";
import type { Part } from "../log/message.js";
import { toOpenAIResponses } from "./openai-responses-adapter.js";
import { validateOpenAIResponses } from "./openai-responses-rules.js";

const result = (callId: string, content: string): Part => ({ type: "tool_result", callId, content });

describe("toOpenAIResponses", () => {
  it("puts the leading system messages in instructions and keeps a later one in place", () => {
    const out = toOpenAIResponses(
      neutralMessages([
        { role: "system", parts: [text("rule one")] },
        { role: "system", parts: [text("rule two")] },
        { role: "user", parts: [text("hi")] },
        { role: "system", parts: [text("note")] },
      ]),
    );
    expect(out.instructions).toBe("rule one\n\nrule two");
    expect(out.input).toEqual([
      { type: "message", role: "user", content: "hi" },
      { type: "message", role: "system", content: "note" },
    ]);
  });

  it("has no instructions field without a leading system message", () => {
    const out = toOpenAIResponses(neutralMessages([{ role: "user", parts: [text("hi")] }]));
    expect(out).not.toHaveProperty("instructions");
  });

  it("turns calls into function_call items and results into function_call_output items", () => {
    const args = '{"q": "a b",  "n":1}';
    const out = toOpenAIResponses(
      neutralMessages([
        { role: "user", parts: [text("go")] },
        { role: "assistant", parts: [text("checking"), call("c1", args, "search"), call("c2")] },
        { role: "tool", parts: [result("c2", "two"), result("c1", "one")] },
      ]),
    );
    expect(out.input.slice(1)).toEqual([
      { type: "message", role: "assistant", content: "checking" },
      { type: "function_call", call_id: "c1", name: "search", arguments: args },
      { type: "function_call", call_id: "c2", name: "bash", arguments: "{}" },
      { type: "function_call_output", call_id: "c2", output: "two" },
      { type: "function_call_output", call_id: "c1", output: "one" },
    ]);
    expect(validateOpenAIResponses(out)).toEqual([]);
  });

  it("leaves out the assistant message of a tools-only turn", () => {
    const out = toOpenAIResponses(
      neutralMessages([
        { role: "assistant", parts: [text(""), call("c1")] },
        { role: "tool", parts: [result("c1", "x")] },
      ]),
    );
    expect(out.input.map((i) => ("type" in i ? i.type : "?"))).toEqual([
      "function_call",
      "function_call_output",
    ]);
  });

  it("pairs reused call ids in order", () => {
    const out = toOpenAIResponses(
      neutralMessages([
        { role: "assistant", parts: [call("call_1")] },
        { role: "tool", parts: [result("call_1", "first")] },
        { role: "assistant", parts: [call("call_1")] },
        { role: "tool", parts: [result("call_1", "second")] },
      ]),
    );
    expect(validateOpenAIResponses(out)).toEqual([]);
  });

  it("sends encrypted reasoning (redacted + item id) before its output and omits other reasoning", () => {
    const out = toOpenAIResponses(
      neutralMessages([
        {
          role: "assistant",
          parts: [
            { type: "reasoning", text: "summary", redacted: "gAAAA==", signature: "rs_1" },
            { type: "reasoning", text: "plain" },
            { type: "reasoning", text: "anthropic", signature: "EqQB" },
            call("c1"),
          ],
        },
        { role: "tool", parts: [result("c1", "x")] },
      ]),
    );
    expect(out.input[0]).toEqual({
      type: "reasoning",
      id: "rs_1",
      summary: [{ type: "summary_text", text: "summary" }],
      encrypted_content: "gAAAA==",
    });
    expect(out.input[1]).toMatchObject({ type: "function_call", call_id: "c1" });
    expect(out.input).toHaveLength(3);
    expect(validateOpenAIResponses(out)).toEqual([]);
  });

  it("keeps an (empty) assistant message after reasoning that has nothing else to follow it", () => {
    const out = toOpenAIResponses(
      neutralMessages([
        { role: "user", parts: [text("q")] },
        { role: "assistant", parts: [{ type: "reasoning", text: "", redacted: "enc", signature: "rs_2" }] },
      ]),
    );
    expect(out.input.slice(1)).toEqual([
      { type: "reasoning", id: "rs_2", summary: [], encrypted_content: "enc" },
      { type: "message", role: "assistant", content: "" },
    ]);
    expect(validateOpenAIResponses(out)).toEqual([]);
  });

  it("sends images as input_image and other media as text", () => {
    const out = toOpenAIResponses(
      neutralMessages([
        {
          role: "user",
          parts: [
            text("see"),
            { type: "media", mediaType: "image/webp", uri: "https://x.test/i.webp" },
            { type: "media", mediaType: "audio/wav", uri: "file:///tmp/a.wav" },
          ],
        },
      ]),
    );
    expect(out.input).toEqual([
      {
        type: "message",
        role: "user",
        content: [
          { type: "input_text", text: "see" },
          { type: "input_image", image_url: "https://x.test/i.webp", detail: "auto" },
          { type: "input_text", text: "[media audio/wav: file:///tmp/a.wav]" },
        ],
      },
    ]);
  });

  it("moves results held after a user message right behind their call", () => {
    const out = toOpenAIResponses(
      neutralMessages([
        { role: "assistant", parts: [call("c1")] },
        { role: "user", parts: [text("hello?")] },
        { role: "tool", parts: [result("c1", "ok")] },
      ]),
    );
    expect(out.input.map((i) => ("type" in i ? i.type : "?"))).toEqual([
      "function_call",
      "function_call_output",
      "message",
    ]);
  });
});
