/**
 * Adapter from the provider-neutral rendered prompt to an Anthropic Messages request body.
 *
 * Rules (Anthropic's, plus the choices we made where it leaves room):
 * - the leading system messages become `system` text blocks; a later system message becomes a user text block
 *   prefixed `[system] ` where it stands, so the conversation order and the cached prefix are kept;
 * - the first message must be a user message: when the history starts with the assistant, a user message
 *   `(conversation continues)` is put first;
 * - roles alternate: consecutive messages of one role (a `tool` message counts as user) are merged, and in a
 *   merged user message all `tool_result` blocks come first;
 * - tool results sit in the user message right after the assistant message that called (results the log holds
 *   elsewhere are moved there); `tool_use.input` is the parsed argument object; arguments that are not a JSON
 *   object are sent as `{ "_raw": "<args>" }`, empty arguments as `{}`;
 * - tool-use ids must be unique in a request and match `[a-zA-Z0-9_-]+`: a reused or malformed call id is
 *   rewritten (`call_1` → `call_1_2`, bad characters → `_`) on the call and on its paired result alike;
 * - reasoning: `redacted` → `redacted_thinking`; signed → `thinking`, text and signature byte for byte, first in
 *   its message; unsigned reasoning is omitted (Anthropic rejects unsigned thinking);
 * - images with an `http(s):` URL or a base64 `data:` URL of a supported type become image blocks in user
 *   messages; other media become a reference line;
 * - blank text blocks are skipped (Anthropic rejects them); a message left without blocks gets `(empty)`, a
 *   tool result without output is sent without `content` (or `(no output)` when it is an error);
 * - `cacheBreakpoints` (indices of neutral messages) put `cache_control: { type: "ephemeral" }` on the last
 *   cacheable block of that message, or of the nearest earlier message that produced one.
 */
import type {
  ContentBlockParam,
  ImageBlockParam,
  MessageParam,
  TextBlockParam,
  ThinkingConfigParam,
  ToolResultBlockParam,
  ToolUseBlockParam,
} from "@anthropic-ai/sdk/resources/messages";
import type { MediaPart, Part, ReasoningPart, ToolResultPart } from "../log/message.js";
import {
  type AdapterEntry,
  type AdapterSource,
  flattenText,
  groupToolResults,
  isInlineImage,
  mediaReference,
  messagesOf,
  pairToolResults,
  partKey,
} from "./adapter-input.js";
import type { RenderedMessage } from "./rendered-prompt.js";

/** Options of the Anthropic adapter. */
export interface AnthropicMessagesOptions {
  /** Indices of neutral messages after which the prompt cache should break (Anthropic allows 4 per request). */
  readonly cacheBreakpoints?: ReadonlyArray<number>;
}

/** The part of a Messages request body this adapter produces. */
export interface AnthropicMessagesRequest {
  system?: string | TextBlockParam[];
  messages: MessageParam[];
  /**
   * Never set by the adapter: the harness adds its extended-thinking setting before sending, and the validator
   * then checks Anthropic's thinking rule for the tool-use cycle in progress.
   */
  thinking?: ThinkingConfigParam;
}

/** Text of the user message put first when the history starts with the assistant. */
export const CONVERSATION_CONTINUES = "(conversation continues)";
/** Text of the block put in a message that would otherwise have none. */
export const EMPTY_MESSAGE = "(empty)";

type CacheableBlock = TextBlockParam | ImageBlockParam | ToolUseBlockParam | ToolResultBlockParam;

interface SourcedBlock {
  readonly block: ContentBlockParam;
  readonly sourceIndex: number;
}

interface Turn {
  readonly role: "user" | "assistant";
  readonly results: SourcedBlock[];
  readonly blocks: SourcedBlock[];
}

