import { describe, expect, it } from "vitest";
import { neutralMessages } from "../../test/support/arbitrary-conversation.js";
import { call, result, text } from "../../test/support/builders.js";
import { listTrajectories, trajectoriesAvailable } from "../../test/support/trajectories.js";
import type { Part } from "../log/message.js";
import { toOpenAIChat } from "./openai-chat-adapter.js";
import { validateOpenAIChat } from "./openai-chat-rules.js";
import type { RenderedPrompt } from "./rendered-prompt.js";

describe("toOpenAIChat", () => {
  it("maps system, user and assistant text to string content", () => {
    const messages = neutralMessages([
      { role: "system", parts: [text("be brief")] },
      { role: "user", parts: [text("hi "), text("there")] },
      { role: "assistant", parts: [text("hello")] },
    ]);
    expect(toOpenAIChat(messages).messages).toEqual([
      { role: "system", content: "be brief" },
      { role: "user", content: "hi there" },
      { role: "assistant", content: "hello" },
    ]);
  });

  it("accepts a whole RenderedPrompt", () => {
    const prompt = {
      messages: neutralMessages([{ role: "user", parts: [text("q")] }]),
    } as unknown as RenderedPrompt;
    expect(toOpenAIChat(prompt).messages).toEqual([{ role: "user", content: "q" }]);
  });

  it("keeps a tools-only assistant message as content '' and the call byte for byte", () => {
    const args = '{"command":  "ls -la\\n",\t"é": 1.50}';
    const withEmpty = neutralMessages([
      { role: "assistant", parts: [text(""), call("call_1", args)] },
      { role: "tool", parts: [result("call_1", "out\r\n")] },
    ]);
    const withoutText = neutralMessages([
      { role: "assistant", parts: [call("call_1", args)] },
      { role: "tool", parts: [result("call_1", "out\r\n")] },
    ]);
    const expected = [
      {
        role: "assistant",
        content: "",
        tool_calls: [{ id: "call_1", type: "function", function: { name: "bash", arguments: args } }],
      },
      { role: "tool", tool_call_id: "call_1", content: "out\r\n" },
    ];
    expect(toOpenAIChat(withEmpty).messages).toEqual(expected);
    expect(toOpenAIChat(withoutText).messages).toEqual(expected);
  });

  it("turns parallel calls answered in one tool message into one tool message per result, in log order", () => {
    const messages = neutralMessages([
      { role: "user", parts: [text("go")] },
      { role: "assistant", parts: [text("two things"), call("a"), call("b")] },
      { role: "tool", parts: [result("b", "B"), result("a", "A", true)] },
    ]);
    const out = toOpenAIChat(messages).messages;
    expect(out.slice(2)).toEqual([
      { role: "tool", tool_call_id: "b", content: "B" },
      { role: "tool", tool_call_id: "a", content: "A" },
    ]);
    expect(validateOpenAIChat({ messages: out })).toEqual([]);
  });

  it("keeps reused call ids as they are", () => {
    const messages = neutralMessages([
      { role: "assistant", parts: [call("call_1", '{"n":1}')] },
      { role: "tool", parts: [result("call_1", "first")] },
      { role: "assistant", parts: [call("call_1", '{"n":2}')] },
      { role: "tool", parts: [result("call_1", "second")] },
    ]);
    const out = toOpenAIChat(messages).messages;
    expect(out.map((m) => ("tool_call_id" in m ? m.tool_call_id : m.role))).toEqual([
      "assistant",
      "call_1",
      "assistant",
      "call_1",
    ]);
    expect(validateOpenAIChat({ messages: out })).toEqual([]);
  });

  it("omits reasoning, which Chat Completions cannot take back", () => {
    const messages = neutralMessages([
      { role: "assistant", parts: [{ type: "reasoning", text: "hmm", signature: "sig" }, text("answer")] },
    ]);
    expect(toOpenAIChat(messages).messages).toEqual([{ role: "assistant", content: "answer" }]);
  });

  it("sends images as image_url parts and other media as reference lines", () => {
    const messages = neutralMessages([
      {
        role: "user",
        parts: [
          text("look"),
          { type: "media", mediaType: "image/png", uri: "https://x.test/a.png" },
          { type: "media", mediaType: "application/pdf", uri: "s3://b/r.pdf", alt: "report" },
        ],
      },
      {
        role: "assistant",
        parts: [text("seen"), { type: "media", mediaType: "image/png", uri: "https://x.test/b.png" }],
      },
    ]);
    expect(toOpenAIChat(messages).messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "look" },
          { type: "image_url", image_url: { url: "https://x.test/a.png" } },
          { type: "text", text: "[media application/pdf: s3://b/r.pdf] (report)" },
        ],
      },
      { role: "assistant", content: "seen\n[media image/png: https://x.test/b.png]" },
    ]);
  });

  it("moves a result that the log holds after a user message right behind its call", () => {
    const messages = neutralMessages([
      { role: "assistant", parts: [call("c1")] },
      { role: "user", parts: [text("still there?")] },
      { role: "tool", parts: [result("c1", "done")] },
    ]);
    const out = toOpenAIChat(messages).messages;
    expect(out.map((m) => m.role)).toEqual(["assistant", "tool", "user"]);
    expect(validateOpenAIChat({ messages: out })).toEqual([]);
  });

  it("sends text that shares a message with results as a user message after them", () => {
    const messages = neutralMessages([
      { role: "assistant", parts: [call("c1")] },
      { role: "user", parts: [result("c1", "42"), text("and now?")] },
    ]);
    expect(toOpenAIChat(messages).messages.slice(1)).toEqual([
      { role: "tool", tool_call_id: "c1", content: "42" },
      { role: "user", content: "and now?" },
    ]);
  });

  it("keeps a trailing unanswered call as logged (the validator reports it)", () => {
    const messages = neutralMessages([{ role: "assistant", parts: [call("finish")] }]);
    const out = toOpenAIChat(messages).messages;
    expect(out).toHaveLength(1);
    expect(validateOpenAIChat({ messages: out })).toHaveLength(1);
  });
});

