/**
 * Conversions between context-ledger's neutral messages and the peers' message shapes, plus the checks run on
 * every peer's output (fits the budget by our counter, tool pairs split, OpenAI Chat rules). Conversions into a
 * peer's shape happen outside the timed region; conversions of a peer's output to a Chat Completions body are
 * part of it, as `toOpenAIChat` is part of ours.
 */
import {
  AIMessage,
  type BaseMessage,
  HumanMessage,
  SystemMessage,
  ToolMessage,
} from "@langchain/core/messages";
import type { ModelMessage } from "ai";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { MessageInput, Part } from "../../src/log/message.js";
import { toolInput } from "../../src/render/anthropic-messages-adapter.js";
import type { OpenAIChatRequest } from "../../src/render/openai-chat-adapter.js";
import { validateOpenAIChat } from "../../src/render/provider-rules.js";
import type { CountableMessage, MessageCounter } from "../../src/tokens/tokenizer.js";

/** Text of the parts a Chat Completions message can carry as text (reasoning is not sent, media as a line). */
function textOfParts(parts: ReadonlyArray<Part>): string {
  let out = "";
  for (const p of parts) {
    if (p.type === "text") out += p.text;
    else if (p.type === "media") out += `[${p.mediaType}: ${p.uri}]`;
  }
  return out;
}

function stringifyArgs(args: unknown): string {
  if (args !== null && typeof args === "object" && "_raw" in args && typeof args._raw === "string")
    return args._raw;
  return JSON.stringify(args ?? {});
}

/** Our messages as LangChain messages (one `ToolMessage` per tool result; ids kept so counts can be memoised). */
export function toLangChain(messages: ReadonlyArray<MessageInput>, idBase: number): BaseMessage[] {
  const out: BaseMessage[] = [];
  messages.forEach((m, i) => {
    const id = m.id ?? `msg${idBase + i}`;
    const text = textOfParts(m.parts);
    if (m.role === "system") out.push(new SystemMessage({ id, content: text }));
    else if (m.role === "assistant") {
      const tool_calls = m.parts.flatMap((p) =>
        p.type === "tool_call"
          ? [{ id: p.callId, name: p.name, args: toolInput(p.args), type: "tool_call" as const }]
          : [],
      );
      out.push(
        new AIMessage(tool_calls.length > 0 ? { id, content: text, tool_calls } : { id, content: text }),
      );
    } else {
      let k = 0;
      for (const p of m.parts) {
        if (p.type === "tool_result") {
          out.push(new ToolMessage({ id: `${id}#${k++}`, content: p.content, tool_call_id: p.callId }));
        }
      }
      if (text !== "" || k === 0) out.push(new HumanMessage({ id, content: text }));
    }
  });
  return out;
}

function langChainText(message: BaseMessage): string {
  const content = message.content;
  if (typeof content === "string") return content;
  let out = "";
  for (const block of content) if (block.type === "text" && typeof block.text === "string") out += block.text;
  return out;
}

/** A LangChain message as a countable neutral message (what a user-side token counter would tokenize). */
export function langChainCountable(message: BaseMessage): CountableMessage {
  const text = langChainText(message);
  const type = message.getType();
  if (type === "tool") {
    const callId = (message as ToolMessage).tool_call_id;
    return { role: "tool", parts: [{ type: "tool_result", callId, content: text }] };
  }
  if (type === "ai") {
    const parts: Part[] = [{ type: "text", text }];
    for (const call of (message as AIMessage).tool_calls ?? []) {
      parts.push({
        type: "tool_call",
        callId: call.id ?? "",
        name: call.name,
        args: stringifyArgs(call.args),
      });
    }
    return { role: "assistant", parts };
  }
  return { role: type === "system" ? "system" : "user", parts: [{ type: "text", text }] };
}

/** LangChain messages as a Chat Completions body (the minimal mapping `@langchain/openai` also does). */
export function langChainToOpenAIChat(messages: ReadonlyArray<BaseMessage>): OpenAIChatRequest {
  return {
    messages: messages.map((m): ChatCompletionMessageParam => {
      const content = langChainText(m);
      const type = m.getType();
      if (type === "tool") return { role: "tool", tool_call_id: (m as ToolMessage).tool_call_id, content };
      if (type === "ai") {
        const calls = (m as AIMessage).tool_calls ?? [];
        if (calls.length === 0) return { role: "assistant", content };
        return {
          role: "assistant",
          content,
          tool_calls: calls.map((c) => ({
            id: c.id ?? "",
            type: "function",
            function: { name: c.name, arguments: stringifyArgs(c.args) },
          })),
        };
      }
      return type === "system" ? { role: "system", content } : { role: "user", content };
    }),
  };
}

