/**
 * Adapter from the provider-neutral rendered prompt to an OpenAI Chat Completions request body.
 *
 * Rules, chosen so that an unchanged transcript comes back message for message as it was logged:
 * - text parts are concatenated exactly (like `textOf`); an assistant message's `content` is always that
 *   string, `""` when it only calls tools (the API accepts `""` and that is how the transcripts log it);
 * - tool calls keep their ids, names and argument strings byte for byte;
 * - one `tool` message per tool result, `tool_call_id` = the call id; the neutral `isError` flag and the
 *   tool name have no field in Chat Completions and are not sent (the result text is sent unchanged);
 * - reasoning parts are omitted: Chat Completions has no way to send reasoning back;
 * - media: images become `image_url` parts of a user message; other media, and media in non-user messages,
 *   become a reference line in the text;
 * - results that the log holds away from their call are moved right behind it (see `groupToolResults`);
 *   text that shared a message with tool results follows them as a user message.
 */
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionContentPart,
  ChatCompletionMessageParam,
  ChatCompletionToolMessageParam,
  ChatCompletionUserMessageParam,
} from "openai/resources/chat/completions";
import { deepFreeze } from "../log/deep-freeze.js";
import type { Part, Role, ToolResultPart } from "../log/message.js";
import {
  type AdapterEntry,
  type AdapterSource,
  callsIn,
  flattenText,
  groupToolResults,
  isInlineImage,
  mediaReference,
  messagesOf,
  resultsIn,
  resultsInPlace,
} from "./adapter-input.js";
import type { RenderedMessage } from "./rendered-prompt.js";

/** The part of a Chat Completions request body this adapter produces. */
export interface OpenAIChatRequest {
  messages: ChatCompletionMessageParam[];
}

type ChatBuilder = (parts: ReadonlyArray<Part>) => ChatCompletionMessageParam;

/** Builds the message for each neutral role; a `tool` message's non-result content is sent as user text. */
const builders: Record<Role, ChatBuilder> = {
  system: (parts) => ({ role: "system", content: flattenText(parts) }),
  user: userMessage,
  assistant: assistantMessage,
  tool: userMessage,
};

// Chat messages built for a rendered message, reused across requests (rendered messages are immutable and
// reused between renders). They are frozen so a caller editing one request cannot change another.
const memo = new WeakMap<RenderedMessage, ReadonlyArray<ChatCompletionMessageParam>>();

/** Converts a rendered prompt (or its messages) to the `messages` of an OpenAI Chat Completions request. */
export function toOpenAIChat(source: AdapterSource): OpenAIChatRequest {
  const rendered = messagesOf(source);
  const messages: ChatCompletionMessageParam[] = [];
  if (resultsInPlace(rendered)) {
    // What renderPrompt produces: every message converts on its own, so each one's memoized form is reused
    // without building an entry per message.
    for (let i = 0; i < rendered.length; i++) {
      const built = memoized(rendered[i]!, i);
      for (let j = 0; j < built.length; j++) messages.push(built[j]!);
    }
    return { messages };
  }
  for (const entry of groupToolResults(rendered)) {
    const origin = rendered[entry.sourceIndex];
    if (origin === undefined || origin.parts !== entry.parts) {
      messages.push(...chatMessages(entry));
      continue;
    }
    const built = memoized(origin, entry.sourceIndex);
    for (let i = 0; i < built.length; i++) messages.push(built[i]!);
  }
  return { messages };
}

/** The chat messages of a rendered message that converts on its own (its parts unchanged), built once. */
function memoized(origin: RenderedMessage, index: number): ReadonlyArray<ChatCompletionMessageParam> {
  let built = memo.get(origin);
  if (built === undefined) {
    built = deepFreeze(chatMessages({ sourceIndex: index, role: origin.role, parts: origin.parts }));
    memo.set(origin, built);
  }
  return built;
}

function chatMessages(entry: AdapterEntry): ChatCompletionMessageParam[] {
  if (!hasResult(entry.parts)) {
    if (entry.role === "tool" && !hasSendableContent(entry.parts)) return [];
    return [builders[entry.role](entry.parts)];
  }
  const results = resultsIn(entry.parts).map(toolMessage);
  const rest = entry.parts.filter((p) => p.type !== "tool_result");
  return hasSendableContent(rest) ? [...results, builders[entry.role](rest)] : results;
}

function hasResult(parts: ReadonlyArray<Part>): boolean {
  for (let i = 0; i < parts.length; i++) if (parts[i]!.type === "tool_result") return true;
  return false;
}

function hasSendableContent(parts: ReadonlyArray<Part>): boolean {
  return parts.some(
    (p) => (p.type === "text" && p.text !== "") || p.type === "media" || p.type === "tool_call",
  );
}

function toolMessage(result: ToolResultPart): ChatCompletionToolMessageParam {
  return { role: "tool", tool_call_id: result.callId, content: result.content };
}

function userMessage(parts: ReadonlyArray<Part>): ChatCompletionUserMessageParam {
  if (!parts.some((p) => p.type === "media")) return { role: "user", content: flattenText(parts) };
  const content: ChatCompletionContentPart[] = [];
  for (const part of parts) {
    if (part.type === "text" && part.text !== "") content.push({ type: "text", text: part.text });
    if (part.type !== "media") continue;
    content.push(
      isInlineImage(part)
        ? { type: "image_url", image_url: { url: part.uri } }
        : { type: "text", text: mediaReference(part) },
    );
  }
  return { role: "user", content };
}

function assistantMessage(parts: ReadonlyArray<Part>): ChatCompletionAssistantMessageParam {
  const content = flattenText(parts);
  const calls = callsIn(parts);
  if (calls.length === 0) return { role: "assistant", content };
  return {
    role: "assistant",
    content,
    tool_calls: calls.map((call) => ({
      id: call.callId,
      type: "function",
      function: { name: call.name, arguments: call.args },
    })),
  };
}
