/**
 * LangChain.js messages → context-ledger message inputs. The messages are read by their fields (`type`,
 * `content`, `tool_calls`, `tool_call_id`, `status`, `id`, `name`), so this direction needs no LangChain code.
 */
import type { BaseMessage } from "@langchain/core/messages";
import { ValidationError } from "../../errors/ledger-error.js";
import type { MessageInput, MessageMeta, Part, Role, ToolCallPart } from "../../log/message.js";
import { type BlockContext, type BlockSite, badBlock, partOfBlock } from "./content-blocks.js";

/** The fields of a LangChain message that are read. */
interface MessageFields {
  readonly type?: unknown;
  readonly id?: unknown;
  readonly name?: unknown;
  readonly content?: unknown;
  readonly tool_calls?: unknown;
  readonly invalid_tool_calls?: unknown;
  readonly tool_call_id?: unknown;
  readonly status?: unknown;
  readonly _getType?: () => unknown;
}

/** Where a message sits in the batch. */
interface MessageSite {
  readonly index: number;
  readonly messageId: string | undefined;
}

function fail(problem: string, site: MessageSite, field: string): never {
  return badBlock(problem, { ...site, field });
}

/** The parts each role may hold, as the log allows them. */
const ALLOWED: Readonly<Record<Role, ReadonlySet<Part["type"]>>> = {
  system: new Set(["text"]),
  user: new Set(["text", "media"]),
  assistant: new Set(["text", "reasoning"]),
  tool: new Set(["text"]),
};

/** The content of a message as parts: a non-empty string is one text part, an array one part per block. */
function contentParts(message: MessageFields, role: Role, site: MessageSite, context: BlockContext): Part[] {
  const content = message.content;
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  if (!Array.isArray(content)) return fail("content must be a string or an array of blocks", site, "content");
  const parts: Part[] = [];
  content.forEach((block: unknown, j) => {
    const blockSite: BlockSite = { ...site, field: `content[${j}]` };
    const part = partOfBlock(block, blockSite, context);
    if (part === undefined) return;
    if (!ALLOWED[role].has(part.type)) {
      const kind = part.type === "media" ? "media" : part.type;
      badBlock(`a ${role} message cannot hold ${kind} content`, blockSite);
    }
    parts.push(part);
  });
  return parts;
}

/** A message's `tool_calls` (args as their JSON text) and `invalid_tool_calls` (args kept as they came). */
function toolCallParts(message: MessageFields, site: MessageSite): ToolCallPart[] {
  const parts: ToolCallPart[] = [];
  const read = (key: "tool_calls" | "invalid_tool_calls") => {
    const calls = message[key];
    if (calls === undefined || calls === null) return;
    if (!Array.isArray(calls)) return fail(`${key} must be an array`, site, key);
    calls.forEach((call: unknown, k) => {
      const c = (call ?? {}) as { id?: unknown; name?: unknown; args?: unknown };
      const at = `${key}[${k}]`;
      if (typeof c.id !== "string" || c.id === "") {
        fail("a tool call needs an id: its result names it", site, `${at}.id`);
      }
      if (typeof c.name !== "string" || c.name === "") fail("a tool call needs a name", site, `${at}.name`);
      let args: string;
      if (key === "invalid_tool_calls") args = typeof c.args === "string" ? c.args : "";
      else if (typeof c.args === "object" && c.args !== null && !Array.isArray(c.args)) {
        args = JSON.stringify(c.args);
      } else args = fail("tool call args must be an object", site, `${at}.args`);
      parts.push({ type: "tool_call", callId: c.id, name: c.name, args });
    });
  };
  read("tool_calls");
  read("invalid_tool_calls");
  return parts;
}

/** A tool message: one result answering `tool_call_id`; its text content is the result's content. */
function toolMessage(message: MessageFields, site: MessageSite): MessageInput {
  const callId = message.tool_call_id;
  if (typeof callId !== "string" || callId === "") {
    fail("a tool message needs the tool_call_id of the call it answers", site, "tool_call_id");
  }
  const content = contentParts(message, "tool", site, { callIds: new Set() })
    .map((part) => (part.type === "text" ? part.text : ""))
    .join("");
  const status = message.status;
  if (status !== undefined && status !== "success" && status !== "error") {
    fail(`status must be "success" or "error", got ${JSON.stringify(status)}`, site, "status");
  }
  const name = typeof message.name === "string" && message.name !== "" ? message.name : undefined;
  const meta: MessageMeta | undefined = name === undefined ? undefined : { toolName: name };
  return {
    ...(site.messageId === undefined ? {} : { id: site.messageId }),
    role: "tool",
    parts: [
      {
        type: "tool_result",
        callId,
        content,
        ...(status === undefined ? {} : { isError: status === "error" }),
      },
    ],
    ...(meta === undefined ? {} : { meta }),
  };
}

/** LangChain's message types, by the role each becomes in the log. */
const ROLES: Readonly<Record<string, Exclude<Role, "tool">>> = {
  system: "system",
  human: "user",
  ai: "assistant",
};

function typeOf(message: MessageFields): unknown {
  if (typeof message.type === "string") return message.type;
  return typeof message._getType === "function" ? message._getType() : undefined;
}

/** One LangChain message as a message input; `index` is where errors say it sits. */
export function fromLangChainMessageAt(message: BaseMessage, index: number): MessageInput {
  return convert(message as MessageFields, index);
}

function convert(message: MessageFields, index: number): MessageInput {
  if (typeof message !== "object" || message === null) {
    throw new ValidationError("a LangChain message must be an object", { index });
  }
  const messageId = typeof message.id === "string" && message.id !== "" ? message.id : undefined;
  const site: MessageSite = { index, messageId };
  const type = typeOf(message);
  if (type === "tool") return toolMessage(message, site);
  const role = typeof type === "string" && Object.hasOwn(ROLES, type) ? ROLES[type] : undefined;
  if (role === undefined) {
    return fail(
      `messages of type ${JSON.stringify(type)} are not supported (system, human, ai and tool are)`,
      site,
      "type",
    );
  }
  const calls = role === "assistant" ? toolCallParts(message, site) : [];
  const callIds = new Set(calls.map((c) => c.callId));
  const parts = [...contentParts(message, role, site, { callIds }), ...calls];
  return { ...(messageId === undefined ? {} : { id: messageId }), role, parts };
}

/**
 * LangChain.js messages as context-ledger message inputs, in order, ready for `engine.append`: `SystemMessage`
 * → system, `HumanMessage` → user (text and images), `AIMessage` → assistant (text; reasoning and thinking
 * blocks with their signatures byte for byte; `tool_calls` with their args as JSON text), `ToolMessage` → tool
 * (one result answering `tool_call_id`, an error when `status` is `"error"`, the message's `name` as
 * `meta.toolName`). A message's `id` becomes its log id. A message or block that cannot be kept throws a
 * `ValidationError` naming its index and field.
 *
 * @example
 * await engine.append(threadId, fromLangChainMessages([new HumanMessage("Fix the flaky test")]));
 */
export function fromLangChainMessages(messages: ReadonlyArray<BaseMessage>): MessageInput[] {
  if (!Array.isArray(messages)) {
    throw new ValidationError("fromLangChainMessages takes an array of messages", { field: "messages" });
  }
  return messages.map((message, index) => convert(message as MessageFields, index));
}