/**
 * Our messages as AI SDK model messages (text + tool-call parts; one tool message per result message). `names`
 * maps call ids to tool names across calls, since an AI SDK tool result repeats its tool's name.
 */
export function toModelMessages(
  messages: ReadonlyArray<MessageInput>,
  names: Map<string, string> = new Map(),
): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const m of messages) {
    const text = textOfParts(m.parts);
    if (m.role === "system") out.push({ role: "system", content: text });
    else if (m.role === "assistant") {
      const content: Exclude<Extract<ModelMessage, { role: "assistant" }>["content"], string> = [];
      if (text !== "") content.push({ type: "text", text });
      for (const p of m.parts) {
        if (p.type !== "tool_call") continue;
        names.set(p.callId, p.name);
        content.push({ type: "tool-call", toolCallId: p.callId, toolName: p.name, input: toolInput(p.args) });
      }
      out.push({ role: "assistant", content });
    } else {
      const results = m.parts.flatMap((p) =>
        p.type === "tool_result"
          ? [
              {
                type: "tool-result" as const,
                toolCallId: p.callId,
                toolName: names.get(p.callId) ?? "unknown",
                output: { type: "text" as const, value: p.content },
              },
            ]
          : [],
      );
      if (results.length > 0) out.push({ role: "tool", content: results });
      if (text !== "" || results.length === 0) out.push({ role: "user", content: text });
    }
  }
  return out;
}

function modelText(content: ModelMessage["content"]): string {
  if (typeof content === "string") return content;
  let out = "";
  for (const part of content) if (part.type === "text") out += part.text;
  return out;
}

/** AI SDK model messages as a Chat Completions body (what `@ai-sdk/openai` sends, minus provider options). */
export function modelMessagesToOpenAIChat(messages: ReadonlyArray<ModelMessage>): OpenAIChatRequest {
  const out: ChatCompletionMessageParam[] = [];
  for (const m of messages) {
    if (m.role === "system") out.push({ role: "system", content: m.content });
    else if (m.role === "user") out.push({ role: "user", content: modelText(m.content) });
    else if (m.role === "assistant") {
      const calls = typeof m.content === "string" ? [] : m.content.filter((p) => p.type === "tool-call");
      const content = modelText(m.content);
      if (calls.length === 0) out.push({ role: "assistant", content });
      else {
        out.push({
          role: "assistant",
          content,
          tool_calls: calls.map((c) => ({
            id: c.toolCallId,
            type: "function",
            function: { name: c.toolName, arguments: stringifyArgs(c.input) },
          })),
        });
      }
    } else {
      for (const p of m.content) {
        if (p.type !== "tool-result") continue;
        const value = p.output.type === "text" ? p.output.value : JSON.stringify(p.output);
        out.push({ role: "tool", tool_call_id: p.toolCallId, content: value });
      }
    }
  }
  return { messages: out };
}

/** A Chat Completions message back in neutral form, so the library's counter can count it. */
export function neutralOf(message: ChatCompletionMessageParam): CountableMessage {
  const content = "content" in message ? message.content : undefined;
  let text = "";
  if (typeof content === "string") text = content;
  else if (Array.isArray(content)) for (const p of content) if (p.type === "text") text += p.text;
  if (message.role === "tool") {
    return { role: "tool", parts: [{ type: "tool_result", callId: message.tool_call_id, content: text }] };
  }
  if (message.role === "assistant") {
    const parts: Part[] = [{ type: "text", text }];
    for (const c of message.tool_calls ?? []) {
      if (c.type === "function") {
        parts.push({ type: "tool_call", callId: c.id, name: c.function.name, args: c.function.arguments });
      }
    }
    return { role: "assistant", parts };
  }
  return { role: message.role === "user" ? "user" : "system", parts: [{ type: "text", text }] };
}

