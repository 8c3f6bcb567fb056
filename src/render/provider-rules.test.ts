import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import fc from "fast-check";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { ResponseInputItem } from "openai/resources/responses/responses";
import { describe, expect, it } from "vitest";
import { arbitraryConversation, neutralMessages } from "../../test/support/arbitrary-conversation.js";
import {
  listTrajectories,
  readSourcesTable,
  trajectoriesAvailable,
} from "../../test/support/trajectories.js";
import { RenderValidationError } from "../errors/ledger-error.js";
import type { Part, Role } from "../log/message.js";
import {
  assertValid,
  type ProviderFormat,
  toProviderRequest,
  validateAnthropicMessages,
  validateOpenAIChat,
  validateOpenAIResponses,
  validateProviderRequest,
} from "./provider-rules.js";

const FORMATS: ReadonlyArray<ProviderFormat> = ["openai", "responses", "anthropic"];

const toolCall = (id: string) => ({
  id,
  type: "function" as const,
  function: { name: "bash", arguments: "{}" },
});
const chat = (...messages: ChatCompletionMessageParam[]) => ({ messages });

describe("validateOpenAIChat", () => {
  it("accepts calls answered right away, in any order, with ids reused after being answered", () => {
    const body = chat(
      { role: "user", content: "go" },
      { role: "assistant", content: "", tool_calls: [toolCall("a"), toolCall("b")] },
      { role: "tool", tool_call_id: "b", content: "B" },
      { role: "tool", tool_call_id: "a", content: "A" },
      { role: "assistant", content: null, tool_calls: [toolCall("a")] },
      { role: "tool", tool_call_id: "a", content: "A again" },
      { role: "user", content: "ok" },
    );
    expect(validateOpenAIChat(body)).toEqual([]);
  });

  it("reports an orphaned tool result", () => {
    const problems = validateOpenAIChat(
      chat({ role: "user", content: "x" }, { role: "tool", tool_call_id: "z", content: "?" }),
    );
    expect(problems).toEqual([
      expect.stringContaining('messages[1]: tool message for call "z" does not follow'),
    ]);
  });

  it("reports a call left unanswered before the next message, and the late result", () => {
    const problems = validateOpenAIChat(
      chat(
        { role: "assistant", content: "", tool_calls: [toolCall("a")] },
        { role: "user", content: "meanwhile" },
        { role: "tool", tool_call_id: "a", content: "late" },
      ),
    );
    expect(problems).toHaveLength(2);
    expect(problems[0]).toContain('messages[0]: tool call(s) "a" not answered before messages[1] (user)');
    expect(problems[1]).toContain("messages[2]");
  });

  it("reports a trailing unanswered call", () => {
    const problems = validateOpenAIChat(
      chat({ role: "assistant", content: "", tool_calls: [toolCall("finish")] }),
    );
    expect(problems).toEqual([expect.stringContaining("request ends with an unanswered call")]);
  });

  it("reports a result for an id that is not open any more (answered twice)", () => {
    const problems = validateOpenAIChat(
      chat(
        { role: "assistant", content: "", tool_calls: [toolCall("a")] },
        { role: "tool", tool_call_id: "a", content: "1" },
        { role: "tool", tool_call_id: "a", content: "2" },
      ),
    );
    expect(problems).toEqual([expect.stringContaining('messages[2]: tool message answers "a"')]);
  });

  it("reports bad roles, bad content and empty assistant messages", () => {
    const problems = validateOpenAIChat({
      messages: [
        { role: "robot", content: "x" } as unknown as ChatCompletionMessageParam,
        {
          role: "system",
          content: [{ type: "image_url", image_url: { url: "u" } }],
        } as unknown as ChatCompletionMessageParam,
        { role: "assistant", content: null },
        { role: "assistant", content: "x", tool_calls: [] },
      ],
    });
    expect(problems).toHaveLength(4);
    expect(validateOpenAIChat(chat())).toEqual(["messages is empty: send at least one message"]);
  });
});

