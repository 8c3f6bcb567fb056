/**
 * The harness's side of the round trip between the log and Chat Completions: a reply goes into the log as an
 * assistant message (text + tool-call parts), its calls are run into tool messages, and a rendered request can
 * be checked for the results the model is waiting on.
 */
import type { ChatCompletionMessage, ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { fromOpenAIChatCompletion, type MessageInput, toolResultMessage } from "../src/index.js";
import { type FakeToolOutput, runFakeTool } from "./fake-tools.js";

/** The log's shape of a model reply: its text (when there is any), then its tool calls in order. */
export function assistantInput(message: ChatCompletionMessage): MessageInput {
  return fromOpenAIChatCompletion(message);
}

/** Runs one tool call: the fake tools by default, or whatever else the harness answers (such as `recall`). */
export type ToolRunner = (name: string, args: string, callId: string) => Promise<FakeToolOutput>;

const fakeTools: ToolRunner = async (name, args, callId) => runFakeTool(name, args, callId);

/** Runs a reply's tool calls in order: one tool message per call, tagged with the tool's name. */
export async function toolMessages(
  message: ChatCompletionMessage,
  run: ToolRunner = fakeTools,
): Promise<MessageInput[]> {
  const out: MessageInput[] = [];
  for (const call of message.tool_calls ?? []) {
    // Custom (free-form) tools are never offered by the harness, so only function calls can come back.
    if (call.type !== "function") continue;
    const result = await run(call.function.name, call.function.arguments, call.id);
    out.push(
      toolResultMessage(call.id, result.content, { isError: result.isError, toolName: call.function.name }),
    );
  }
  return out;
}

/** A user message of plain text. */
export function userMessage(text: string): MessageInput {
  return { role: "user", parts: [{ type: "text", text }] };
}

/** The results of the given tool messages, by call id. */
export function resultsById(messages: ReadonlyArray<MessageInput>): ReadonlyMap<string, string> {
  const out = new Map<string, string>();
  for (const m of messages) {
    for (const p of m.parts) if (p.type === "tool_result") out.set(p.callId, p.content);
  }
  return out;
}

/** Whether a request carries every one of `results` byte for byte (neither dropped nor stubbed). */
export function carriesResults(
  messages: ReadonlyArray<ChatCompletionMessageParam>,
  results: ReadonlyMap<string, string>,
): boolean {
  let found = 0;
  for (const m of messages) {
    if (m.role === "tool" && results.get(m.tool_call_id) === m.content) found++;
  }
  return found === results.size;
}