/** Call ids whose call and result both occur in the thread. */
export function completePairs(thread: ReadonlyArray<MessageInput>): Set<string> {
  const calls = new Set<string>();
  const results = new Set<string>();
  for (const m of thread) {
    for (const p of m.parts) {
      if (p.type === "tool_call") calls.add(p.callId);
      else if (p.type === "tool_result") results.add(p.callId);
    }
  }
  for (const id of calls) if (!results.has(id)) calls.delete(id);
  return calls;
}

/** What the checks found over every output body of one (peer, size) cell. */
export interface OutputSummary {
  /** Output bodies checked (warm and cold calls of every measured round). */
  readonly outputs: number;
  /** Whether every body whose tokens were counted fits the budget. */
  readonly fitsBudget: boolean;
  /** Tokens of the largest counted body by our counter, request overhead included. */
  readonly maxTokens: number;
  /** Messages of the last body. */
  readonly messages: number;
  /** Bodies that keep only one side of a call/result pair that is complete in the input thread. */
  readonly outputsWithOrphans: number;
  /** The most such split pairs in one body. */
  readonly maxOrphanedPairs: number;
  /** Bodies `validateOpenAIChat` rejects. */
  readonly invalidOutputs: number;
  /** Bodies that keep a tool call the input thread itself never answers (a peer passes it on as it is). */
  readonly outputsWithUnansweredInput: number;
  readonly firstProblem?: string;
}

/** Collects the checks of a cell's output bodies: budget by our counter, split pairs, OpenAI Chat rules. */
export class OutputChecks {
  private outputs = 0;
  private fits = true;
  private maxTokens = 0;
  private messages = 0;
  private withOrphans = 0;
  private maxOrphans = 0;
  private invalid = 0;
  private unansweredInput = 0;
  private firstProblem: string | undefined;

  /** Checks one body; its tokens are counted only when `counter` is given (large bodies are slow to count). */
  add(body: OpenAIChatRequest, pairs: ReadonlySet<string>, budget: number, counter?: MessageCounter): void {
    this.outputs++;
    this.messages = body.messages.length;
    const calls = new Set<string>();
    const results = new Set<string>();
    let tokens = counter?.requestOverhead ?? 0;
    for (const m of body.messages) {
      if (counter !== undefined) tokens += counter.countMessage(neutralOf(m));
      if (m.role === "tool") results.add(m.tool_call_id);
      if (m.role === "assistant") for (const c of m.tool_calls ?? []) calls.add(c.id);
    }
    if (counter !== undefined) {
      this.maxTokens = Math.max(this.maxTokens, tokens);
      if (tokens > budget) this.fits = false;
    }
    let orphans = 0;
    for (const id of new Set([...calls, ...results])) {
      if (pairs.has(id) && calls.has(id) !== results.has(id)) orphans++;
    }
    if (orphans > 0) this.withOrphans++;
    for (const id of calls) {
      if (!pairs.has(id)) {
        this.unansweredInput++;
        break;
      }
    }
    this.maxOrphans = Math.max(this.maxOrphans, orphans);
    const problems = validateOpenAIChat(body);
    if (problems.length > 0) this.invalid++;
    this.firstProblem ??= problems[0];
  }

  summary(): OutputSummary {
    return {
      outputs: this.outputs,
      fitsBudget: this.fits,
      maxTokens: this.maxTokens,
      messages: this.messages,
      outputsWithOrphans: this.withOrphans,
      maxOrphanedPairs: this.maxOrphans,
      invalidOutputs: this.invalid,
      outputsWithUnansweredInput: this.unansweredInput,
      ...(this.firstProblem === undefined ? {} : { firstProblem: this.firstProblem }),
    };
  }
}

/**
 * A LangChain `tokenCounter` that counts with the library's counter, each message once (memoised by its id in
 * `memo`, which the caller keeps as long as the counts should be remembered).
 */
export function memoTokenCounter(
  counter: MessageCounter,
  memo: Map<string, number>,
): (list: BaseMessage[]) => number {
  return (list) => {
    let sum = counter.requestOverhead;
    for (const m of list) {
      let n = memo.get(m.id!);
      if (n === undefined) {
        n = counter.countMessage(langChainCountable(m));
        memo.set(m.id!, n);
      }
      sum += n;
    }
    return sum;
  };
}
