/**
 * Adapter from the provider-neutral rendered prompt to an OpenAI Responses request body.
 *
 * Rules:
 * - the leading system messages become `instructions` (joined by a blank line); a later system message stays
 *   in place as a `system` input message, so the order of the conversation is kept;
 * - an assistant message becomes its reasoning items, then a message item with its text (left out when the
 *   message only calls tools), then one `function_call` item per call (ids, names, arguments unchanged);
 * - every tool result becomes a `function_call_output` item; `isError` has no field and is not sent;
 * - reasoning is sent only as an encrypted item: a part with both `redacted` (the `encrypted_content`) and
 *   `signature` (the `rs_…` item id the API requires). Plain or Anthropic-signed reasoning cannot be replayed to
 *   OpenAI and is omitted;
 * - images in user messages become `input_image` items; other media become a reference line in the text;
 * - results that the log holds away from their call are moved right behind it (see `groupToolResults`).
 */
import type {
  EasyInputMessage,
  ResponseFunctionToolCall,
  ResponseInputContent,
  ResponseInputItem,
  ResponseReasoningItem,
} from "openai/resources/responses/responses";
import type { Part, ReasoningPart, Role, ToolResultPart } from "../log/message.js";
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
} from "./adapter-input.js";

/** The part of a Responses request body this adapter produces. */
export interface OpenAIResponsesRequest {
  instructions?: string;
  input: ResponseInputItem[];
}

type ItemBuilder = (parts: ReadonlyArray<Part>) => ResponseInputItem[];

/** Builds the items for each neutral role; a `tool` message's non-result content is sent as user input. */
const builders: Record<Role, ItemBuilder> = {
  system: (parts) => [{ type: "message", role: "system", content: flattenText(parts) }],
  user: (parts) => [userMessage(parts)],
  assistant: assistantItems,
  tool: (parts) => [userMessage(parts)],
};

/** Converts a rendered prompt (or its messages) to the `instructions` and `input` of a Responses request. */
export function toOpenAIResponses(source: AdapterSource): OpenAIResponsesRequest {
  const entries = groupToolResults(messagesOf(source));
  const instructions: string[] = [];
  let start = 0;
  while (entries[start]?.role === "system") {
    const text = flattenText(entries[start]!.parts);
    if (text !== "") instructions.push(text);
    start += 1;
  }
  const input = entries.slice(start).flatMap(entryItems);
  return instructions.length > 0 ? { instructions: instructions.join("\n\n"), input } : { input };
}

function entryItems(entry: AdapterEntry): ResponseInputItem[] {
  const outputs = resultsIn(entry.parts).map(callOutput);
  if (outputs.length === 0 && entry.role === "tool" && !hasSendableContent(entry.parts)) return [];
  if (outputs.length === 0) return builders[entry.role](entry.parts);
  const rest = entry.parts.filter((p) => p.type !== "tool_result");
  return hasSendableContent(rest) ? [...outputs, ...builders[entry.role](rest)] : outputs;
}

function hasSendableContent(parts: ReadonlyArray<Part>): boolean {
  return parts.some(
    (p) => (p.type === "text" && p.text !== "") || p.type === "media" || p.type === "tool_call",
  );
}

function callOutput(result: ToolResultPart): ResponseInputItem.FunctionCallOutput {
  return { type: "function_call_output", call_id: result.callId, output: result.content };
}

function userMessage(parts: ReadonlyArray<Part>): EasyInputMessage {
  if (!parts.some((p) => p.type === "media"))
    return { type: "message", role: "user", content: flattenText(parts) };
  const content: ResponseInputContent[] = [];
  for (const part of parts) {
    if (part.type === "text" && part.text !== "") content.push({ type: "input_text", text: part.text });
    if (part.type !== "media") continue;
    content.push(
      isInlineImage(part)
        ? { type: "input_image", image_url: part.uri, detail: "auto" }
        : { type: "input_text", text: mediaReference(part) },
    );
  }
  return { type: "message", role: "user", content };
}

function assistantItems(parts: ReadonlyArray<Part>): ResponseInputItem[] {
  const items: ResponseInputItem[] = [];
  for (const part of parts) {
    const reasoning = part.type === "reasoning" ? reasoningItem(part) : undefined;
    if (reasoning !== undefined) items.push(reasoning);
  }
  const text = flattenText(parts);
  const calls = callsIn(parts);
  // A reasoning item must be followed by the output it produced, so an empty message is kept when nothing else is.
  if (text !== "" || calls.length === 0) items.push({ type: "message", role: "assistant", content: text });
  for (const call of calls) items.push(functionCall(call.callId, call.name, call.args));
  return items;
}

function functionCall(callId: string, name: string, args: string): ResponseFunctionToolCall {
  return { type: "function_call", call_id: callId, name, arguments: args };
}

function reasoningItem(part: ReasoningPart): ResponseReasoningItem | undefined {
  if (part.redacted === undefined || part.signature === undefined) return undefined;
  return {
    type: "reasoning",
    id: part.signature,
    summary: part.text === "" ? [] : [{ type: "summary_text", text: part.text }],
    encrypted_content: part.redacted,
  };
}
