/**
 * A model's reply, as the provider returned it, into the log: one assistant message whose parts keep what the
 * next request must send back — text, tool calls with their arguments verbatim, and reasoning with its signature
 * or encrypted payload byte for byte (Anthropic and OpenAI reject altered reasoning). A refusal becomes the
 * message's text, marked `meta.refusal`. Tool results go back with {@link toolResultMessage}.
 *
 * The reply types below are the fields read, structurally: the official SDKs' objects fit them, and the package
 * needs neither SDK to use them.
 */
import { ValidationError } from "../errors/ledger-error.js";
import type { MessageInput, MessageMeta, Part } from "./message.js";

/** The fields of an OpenAI Chat Completions message that are read. */
export interface OpenAIChatReplyMessage {
  readonly content?: string | null;
  readonly refusal?: string | null;
  readonly tool_calls?: ReadonlyArray<
    | {
        readonly id: string;
        readonly type?: "function";
        readonly function: { readonly name: string; readonly arguments: string };
      }
    | {
        readonly id: string;
        readonly type: "custom";
        readonly custom: { readonly name: string; readonly input: string };
      }
  > | null;
  /** Reasoning text some compatible servers return (DeepSeek, vLLM); Chat Completions cannot take it back. */
  readonly reasoning_content?: string | null;
}

/** An OpenAI Chat Completion (its first choice is read), or one of its messages. */
export type OpenAIChatReply =
  | { readonly choices: ReadonlyArray<{ readonly message: OpenAIChatReplyMessage }> }
  | OpenAIChatReplyMessage;

/** The output items of an OpenAI Responses response that are read (others are skipped). */
export type OpenAIResponseItem =
  | {
      readonly type: "message";
      readonly content: ReadonlyArray<
        | { readonly type: "output_text"; readonly text: string }
        | { readonly type: "refusal"; readonly refusal: string }
        | { readonly type: string }
      >;
    }
  | {
      readonly type: "function_call";
      readonly call_id: string;
      readonly name: string;
      readonly arguments: string;
    }
  | {
      readonly type: "custom_tool_call";
      readonly call_id: string;
      readonly name: string;
      readonly input: string;
    }
  | {
      readonly type: "reasoning";
      readonly id: string;
      readonly summary?: ReadonlyArray<{ readonly text: string }>;
      readonly encrypted_content?: string | null;
    }
  | { readonly type: string };

/** An OpenAI Responses response (or just its `output`). */
export type OpenAIResponseReply =
  | { readonly output: ReadonlyArray<OpenAIResponseItem> }
  | ReadonlyArray<OpenAIResponseItem>;

/** The content blocks of an Anthropic message that are read (others are skipped). */
export type AnthropicReplyBlock =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "thinking"; readonly thinking: string; readonly signature: string }
  | { readonly type: "redacted_thinking"; readonly data: string }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: unknown }
  | { readonly type: string };

/** An Anthropic Messages response. */
export interface AnthropicReply {
  readonly content: ReadonlyArray<AnthropicReplyBlock>;
  readonly stop_reason?: string | null;
}

/** Options of the reply converters. */
export interface ReplyOptions {
  /** The message id in the log (default: generated from its position). */
  readonly id?: string;
  /** Metadata to store with the message (merged with `refusal` when the model refused). */
  readonly meta?: MessageMeta;
}

function assistant(
  parts: Part[],
  refusal: string | undefined,
  options: ReplyOptions | undefined,
): MessageInput {
  if (refusal !== undefined) parts.push({ type: "text", text: refusal });
  const meta = refusal === undefined ? options?.meta : { ...options?.meta, refusal: true };
  return {
    ...(options?.id === undefined ? {} : { id: options.id }),
    role: "assistant",
    parts,
    ...(meta === undefined ? {} : { meta }),
  };
}

function notAReply(what: string, field: string): never {
  throw new ValidationError(`not ${what}: ${field} is missing or of the wrong type`, { field });
}

/**
 * The assistant message of an OpenAI Chat Completion (its first choice), or of one Chat message: text, then the
 * tool calls in order (`arguments` verbatim; a custom tool's free-form `input` as the arguments).
 *
 * @example
 * const completion = await openai.chat.completions.create({ model, ...turn.request });
 * await engine.append(threadId, [fromOpenAIChatCompletion(completion)]);
 */
export function fromOpenAIChatCompletion(reply: OpenAIChatReply, options?: ReplyOptions): MessageInput {
  const message = "choices" in reply ? reply.choices[0]?.message : reply;
  if (message === undefined || typeof message !== "object")
    notAReply("a Chat Completion", "choices[0].message");
  const parts: Part[] = [];
  if (typeof message.reasoning_content === "string" && message.reasoning_content !== "") {
    parts.push({ type: "reasoning", text: message.reasoning_content });
  }
  if (typeof message.content === "string" && message.content !== "")
    parts.push({ type: "text", text: message.content });
  for (const call of message.tool_calls ?? []) {
    if (call.type === "custom") {
      parts.push({ type: "tool_call", callId: call.id, name: call.custom.name, args: call.custom.input });
    } else {
      parts.push({
        type: "tool_call",
        callId: call.id,
        name: call.function.name,
        args: call.function.arguments,
      });
    }
  }
  const refusal = typeof message.refusal === "string" && message.refusal !== "" ? message.refusal : undefined;
  return assistant(parts, refusal, options);
}