/** Converts a rendered prompt (or its messages) to the `system` and `messages` of an Anthropic request. */
export function toAnthropicMessages(
  source: AdapterSource,
  options: AnthropicMessagesOptions = {},
): AnthropicMessagesRequest {
  const entries = groupToolResults(withUniqueCallIds(messagesOf(source)));
  const system: SourcedBlock[] = [];
  let start = 0;
  while (entries[start]?.role === "system") {
    const entry = entries[start]!;
    const text = flattenText(entry.parts);
    if (text.trim() !== "") system.push({ block: { type: "text", text }, sourceIndex: entry.sourceIndex });
    start += 1;
  }
  const turns = buildTurns(entries.slice(start));
  const ordered = [...system, ...turns.flatMap((t) => [...t.results, ...t.blocks])];
  const cached = cacheTargets(ordered, options.cacheBreakpoints ?? []);
  const finish = (b: SourcedBlock): ContentBlockParam => withCache(b.block, cached);
  const messages: MessageParam[] = turns.map((turn) => ({
    role: turn.role,
    content: [...turn.results, ...turn.blocks].map(finish),
  }));
  if (system.length === 0) return { messages };
  return { system: system.map((b) => finish(b) as TextBlockParam), messages };
}

function buildTurns(entries: ReadonlyArray<AdapterEntry>): Turn[] {
  const turns: Turn[] = [];
  for (const entry of entries) {
    const role = entry.role === "assistant" ? "assistant" : "user";
    let turn = turns[turns.length - 1];
    if (turn === undefined || turn.role !== role) {
      turn = { role, results: [], blocks: [] };
      turns.push(turn);
    }
    const sourced = (block: ContentBlockParam): SourcedBlock => ({ block, sourceIndex: entry.sourceIndex });
    if (role === "assistant") turn.blocks.push(...assistantBlocks(entry.parts).map(sourced));
    else {
      turn.results.push(
        ...entry.parts.flatMap((p) => (p.type === "tool_result" ? [toolResultBlock(p)] : [])).map(sourced),
      );
      turn.blocks.push(...userBlocks(entry).map(sourced));
    }
  }
  if (turns[0]?.role === "assistant") {
    turns.unshift({
      role: "user",
      results: [],
      blocks: [{ block: textBlock(CONVERSATION_CONTINUES), sourceIndex: -1 }],
    });
  }
  for (const turn of turns) {
    if (turn.results.length + turn.blocks.length === 0) {
      turn.blocks.push({ block: textBlock(EMPTY_MESSAGE), sourceIndex: -1 });
    }
  }
  return turns;
}

function textBlock(text: string): TextBlockParam {
  return { type: "text", text };
}

function userBlocks(entry: AdapterEntry): ContentBlockParam[] {
  if (entry.role === "system") {
    const text = flattenText(entry.parts);
    return text.trim() === "" ? [] : [textBlock(`[system] ${text}`)];
  }
  const blocks: ContentBlockParam[] = [];
  for (const part of entry.parts) {
    if (part.type === "text" && part.text.trim() !== "") blocks.push(textBlock(part.text));
    if (part.type === "media") blocks.push(mediaBlock(part));
  }
  return blocks;
}

function assistantBlocks(parts: ReadonlyArray<Part>): ContentBlockParam[] {
  const thinking: ContentBlockParam[] = [];
  const rest: ContentBlockParam[] = [];
  for (const part of parts) {
    if (part.type === "reasoning") thinking.push(...thinkingBlock(part));
    else if (part.type === "text" && part.text.trim() !== "") rest.push(textBlock(part.text));
    else if (part.type === "media") rest.push(textBlock(mediaReference(part)));
    else if (part.type === "tool_call") {
      rest.push({ type: "tool_use", id: part.callId, name: part.name, input: toolInput(part.args) });
    }
  }
  return [...thinking, ...rest];
}

function thinkingBlock(part: ReasoningPart): ContentBlockParam[] {
  if (part.redacted !== undefined) return [{ type: "redacted_thinking", data: part.redacted }];
  if (part.signature !== undefined)
    return [{ type: "thinking", thinking: part.text, signature: part.signature }];
  return [];
}

/** The `input` of a tool_use block: the argument object, `{}` for empty args, `{ _raw }` for anything else. */
export function toolInput(args: string): Record<string, unknown> {
  if (args.trim() === "") return {};
  try {
    const value: unknown = JSON.parse(args);
    if (value !== null && typeof value === "object" && !Array.isArray(value))
      return value as Record<string, unknown>;
  } catch {
    // not JSON: sent raw below
  }
  return { _raw: args };
}