interface SourceLine {
  readonly role: "system" | "user" | "assistant" | "tool";
  readonly content: string;
  readonly tool_calls?: ReadonlyArray<{
    readonly id: string;
    readonly name: string;
    readonly arguments: string;
  }>;
  readonly tool_call_id?: string;
  readonly name?: string;
  readonly reasoning?: string;
}

/** Neutral parts of a transcript line, written independently of the log importer. */
function partsOfLine(line: SourceLine): Part[] {
  if (line.role === "tool") return [result(line.tool_call_id ?? "", line.content)];
  const calls = (line.tool_calls ?? []).map((c) => call(c.id, c.arguments, c.name));
  const reasoning: Part[] = line.reasoning === undefined ? [] : [{ type: "reasoning", text: line.reasoning }];
  const body = line.content === "" && calls.length > 0 ? [] : [text(line.content)];
  return [...reasoning, ...body, ...calls];
}

/** What the OpenAI chat API must receive for a transcript line: the line itself, minus `name` on tool lines. */
function expectedOf(line: SourceLine): unknown {
  if (line.role === "tool") return { role: "tool", tool_call_id: line.tool_call_id, content: line.content };
  if (line.tool_calls === undefined || line.tool_calls.length === 0)
    return { role: line.role, content: line.content };
  return {
    role: line.role,
    content: line.content,
    tool_calls: line.tool_calls.map((c) => ({
      id: c.id,
      type: "function",
      function: { name: c.name, arguments: c.arguments },
    })),
  };
}

describe.skipIf(!trajectoriesAvailable)("toOpenAIChat on the real trajectories", () => {
  for (const file of listTrajectories()) {
    it(`reproduces ${file.name} message for message`, () => {
      const lines = file.text
        .split(/\r\n|\n|\r/)
        .filter((l) => l.trim() !== "")
        .map((l) => JSON.parse(l) as SourceLine);
      const messages = neutralMessages(lines.map((line) => ({ role: line.role, parts: partsOfLine(line) })));
      expect(toOpenAIChat(messages).messages).toEqual(lines.map(expectedOf));
    });
  }
});
