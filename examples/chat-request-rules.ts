/**
 * The rules a Chat Completions request must follow that compaction can break, checked as strictly as the real
 * API checks them: shared by the example's local server and the tests' scripted fake. Rejections are data (the
 * body of the 400 the API would send), so each server shapes its own HTTP answer.
 */

/** The error the real API answers an invalid request with: status, message, offending parameter, code. */
export interface ChatRejection {
  readonly status: 400;
  readonly message: string;
  /** E.g. `messages.[3].role`; null when the request as a whole is at fault. */
  readonly param: string | null;
  /** E.g. `context_length_exceeded`; null when the API sends none. */
  readonly code: string | null;
}

/** Counts the tokens of a JSON value (a request's messages or tools). */
export type TokenCount = (value: unknown) => number;

/** Options of {@link checkChatRequest}. */
export interface ChatRequestLimits {
  /** Reject requests whose tokens (messages + tools + requested output) exceed this. */
  readonly maxContextTokens?: number;
  /** How the server counts tokens (default {@link roughTokens}). */
  readonly countTokens?: TokenCount;
}

/** The tokens a request takes in the context window, by the server's own count. */
export interface RequestTokens {
  /** Messages and tool definitions: what `usage.prompt_tokens` reports. */
  readonly prompt: number;
  /** The output the request reserves (`max_completion_tokens` or `max_tokens`). */
  readonly output: number;
}

interface ChatMessageLike {
  readonly role?: unknown;
  readonly tool_call_id?: unknown;
  readonly tool_calls?: ReadonlyArray<{ readonly id?: unknown }>;
}

const ROLES: ReadonlySet<unknown> = new Set(["system", "developer", "user", "assistant", "tool", "function"]);

/** A rough token count (about four characters per token) of a JSON value. */
export function roughTokens(value: unknown): number {
  return Math.ceil(JSON.stringify(value ?? "").length / 4);
}

/** The tokens of a request by `count`; the messages and the tools are counted as the JSON they are sent as. */
export function requestTokens(body: Readonly<Record<string, unknown>>, count: TokenCount): RequestTokens {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const tools = Array.isArray(body.tools) && body.tools.length > 0 ? count(body.tools) : 0;
  const output = Number(body.max_completion_tokens ?? body.max_tokens ?? 0);
  return { prompt: count(messages) + tools, output: Number.isFinite(output) ? output : 0 };
}

function reject(message: string, param: string | null, code: string | null = null): ChatRejection {
  return { status: 400, message, param, code };
}

/** The first message whose role the API does not know, as a rejection. */
function checkShape(body: Readonly<Record<string, unknown>>): ChatRejection | undefined {
  if (!Array.isArray(body.messages)) {
    return reject("Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
  }
  if (body.messages.length === 0) {
    return reject(
      "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      "messages",
      "empty_array",
    );
  }
  for (const [i, m] of (body.messages as ChatMessageLike[]).entries()) {
    if (!ROLES.has(m?.role)) {
      return reject(
        `Invalid value: ${JSON.stringify(m?.role)}. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        `messages.[${i}].role`,
        "invalid_value",
      );
    }
  }
  return undefined;
}

/**
 * Every tool message answers a call of the assistant message right before its run of tool messages, and every
 * call is answered before the next non-tool message (or the end of the request).
 */
function checkToolPairs(messages: ReadonlyArray<ChatMessageLike>): ChatRejection | undefined {
  let awaiting: Set<string> | undefined;
  let caller = -1;
  const unanswered = (at: number) =>
    reject(
      `An assistant message with 'tool_calls' must be followed by tool messages answering each 'tool_call_id'. Unanswered: ${[...(awaiting ?? [])].join(", ")}.`,
      `messages.[${at}].role`,
    );
  for (const [i, m] of messages.entries()) {
    if (m.role === "tool") {
      const id = String(m.tool_call_id);
      if (awaiting === undefined || !awaiting.delete(id)) {
        return reject(
          `Invalid parameter: the message with role 'tool' at index ${i} (tool_call_id ${id}) does not answer a tool call of the preceding assistant message.`,
          `messages.[${i}].role`,
        );
      }
      continue;
    }
    if (awaiting !== undefined && awaiting.size > 0) return unanswered(caller);
    const ids = m.role === "assistant" ? (m.tool_calls ?? []).map((c) => String(c.id)) : [];
    awaiting = ids.length > 0 ? new Set(ids) : undefined;
    caller = i;
  }
  return awaiting !== undefined && awaiting.size > 0 ? unanswered(caller) : undefined;
}

/**
 * The rejection the real API would answer a Chat Completions body with, or undefined when it is acceptable:
 * known roles, tool calls and results paired, and messages + tools + requested output within the window.
 *
 * @example
 * checkChatRequest({ messages: [{ role: "tool", tool_call_id: "x", content: "" }] })?.param; // "messages.[0].role"
 */
export function checkChatRequest(
  body: Readonly<Record<string, unknown>>,
  limits: ChatRequestLimits = {},
): ChatRejection | undefined {
  const shape = checkShape(body);
  if (shape !== undefined) return shape;
  const pairs = checkToolPairs(body.messages as ChatMessageLike[]);
  if (pairs !== undefined) return pairs;
  if (limits.maxContextTokens === undefined) return undefined;
  const { prompt, output } = requestTokens(body, limits.countTokens ?? roughTokens);
  if (prompt + output <= limits.maxContextTokens) return undefined;
  return reject(
    `This model's maximum context length is ${limits.maxContextTokens} tokens. However, you requested ${prompt + output} tokens (${prompt} in the messages and tools, ${output} in the completion). Please reduce the length of the messages or completion.`,
    "messages",
    "context_length_exceeded",
  );
}