function toolResultBlock(result: ToolResultPart): ToolResultBlockParam {
  const block: ToolResultBlockParam = { type: "tool_result", tool_use_id: result.callId };
  const hasOutput = result.content.trim() !== "";
  if (result.isError !== true) return hasOutput ? { ...block, content: result.content } : block;
  return { ...block, content: hasOutput ? result.content : "(no output)", is_error: true };
}

const BASE64_IMAGE = /^data:(image\/(?:jpeg|png|gif|webp));base64,(.*)$/s;

function mediaBlock(part: MediaPart): ContentBlockParam {
  if (!isInlineImage(part)) return textBlock(mediaReference(part));
  const inline = BASE64_IMAGE.exec(part.uri);
  if (inline !== null) {
    const mediaType = inline[1] as "image/jpeg" | "image/png" | "image/gif" | "image/webp";
    return { type: "image", source: { type: "base64", media_type: mediaType, data: inline[2] ?? "" } };
  }
  if (part.uri.startsWith("data:")) return textBlock(mediaReference(part));
  return { type: "image", source: { type: "url", url: part.uri } };
}

/** A valid Anthropic tool-use id for a call id: characters outside `[a-zA-Z0-9_-]` become `_`. */
function sanitizeId(id: string): string {
  const clean = id.replace(/[^a-zA-Z0-9_-]/g, "_");
  return clean === "" ? "call" : clean;
}

/** Rewrites call ids so each is unique and valid, and each result follows its paired call's new id. */
function withUniqueCallIds(messages: ReadonlyArray<RenderedMessage>): ReadonlyArray<RenderedMessage> {
  const used = new Set<string>();
  const ids = new Map<string, string>();
  messages.forEach((message, m) => {
    message.parts.forEach((part, p) => {
      if (part.type !== "tool_call") return;
      const base = sanitizeId(part.callId);
      let id = base;
      for (let n = 2; used.has(id); n += 1) id = `${base}_${n}`;
      used.add(id);
      ids.set(partKey(m, p), id);
    });
  });
  const pairs = pairToolResults(messages);
  const idOf = (part: Part, m: number, p: number): string | undefined => {
    if (part.type === "tool_call") return ids.get(partKey(m, p));
    if (part.type !== "tool_result") return undefined;
    const pair = pairs.get(partKey(m, p));
    return pair === undefined ? sanitizeId(part.callId) : ids.get(partKey(pair.call.message, pair.call.part));
  };
  let changed = false;
  const out = messages.map((message, m) => {
    let parts: Part[] | undefined;
    message.parts.forEach((part, p) => {
      if (part.type !== "tool_call" && part.type !== "tool_result") return;
      const id = idOf(part, m, p);
      if (id === undefined || id === part.callId) return;
      parts ??= [...message.parts];
      parts[p] = { ...part, callId: id };
    });
    if (parts === undefined) return message;
    changed = true;
    return { ...message, parts };
  });
  return changed ? out : messages;
}

function isCacheable(block: ContentBlockParam): block is CacheableBlock {
  return (
    block.type === "text" ||
    block.type === "image" ||
    block.type === "tool_use" ||
    block.type === "tool_result"
  );
}

/**
 * The blocks that get `cache_control`: for each breakpoint index, the last cacheable block (in request order)
 * of the latest neutral message at or before that index that produced one.
 */
function cacheTargets(
  ordered: ReadonlyArray<SourcedBlock>,
  breakpoints: ReadonlyArray<number>,
): Set<ContentBlockParam> {
  const targets = new Set<ContentBlockParam>();
  for (const index of breakpoints) {
    let best: SourcedBlock | undefined;
    for (const candidate of ordered) {
      if (!isCacheable(candidate.block) || candidate.sourceIndex > index || candidate.sourceIndex < 0)
        continue;
      if (best === undefined || candidate.sourceIndex >= best.sourceIndex) best = candidate;
    }
    if (best !== undefined) targets.add(best.block);
  }
  return targets;
}

function withCache(block: ContentBlockParam, targets: ReadonlySet<ContentBlockParam>): ContentBlockParam {
  if (!targets.has(block) || !isCacheable(block)) return block;
  return { ...block, cache_control: { type: "ephemeral" } };
}