describe("validateOpenAIResponses", () => {
  const fnCall = (id: string): ResponseInputItem => ({
    type: "function_call",
    call_id: id,
    name: "bash",
    arguments: "{}",
  });
  const output = (id: string): ResponseInputItem => ({
    type: "function_call_output",
    call_id: id,
    output: "x",
  });

  it("accepts answered calls, reused ids and a user message between call and output", () => {
    const input = [
      fnCall("a"),
      output("a"),
      fnCall("a"),
      { role: "user", content: "hi" } as ResponseInputItem,
      output("a"),
    ];
    expect(validateOpenAIResponses({ input })).toEqual([]);
  });

  it("reports orphaned outputs and unanswered calls", () => {
    expect(validateOpenAIResponses({ input: [output("a")] })).toEqual([
      expect.stringContaining('function_call_output for "a" has no earlier unanswered function_call'),
    ]);
    expect(validateOpenAIResponses({ input: [fnCall("a"), output("a"), output("a")] })).toHaveLength(1);
    expect(validateOpenAIResponses({ input: [fnCall("b")] })).toEqual([
      expect.stringContaining('function_call "b" has no function_call_output'),
    ]);
  });

  it("reports reasoning not followed by its output and wrong content types", () => {
    const reasoning: ResponseInputItem = {
      type: "reasoning",
      id: "rs_1",
      summary: [],
      encrypted_content: "e",
    };
    const problems = validateOpenAIResponses({
      input: [
        reasoning,
        { role: "user", content: "x" },
        { role: "assistant", content: [{ type: "input_text", text: "y" }] } as unknown as ResponseInputItem,
      ],
    });
    expect(problems).toHaveLength(2);
  });
});

describe("validateAnthropicMessages", () => {
  const use = (id: string) => ({ type: "tool_use" as const, id, name: "bash", input: {} });
  const res = (id: string) => ({ type: "tool_result" as const, tool_use_id: id, content: "ok" });
  const txt = (text: string) => ({ type: "text" as const, text });
  const body = (...messages: MessageParam[]) => ({ messages });

  it("accepts a well-formed exchange", () => {
    const ok = body(
      { role: "user", content: "q" },
      { role: "assistant", content: [txt("calling"), use("a"), use("b")] },
      { role: "user", content: [res("b"), res("a"), txt("and")] },
      { role: "assistant", content: "done" },
    );
    expect(validateAnthropicMessages({ ...ok, system: [txt("policy")] })).toEqual([]);
  });

  it("reports a first message that is not from the user and non-alternating roles", () => {
    const problems = validateAnthropicMessages(
      body(
        { role: "assistant", content: "a" },
        { role: "user", content: "b" },
        { role: "user", content: "c" },
      ),
    );
    expect(problems).toEqual([
      expect.stringContaining("messages[0]: the first message must be a user message"),
      expect.stringContaining("messages[2]: same role (user) as messages[1]"),
    ]);
  });

  it("reports an unanswered tool_use, including a trailing one", () => {
    expect(
      validateAnthropicMessages(
        body(
          { role: "user", content: "q" },
          { role: "assistant", content: [use("a"), use("b")] },
          { role: "user", content: [res("a")] },
        ),
      ),
    ).toEqual([
      expect.stringContaining('messages[1]: tool_use "b" not answered by a tool_result in messages[2]'),
    ]);
    expect(
      validateAnthropicMessages(
        body({ role: "user", content: "q" }, { role: "assistant", content: [use("a")] }),
      ),
    ).toEqual([expect.stringContaining("never answered")]);
  });

  it("reports tool_result after other content and an orphaned tool_result", () => {
    const problems = validateAnthropicMessages(
      body(
        { role: "user", content: "q" },
        { role: "assistant", content: [use("a")] },
        { role: "user", content: [txt("first"), res("a")] },
        { role: "assistant", content: "x" },
        { role: "user", content: [res("a")] },
      ),
    );
    expect(problems).toEqual([
      expect.stringContaining("messages[2].content[1]: tool_result after other content"),
      expect.stringContaining('messages[4].content[0]: tool_result for "a" has no tool_use'),
    ]);
  });

  it("reports blank content, thinking outside the assistant, duplicate or malformed ids and too many cache marks", () => {
    const cached = { type: "text" as const, text: "c", cache_control: { type: "ephemeral" as const } };
    const problems = validateAnthropicMessages(
      body(
        {
          role: "user",
          content: [txt(" "), { type: "thinking", thinking: "t", signature: "s" }, cached, cached, cached],
        },
        { role: "assistant", content: [use("a"), use("a"), use("bad.id")] },
        { role: "user", content: [res("a"), res("bad.id"), cached, cached] },
        { role: "assistant", content: [] },
      ),
    );
    expect(problems.join("\n")).toMatch(/text block is blank/);
    expect(problems.join("\n")).toMatch(/thinking block outside an assistant message/);
    expect(problems.join("\n")).toMatch(/"a" is not unique/);
    expect(problems.join("\n")).toMatch(/"bad.id" must match/);
    expect(problems.join("\n")).toMatch(/messages\[3\]: content is empty/);
    expect(problems.join("\n")).toMatch(/5 blocks carry cache_control/);
  });
});

