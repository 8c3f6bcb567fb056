/**
 * Provider replies into the log and back out: what the converters store is what the adapters send on the next
 * request — tool calls with their arguments, reasoning with its signature or encrypted payload byte for byte.
 * The replies are typed with the official SDKs' own types, so a change of shape there fails to compile here.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import { describe, expect, it } from "vitest";
import {
  emptyPlan,
  fromAnthropicMessage,
  fromOpenAIChatCompletion,
  fromOpenAIResponse,
  renderPrompt,
  ThreadLog,
  toAnthropicMessages,
  toOpenAIChat,
  toOpenAIResponses,
  toolResultMessage,
  ValidationError,
} from "../src/index.js";
import { simpleCounter } from "./support/simple-counter.js";

const counter = simpleCounter();
const user = {
  role: "user" as const,
  parts: [{ type: "text" as const, text: "What is the weather in Paris?" }],
};

function render(...messages: Parameters<ThreadLog["append"]>[0]) {
  const log = ThreadLog.from("t", [user, ...messages]);
  return renderPrompt(log, emptyPlan("t"), { counter });
}

describe("fromOpenAIChatCompletion", () => {
  const completion: OpenAI.ChatCompletion = {
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 0,
    model: "gpt-4o",
    choices: [
      {
        index: 0,
        finish_reason: "tool_calls",
        logprobs: null,
        message: {
          role: "assistant",
          content: "Let me look that up.",
          refusal: null,
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } },
            { id: "call_2", type: "function", function: { name: "time", arguments: '{ "tz" : "CET" }' } },
          ],
        },
      },
    ],
  };

  it("keeps the text and the calls, arguments verbatim, and the next request sends them back", () => {
    const reply = fromOpenAIChatCompletion(completion);
    expect(reply).toEqual({
      role: "assistant",
      parts: [
        { type: "text", text: "Let me look that up." },
        { type: "tool_call", callId: "call_1", name: "weather", args: '{"city":"Paris"}' },
        { type: "tool_call", callId: "call_2", name: "time", args: '{ "tz" : "CET" }' },
      ],
    });
    const request = toOpenAIChat(
      render(
        reply,
        toolResultMessage("call_1", { temp: 18 }, { toolName: "weather" }),
        toolResultMessage("call_2", "14:00"),
      ),
    );
    const sent = request.messages[1] as OpenAI.ChatCompletionAssistantMessageParam;
    expect(sent.tool_calls).toEqual(completion.choices[0]!.message.tool_calls);
    expect(request.messages[2]).toEqual({ role: "tool", tool_call_id: "call_1", content: '{"temp":18}' });
  });

  it("takes a message as well as a completion, and marks a refusal", () => {
    const refused = fromOpenAIChatCompletion({ content: null, refusal: "I can't help with that." });
    expect(refused).toEqual({
      role: "assistant",
      parts: [{ type: "text", text: "I can't help with that." }],
      meta: { refusal: true },
    });
    expect(() => fromOpenAIChatCompletion({ choices: [] })).toThrow(ValidationError);
  });
});

describe("fromOpenAIResponse", () => {
  const output: OpenAI.Responses.ResponseOutputItem[] = [
    {
      type: "reasoning",
      id: "rs_123",
      summary: [{ type: "summary_text", text: "Need the weather tool." }],
      encrypted_content: "gAAAAB-opaque==",
    },
    {
      type: "message",
      id: "msg_1",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: "Checking.", annotations: [] }],
    },
    { type: "function_call", id: "fc_1", call_id: "call_9", name: "weather", arguments: '{"city":"Paris"}' },
  ];

  it("keeps reasoning as the encrypted item the Responses adapter sends back, byte for byte", () => {
    const reply = fromOpenAIResponse({ output });
    expect(reply.parts).toEqual([
      { type: "reasoning", text: "Need the weather tool.", signature: "rs_123", redacted: "gAAAAB-opaque==" },
      { type: "text", text: "Checking." },
      { type: "tool_call", callId: "call_9", name: "weather", args: '{"city":"Paris"}' },
    ]);
    const request = toOpenAIResponses(render(reply, toolResultMessage("call_9", "18 °C")));
    const input = request.input as unknown as ReadonlyArray<Record<string, unknown>>;
    expect(input.find((i) => i.type === "reasoning")).toEqual({
      type: "reasoning",
      id: "rs_123",
      summary: [{ type: "summary_text", text: "Need the weather tool." }],
      encrypted_content: "gAAAAB-opaque==",
    });
    expect(input.find((i) => i.type === "function_call")).toMatchObject({
      call_id: "call_9",
      arguments: '{"city":"Paris"}',
    });
  });

  it("marks a refusal and refuses what is not a response", () => {
    const items: OpenAI.Responses.ResponseOutputItem[] = [
      {
        type: "message",
        id: "m",
        role: "assistant",
        status: "completed",
        content: [{ type: "refusal", refusal: "No." }],
      },
    ];
    const refused = fromOpenAIResponse(items);
    expect(refused).toEqual({
      role: "assistant",
      parts: [{ type: "text", text: "No." }],
      meta: { refusal: true },
    });
    expect(() => fromOpenAIResponse({} as never)).toThrow(/output/);
  });
});

describe("fromAnthropicMessage", () => {
  const message: Anthropic.Message = {
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: "claude-sonnet-4-5",
    stop_reason: "tool_use",
    stop_sequence: null,
    usage: {
      input_tokens: 10,
      output_tokens: 5,
      cache_creation_input_tokens: null,
      cache_read_input_tokens: null,
      cache_creation: null,
      server_tool_use: null,
      service_tier: null,
    },
    container: null,
    content: [
      { type: "thinking", thinking: "The user wants weather.", signature: "EqQBCkYIBxgCKkA+sig/==" },
      { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4a" },
      { type: "text", text: "Let me check.", citations: null },
      { type: "tool_use", id: "toolu_01", name: "weather", input: { city: "Paris" } },
    ],
  } as Anthropic.Message;

  it("keeps thinking and its signature byte for byte, redacted thinking as its data, and tool use as JSON", () => {
    const reply = fromAnthropicMessage(message);
    expect(reply.parts).toEqual([
      { type: "reasoning", text: "The user wants weather.", signature: "EqQBCkYIBxgCKkA+sig/==" },
      { type: "reasoning", text: "", redacted: "EmwKAhgBEgy3va3pzix/LafPsn4a" },
      { type: "text", text: "Let me check." },
      { type: "tool_call", callId: "toolu_01", name: "weather", args: '{"city":"Paris"}' },
    ]);
    const request = toAnthropicMessages(
      render(reply, toolResultMessage("toolu_01", "18 °C", { isError: false })),
    );
    expect(request.messages[1]!.content).toEqual([
      { type: "thinking", thinking: "The user wants weather.", signature: "EqQBCkYIBxgCKkA+sig/==" },
      { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix/LafPsn4a" },
      { type: "text", text: "Let me check." },
      { type: "tool_use", id: "toolu_01", name: "weather", input: { city: "Paris" } },
    ]);
  });

  it("marks a refusal, and the tool result helper names its tool", () => {
    const refused = fromAnthropicMessage({
      content: [{ type: "text", text: "I can't." }],
      stop_reason: "refusal",
    });
    expect(refused.meta).toEqual({ refusal: true });
    expect(toolResultMessage("c1", "boom", { isError: true, toolName: "bash" })).toEqual({
      role: "tool",
      parts: [{ type: "tool_result", callId: "c1", content: "boom", isError: true }],
      meta: { toolName: "bash" },
    });
    expect(() => fromAnthropicMessage({ content: "text" } as never)).toThrow(ValidationError);
  });
});
