import { describe, expect, it } from "vitest";
import type { Part } from "../log/message.js";
import { createBpeTokenizer } from "./bpe-tokenizer.js";
import { createMessageCounter, OVERHEAD_PROFILES } from "./message-counter.js";
import type { CountableMessage, Tokenizer } from "./tokenizer.js";

/** A tokenizer that counts words and records how often it was called. */
function spyTokenizer(): Tokenizer & { calls: number } {
  const t = {
    id: "spy:words",
    calls: 0,
    count(text: string): number {
      t.calls++;
      return text.split(/\s+/).filter(Boolean).length;
    },
  };
  return t;
}

const user = (text: string): CountableMessage => ({ role: "user", parts: [{ type: "text", text }] });

describe("createMessageCounter", () => {
  it("names itself after tokenizer and profile and exposes the request overhead", () => {
    const t = spyTokenizer();
    expect(createMessageCounter(t, "openai").id).toBe("spy:words+openai");
    expect(createMessageCounter(t, "openai").requestOverhead).toBe(3);
    expect(createMessageCounter(t, "neutral").requestOverhead).toBe(0);
    expect(createMessageCounter(t, OVERHEAD_PROFILES.anthropic).id).toBe("spy:words+anthropic");
  });

  it("follows OpenAI's recipe: 3 per message + role + content (+ name + 1)", () => {
    const counter = createMessageCounter(createBpeTokenizer("o200k_base"), "openai");
    expect(counter.countMessage(user("hello world"))).toBe(3 + 1 + 2);
    const named = { ...user("hello world"), name: "alice" } as CountableMessage;
    expect(counter.countMessage(named)).toBe(3 + 1 + 2 + 1 + 1);
  });

  it("counts every part kind with its framing", () => {
    const t = spyTokenizer();
    const p = OVERHEAD_PROFILES.anthropic;
    const counter = createMessageCounter(t, p);
    const parts: Part[] = [
      { type: "text", text: "one two" },
      { type: "tool_call", callId: "c1", name: "search", args: '{"q": "x y"}' },
      { type: "reasoning", text: "think hard", signature: "c2lnbmF0dXJlIGJ5dGVz ".repeat(50) },
      { type: "media", mediaType: "image/png", uri: "s3://a.png" },
    ];
    expect(counter.countMessage({ role: "assistant", parts })).toBe(
      p.perMessage + 2 + (1 + 3 + p.perToolCall) + (2 + p.perReasoning) + p.perMedia,
    );
    const result: Part = { type: "tool_result", callId: "c1", content: "three little words" };
    expect(counter.countMessage({ role: "tool", parts: [result] })).toBe(p.perMessage + 3 + p.perToolResult);
  });

  it("never counts a reasoning signature or redacted payload", () => {
    const counter = createMessageCounter(spyTokenizer(), "neutral");
    const signedOnly = counter.countMessage({
      role: "assistant",
      parts: [{ type: "reasoning", text: "a b", signature: "x" }],
    });
    const signed = counter.countMessage({
      role: "assistant",
      parts: [{ type: "reasoning", text: "a b", signature: "s i g", redacted: "r e d a c t e d" }],
    });
    expect(signed).toBe(signedOnly);
    expect(signed).toBeGreaterThan(0);
  });

  it("counts nothing for reasoning no adapter sends, nor for any reasoning of a format that sends none", () => {
    // 4,000 characters of unsigned reasoning were once 1,008 of a request's 1,021 counted tokens, 0 sent.
    const unsent = { type: "reasoning" as const, text: "thinking ".repeat(450) };
    const signed = { ...unsent, signature: "sig" };
    const answer = { type: "text" as const, text: "done" };
    for (const profile of ["neutral", "anthropic", "openai"] as const) {
      const counter = createMessageCounter(spyTokenizer(), profile);
      const plain = counter.countMessage({ role: "assistant", parts: [answer] });
      expect(counter.countMessage({ role: "assistant", parts: [unsent, answer] }), profile).toBe(plain);
    }
    const anthropic = createMessageCounter(spyTokenizer(), "anthropic");
    expect(anthropic.countMessage({ role: "assistant", parts: [signed, answer] })).toBeGreaterThan(400);
    // Chat Completions never sends reasoning back, signed or not.
    const chat = createMessageCounter(spyTokenizer(), "openai");
    expect(chat.countMessage({ role: "assistant", parts: [signed, answer] })).toBe(
      chat.countMessage({ role: "assistant", parts: [answer] }),
    );
  });

  it("tokenizes a message once per content hash", () => {
    const t = spyTokenizer();
    const counter = createMessageCounter(t, "openai");
    const first = counter.countMessage(user("a b c"), "h1");
    const calls = t.calls;
    expect(counter.countMessage(user("a b c"), "h1")).toBe(first);
    expect(t.calls).toBe(calls);
  });

  it("does not cache without a hash, or with the cache disabled", () => {
    const t = spyTokenizer();
    const counter = createMessageCounter(t, "neutral");
    counter.countMessage(user("a"));
    counter.countMessage(user("a"));
    expect(t.calls).toBe(2);
    const uncached = createMessageCounter(t, "neutral", { cacheSize: 0 });
    uncached.countMessage(user("a"), "h");
    uncached.countMessage(user("a"), "h");
    expect(t.calls).toBe(4);
  });

  it("counts an empty message as its framing only", () => {
    const counter = createMessageCounter(spyTokenizer(), "anthropic");
    expect(counter.countMessage({ role: "user", parts: [] })).toBe(OVERHEAD_PROFILES.anthropic.perMessage);
  });
});
