/**
 * The engine's rendered prompt → LangChain.js messages, the list a LangChain chat model is invoked with.
 */
import type { BaseMessage } from "@langchain/core/messages";
import type { Part, Role, ToolCallPart } from "../../log/message.js";
import type { RenderedMessage, RenderedPrompt } from "../../render/rendered-prompt.js";
import { contentOf } from "./content-blocks.js";
import { lcMessages } from "./peer-modules.js";

const { AIMessage, HumanMessage, SystemMessage, ToolMessage } = lcMessages;

/**
 * The id a rendered message takes: its log message's id when it stands for exactly one (kept as it is, or with
 * content cleared); none for what the engine wrote for this request (summaries, pointers, stubs, injections).
 */
function idOf(message: RenderedMessage): string | undefined {
  const { kind, sourceIds } = message.provenance;
  return (kind === "original" || kind === "cleared") && sourceIds.length === 1 ? sourceIds[0] : undefined;
}

function parsedArgs(args: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(args);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** What converting one rendered message needs: its id and the names of the prompt's calls by call id. */
interface Conversion {
  readonly parts: ReadonlyArray<Part>;
  readonly id: string | undefined;
  readonly callNames: ReadonlyMap<string, string>;
}

const withId = (id: string | undefined) => (id === undefined ? {} : { id });

function assistantMessages({ parts, id }: Conversion): BaseMessage[] {
  const toolCalls = [];
  const invalid = [];
  for (const call of parts.filter((p): p is ToolCallPart => p.type === "tool_call")) {
    const args = parsedArgs(call.args);
    // Arguments that are not a JSON object go back the way LangChain itself keeps them: as an invalid call.
    if (args === undefined) {
      invalid.push({
        type: "invalid_tool_call" as const,
        id: call.callId,
        name: call.name,
        args: call.args,
        error: "arguments are not a JSON object",
      });
    } else toolCalls.push({ type: "tool_call" as const, id: call.callId, name: call.name, args });
  }
  const message = new AIMessage({
    content: contentOf(parts.filter((p) => p.type !== "tool_call")),
    ...(toolCalls.length === 0 ? {} : { tool_calls: toolCalls }),
    ...(invalid.length === 0 ? {} : { invalid_tool_calls: invalid }),
    ...withId(id),
  });
  return [message];
}

/** One `ToolMessage` per result; a log message holding several results gives each its own id. */
function toolMessages({ parts, id, callNames }: Conversion): BaseMessage[] {
  const results = parts.filter((p) => p.type === "tool_result");
  return results.map((result, k) => {
    const name = callNames.get(result.callId);
    return new ToolMessage({
      content: result.content,
      tool_call_id: result.callId,
      ...(result.isError === undefined ? {} : { status: result.isError ? "error" : "success" }),
      ...(name === undefined ? {} : { name }),
      ...withId(id === undefined || results.length === 1 ? id : `${id}#${k}`),
    });
  });
}

/** The LangChain messages of one rendered message, by its role. */
const BY_ROLE: Readonly<Record<Role, (conversion: Conversion) => BaseMessage[]>> = {
  system: ({ parts, id }) => [new SystemMessage({ content: contentOf(parts), ...withId(id) })],
  user: ({ parts, id }) => [new HumanMessage({ content: contentOf(parts), ...withId(id) })],
  assistant: assistantMessages,
  tool: toolMessages,
};

/**
 * The messages of a rendered prompt (`PreparedTurn.prompt`) as LangChain.js messages: system →
 * `SystemMessage`, user → `HumanMessage`, assistant → `AIMessage` (reasoning blocks as they came, tool calls
 * with their args parsed; args that are not a JSON object as `invalid_tool_calls`), each tool result →
 * `ToolMessage` (named after its call). A message kept or cleared from the log carries its log id; summaries,
 * pointers, stubs and per-turn content carry none. A message that `fromLangChainMessages` read and the plan
 * left untouched comes back equal to what went in.
 *
 * @example
 * const turn = await engine.prepareTurn(threadId, { format: "openai" });
 * const reply = await chatModel.invoke(toLangChainMessages(turn.prompt));
 */
export function toLangChainMessages(prompt: RenderedPrompt): BaseMessage[] {
  const callNames = new Map<string, string>();
  for (const message of prompt.messages) {
    for (const part of message.parts) if (part.type === "tool_call") callNames.set(part.callId, part.name);
  }
  return prompt.messages.flatMap((message) =>
    BY_ROLE[message.role]({ parts: message.parts, id: idOf(message), callNames }),
  );
}
