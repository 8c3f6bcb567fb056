/**
 * OpenAI Chat Completions request rules: roles, content types, and every tool call answered by tool messages
 * right after its assistant message. Calls are paired with "nearest earlier unanswered call with that id",
 * never with a global id map, because ids may be reused once answered.
 */
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";

const quote = (s: string): string => JSON.stringify(s);
const list = (ids: Iterable<string>): string => [...ids].map(quote).join(", ");
const typeOf = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

interface OpenCall {
  readonly id: string;
  answered: boolean;
}

const CHAT_ROLES = new Set(["system", "developer", "user", "assistant", "tool"]);
const CHAT_PART_TYPES: Record<string, ReadonlySet<string>> = {
  system: new Set(["text"]),
  developer: new Set(["text"]),
  user: new Set(["text", "image_url", "input_audio", "file"]),
  assistant: new Set(["text", "refusal"]),
  tool: new Set(["text"]),
};

/** Problems of an OpenAI Chat Completions body: roles, content types, and tool call / tool message pairing. */
export function validateOpenAIChat(body: {
  readonly messages: ReadonlyArray<ChatCompletionMessageParam>;
}): string[] {
  const problems: string[] = [];
  if (body.messages.length === 0) problems.push("messages is empty: send at least one message");
  let pending: { readonly index: number; readonly calls: OpenCall[] } | undefined;
  const closePending = (why: string): void => {
    const open = pending?.calls.filter((c) => !c.answered) ?? [];
    if (pending !== undefined && open.length > 0) {
      problems.push(`messages[${pending.index}]: tool call(s) ${list(open.map((c) => c.id))} ${why}`);
    }
    pending = undefined;
  };
  body.messages.forEach((message, i) => {
    const at = `messages[${i}]`;
    const role: string = message.role;
    if (!CHAT_ROLES.has(role)) {
      problems.push(`${at}: role ${quote(role)} is not one of ${list(CHAT_ROLES)}`);
      return;
    }
    problems.push(...chatContentProblems(message, at));
    if (message.role === "tool") {
      const call = pending?.calls.find((c) => !c.answered && c.id === message.tool_call_id);
      if (call !== undefined) call.answered = true;
      else if (pending === undefined) {
        problems.push(
          `${at}: tool message for call ${quote(message.tool_call_id)} does not follow an assistant message with tool_calls (only tool messages may stand between a call and its results)`,
        );
      } else {
        problems.push(
          `${at}: tool message answers ${quote(message.tool_call_id)}, which is not an unanswered call of messages[${pending.index}]`,
        );
      }
      return;
    }
    closePending(
      `not answered before ${at} (${role}); every call needs a tool message right after its assistant message`,
    );
    const calls = message.role === "assistant" ? (message.tool_calls ?? []) : [];
    if (calls.length > 0) pending = { index: i, calls: calls.map((c) => ({ id: c.id, answered: false })) };
  });
  closePending("never answered: the request ends with an unanswered call");
  return problems;
}

function chatContentProblems(message: ChatCompletionMessageParam, at: string): string[] {
  const problems: string[] = [];
  const content: unknown = "content" in message ? message.content : undefined;
  const allowed = CHAT_PART_TYPES[message.role] ?? new Set<string>();
  if (Array.isArray(content)) {
    if (content.length === 0) problems.push(`${at}: content is an empty array`);
    content.forEach((part: { type?: unknown }, k) => {
      if (typeof part.type !== "string" || !allowed.has(part.type)) {
        problems.push(
          `${at}.content[${k}]: part type ${quote(String(part.type))} is not allowed in a ${message.role} message`,
        );
      }
    });
  } else if (typeof content !== "string" && !(message.role === "assistant" && content == null)) {
    problems.push(`${at}: content must be a string or an array of parts, got ${typeOf(content)}`);
  }
  if (message.role === "tool" && (typeof message.tool_call_id !== "string" || message.tool_call_id === "")) {
    problems.push(`${at}: tool message has no tool_call_id`);
  }
  if (message.role !== "assistant") return problems;
  const calls = message.tool_calls;
  if (calls !== undefined && calls.length === 0)
    problems.push(`${at}: tool_calls is an empty array (omit it)`);
  if (content == null && (calls === undefined || calls.length === 0) && message.function_call == null) {
    problems.push(`${at}: assistant message has neither content nor tool_calls`);
  }
  calls?.forEach((call, k) => {
    if (typeof call.id !== "string" || call.id === "") problems.push(`${at}.tool_calls[${k}]: empty id`);
    if (
      call.type === "function" &&
      (call.function.name === "" || typeof call.function.arguments !== "string")
    ) {
      problems.push(`${at}.tool_calls[${k}]: function needs a name and a string of arguments`);
    }
  });
  return problems;
}
