import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import { describe, expect, it } from "vitest";
import { ThreadLog } from "../log/thread-log.js";
import { validateAnthropicMessages } from "./anthropic-messages-rules.js";

const thinking = { type: "enabled", budget_tokens: 1024 } as const;
const use = { type: "tool_use", id: "c1", name: "bash", input: {} } as const;
const think = { type: "thinking", thinking: "list files first", signature: "sig" } as const;
const answer: MessageParam = {
  role: "user",
  content: [{ type: "tool_result", tool_use_id: "c1", content: "ok" }],
};

describe("Anthropic thinking rule (extended thinking with tools)", () => {
  it("refuses a tool-use cycle whose signed thinking was removed, when the request turns thinking on", () => {
    const cut: MessageParam[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: [use] },
      answer,
    ];
    expect(validateAnthropicMessages({ messages: cut, thinking })).toEqual([
      expect.stringContaining("messages[1]: extended thinking is enabled but the assistant turn"),
    ]);
    const whole: MessageParam[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: [think, use] },
      answer,
    ];
    expect(validateAnthropicMessages({ messages: whole, thinking })).toEqual([]);
    // Redacted thinking counts as thinking.
    const redacted = { type: "redacted_thinking", data: "xx" } as const;
    const hidden: MessageParam[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: [redacted, use] },
      answer,
    ];
    expect(validateAnthropicMessages({ messages: hidden, thinking })).toEqual([]);
  });

  it("checks only the cycle in progress, and nothing when thinking is not turned on", () => {
    // An earlier turn's thinking may be left out: the API ignores it.
    const earlier: MessageParam[] = [
      { role: "user", content: "first" },
      { role: "assistant", content: [use] },
      answer,
      { role: "assistant", content: "done" },
      { role: "user", content: "second" },
      { role: "assistant", content: [think, { ...use, id: "c2" }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "c2", content: "ok" }] },
    ];
    expect(validateAnthropicMessages({ messages: earlier, thinking })).toEqual([]);
    const cut: MessageParam[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: [use] },
      answer,
    ];
    expect(validateAnthropicMessages({ messages: cut })).toEqual([]);
    expect(validateAnthropicMessages({ messages: cut, thinking: { type: "disabled" } })).toEqual([]);
  });
});

describe("groups of a reasoning-only message", () => {
  it("puts a reasoning-only message in the group of the calls right after it, incrementally and from scratch", () => {
    const log = ThreadLog.from("t", [
      { id: "u", role: "user", parts: [{ type: "text", text: "go" }] },
      { id: "r", role: "assistant", parts: [{ type: "reasoning", text: "ls first", signature: "s" }] },
      { id: "a", role: "assistant", parts: [{ type: "tool_call", callId: "c1", name: "bash", args: "{}" }] },
      { id: "t", role: "tool", parts: [{ type: "tool_result", callId: "c1", content: "x" }] },
      { id: "r2", role: "assistant", parts: [{ type: "reasoning", text: "done" }] },
      { id: "z", role: "assistant", parts: [{ type: "text", text: "all done" }] },
    ]);
    expect(log.groups.map((g) => [g.kind, g.messageIds])).toEqual([
      ["user", ["u"]],
      ["tool_call", ["r", "a", "t"]],
      ["assistant_text", ["r2"]],
      ["assistant_text", ["z"]],
    ]);
    // Before the calls arrive, the reasoning is a group of its own; the prefix view keeps that.
    const prefix = ThreadLog.from(
      "t",
      log.messages.slice(0, 2).map(({ id, role, parts }) => ({ id, role, parts })),
    );
    expect(prefix.groups.map((g) => g.kind)).toEqual(["user", "assistant_text"]);
    const grown = prefix.append([
      { id: "a", role: "assistant", parts: [{ type: "tool_call", callId: "c1", name: "bash", args: "{}" }] },
    ]);
    expect(grown.groups.map((g) => [g.kind, g.messageIds, g.pending])).toEqual([
      ["user", ["u"], false],
      ["tool_call", ["r", "a"], true],
    ]);
    expect(prefix.groups.map((g) => g.kind)).toEqual(["user", "assistant_text"]);
  });
});