/**
 * The assistant message of an OpenAI Responses response: its reasoning items (summary text; the item id as the
 * signature and `encrypted_content` as the opaque payload, which is what the Responses adapter sends back),
 * output text, and function calls, in output order. Items of other kinds (built-in tool calls) are skipped.
 *
 * @example
 * const response = await openai.responses.create({ model, include: ["reasoning.encrypted_content"], ...turn.request });
 * await engine.append(threadId, [fromOpenAIResponse(response)]);
 */
export function fromOpenAIResponse(reply: OpenAIResponseReply, options?: ReplyOptions): MessageInput {
  const items = Array.isArray(reply) ? reply : (reply as { output?: unknown }).output;
  if (!Array.isArray(items)) notAReply("a Responses response", "output");
  const parts: Part[] = [];
  const refusals: string[] = [];
  for (const item of items as ReadonlyArray<OpenAIResponseItem>) {
    if (item.type === "reasoning" && "id" in item) {
      const text = (item.summary ?? []).map((s) => s.text).join("\n\n");
      const encrypted = typeof item.encrypted_content === "string" ? item.encrypted_content : undefined;
      parts.push({
        type: "reasoning",
        text,
        signature: item.id,
        ...(encrypted === undefined ? {} : { redacted: encrypted }),
      });
    } else if (item.type === "message" && "content" in item) {
      for (const c of item.content) {
        if (c.type === "output_text" && "text" in c) parts.push({ type: "text", text: c.text });
        else if (c.type === "refusal" && "refusal" in c) refusals.push(c.refusal);
      }
    } else if (item.type === "function_call" && "call_id" in item && "arguments" in item) {
      parts.push({ type: "tool_call", callId: item.call_id, name: item.name, args: item.arguments });
    } else if (item.type === "custom_tool_call" && "call_id" in item && "input" in item) {
      parts.push({ type: "tool_call", callId: item.call_id, name: item.name, args: item.input });
    }
  }
  return assistant(parts, refusals.length === 0 ? undefined : refusals.join("\n"), options);
}

/**
 * The assistant message of an Anthropic Messages response, blocks in order: text, thinking (text and signature
 * byte for byte), redacted thinking (its data as the opaque payload), tool use (the input as JSON arguments).
 * `stop_reason: "refusal"` marks the message `meta.refusal`.
 *
 * @example
 * const message = await anthropic.messages.create({ model, max_tokens: 1024, ...turn.request });
 * await engine.append(threadId, [fromAnthropicMessage(message)]);
 */
export function fromAnthropicMessage(reply: AnthropicReply, options?: ReplyOptions): MessageInput {
  if (!Array.isArray(reply?.content)) notAReply("an Anthropic message", "content");
  const parts: Part[] = [];
  for (const block of reply.content) {
    if (block.type === "text" && "text" in block) parts.push({ type: "text", text: block.text });
    else if (block.type === "thinking" && "signature" in block) {
      parts.push({ type: "reasoning", text: block.thinking, signature: block.signature });
    } else if (block.type === "redacted_thinking" && "data" in block) {
      parts.push({ type: "reasoning", text: "", redacted: block.data });
    } else if (block.type === "tool_use" && "input" in block) {
      parts.push({
        type: "tool_call",
        callId: block.id,
        name: block.name,
        args: JSON.stringify(block.input ?? {}),
      });
    }
  }
  const refused = reply.stop_reason === "refusal";
  const meta = refused ? { ...options?.meta, refusal: true } : options?.meta;
  return {
    ...(options?.id === undefined ? {} : { id: options.id }),
    role: "assistant",
    parts,
    ...(meta === undefined ? {} : { meta }),
  };
}

/** Options of {@link toolResultMessage}. */
export interface ToolResultOptions {
  readonly isError?: boolean;
  /** The tool's name (stored as `meta.toolName`, which retention policies key on). */
  readonly toolName?: string;
  readonly id?: string;
  readonly meta?: MessageMeta;
}

/**
 * A tool message answering `callId` with `content` (a string, or any JSON value, stored as its JSON text).
 *
 * @example
 * await engine.append(threadId, [toolResultMessage(call.id, await runTool(call), { toolName: call.name })]);
 */
export function toolResultMessage(
  callId: string,
  content: unknown,
  options: ToolResultOptions = {},
): MessageInput {
  if (typeof callId !== "string" || callId === "") notAReply("a tool call id", "callId");
  const text = typeof content === "string" ? content : JSON.stringify(content ?? null);
  const meta =
    options.toolName === undefined ? options.meta : { ...options.meta, toolName: options.toolName };
  return {
    ...(options.id === undefined ? {} : { id: options.id }),
    role: "tool",
    parts: [
      {
        type: "tool_result",
        callId,
        content: text,
        ...(options.isError === undefined ? {} : { isError: options.isError }),
      },
    ],
    ...(meta === undefined ? {} : { meta }),
  };
}