describe("toProviderRequest and assertValid", () => {
  const messages = neutralMessages([
    { role: "system", parts: [{ type: "text", text: "sys" }] },
    { role: "user", parts: [{ type: "text", text: "hi" }] },
  ]);

  it("dispatches to each adapter", () => {
    expect(toProviderRequest("openai", messages).messages).toHaveLength(2);
    expect(toProviderRequest("responses", messages).instructions).toBe("sys");
    expect(toProviderRequest("anthropic", messages, { cacheBreakpoints: [0] }).system).toEqual([
      { type: "text", text: "sys", cache_control: { type: "ephemeral" } },
    ]);
  });

  it("throws a RenderValidationError that lists every problem", () => {
    const bad = { messages: [{ role: "assistant" as const, content: "", tool_calls: [toolCall("x")] }] };
    expect(() => assertValid("openai", bad)).toThrow(RenderValidationError);
    try {
      assertValid("openai", bad);
    } catch (error) {
      expect((error as RenderValidationError).code).toBe("RENDER_INVALID");
      expect((error as RenderValidationError).problems).toHaveLength(1);
      expect((error as Error).message).toContain("OpenAI Chat Completions");
    }
    expect(() => assertValid("anthropic", toProviderRequest("anthropic", messages))).not.toThrow();
  });

  it("gives every adapter's output for a random valid conversation a clean bill from its validator", () => {
    fc.assert(
      fc.property(
        arbitraryConversation(),
        fc.uniqueArray(fc.nat({ max: 30 }), { maxLength: 4 }),
        (conversation, breakpoints) => {
          for (const format of FORMATS) {
            const body = toProviderRequest(format, conversation, { cacheBreakpoints: breakpoints });
            expect(validateProviderRequest(format, body), format).toEqual([]);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe.skipIf(!trajectoriesAvailable)("provider rules on the real trajectories", () => {
  const table = readSourcesTable();
  for (const file of listTrajectories()) {
    it(`${file.name}: every format is valid except for the logged unanswered calls`, () => {
      const drafts = file.text
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => lineToDraft(JSON.parse(l) as Line));
      const unanswered = table.get(file.name)?.unansweredCalls ?? [];
      for (const format of FORMATS) {
        const problems = validateProviderRequest(format, toProviderRequest(format, neutralMessages(drafts)));
        expect(problems, format).toHaveLength(unanswered.length);
        for (const id of unanswered) expect(problems.join("\n"), format).toContain(id);
      }
    });
  }
});

interface Line {
  readonly role: Role;
  readonly content: string;
  readonly tool_calls?: ReadonlyArray<{
    readonly id: string;
    readonly name: string;
    readonly arguments: string;
  }>;
  readonly tool_call_id?: string;
}

function lineToDraft(line: Line): { role: Role; parts: Part[] } {
  if (line.role === "tool") {
    return {
      role: "tool",
      parts: [{ type: "tool_result", callId: line.tool_call_id ?? "", content: line.content }],
    };
  }
  const calls = (line.tool_calls ?? []).map(
    (c): Part => ({ type: "tool_call", callId: c.id, name: c.name, args: c.arguments }),
  );
  return { role: line.role, parts: [{ type: "text", text: line.content }, ...calls] };
}
