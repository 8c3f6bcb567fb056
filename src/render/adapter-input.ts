/**
 * What every provider adapter does to the neutral messages before it builds a request: pair tool results with
 * their calls and move each call's results right behind the assistant message that made the call.
 */
import type { MediaPart, Part, Role, ToolCallPart, ToolResultPart } from "../log/message.js";
import type { RenderedMessage, RenderedPrompt } from "./rendered-prompt.js";

/** What an adapter accepts: a whole rendered prompt or just its messages. */
export type AdapterSource = RenderedPrompt | ReadonlyArray<RenderedMessage>;

/** One message as an adapter sees it: a neutral role, its parts and the index of the message it came from. */
export interface AdapterEntry {
  readonly sourceIndex: number;
  readonly role: Role;
  readonly parts: ReadonlyArray<Part>;
}

/** Where a part sits: the message index and the part index inside that message. */
export interface PartRef {
  readonly message: number;
  readonly part: number;
}

/** A tool result and the call it answers. */
export interface ToolPair {
  readonly call: PartRef;
  readonly result: PartRef;
}

function isMessageList(source: AdapterSource): source is ReadonlyArray<RenderedMessage> {
  return Array.isArray(source);
}

/** The neutral messages of an adapter's input. */
export function messagesOf(source: AdapterSource): ReadonlyArray<RenderedMessage> {
  return isMessageList(source) ? source : source.messages;
}

/** Key of a part reference, usable in maps. */
export function partKey(message: number, part: number): string {
  return `${message}:${part}`;
}

/**
 * Pairs every tool result with the nearest earlier call that has the same id and is still unanswered (call ids
 * may be reused once answered, so a global id map would be wrong). Keyed by the result's `partKey`; results
 * without such a call are absent.
 */
export function pairToolResults(
  messages: ReadonlyArray<{ readonly parts: ReadonlyArray<Part> }>,
): ReadonlyMap<string, ToolPair> {
  const open = new Map<string, PartRef[]>();
  const pairs = new Map<string, ToolPair>();
  messages.forEach((message, m) => {
    message.parts.forEach((part, p) => {
      if (part.type === "tool_call") {
        const stack = open.get(part.callId) ?? [];
        stack.push({ message: m, part: p });
        open.set(part.callId, stack);
      } else if (part.type === "tool_result") {
        const call = open.get(part.callId)?.pop();
        if (call !== undefined) pairs.set(partKey(m, p), { call, result: { message: m, part: p } });
      }
    });
  });
  return pairs;
}

/**
 * Orders messages for providers that want a call's results right after the call: each assistant message with
 * tool calls is followed by one `tool` entry per message holding its results (in log order), and those results
 * are removed from where they were. Everything else keeps its order; a message left empty by the move is
 * skipped. For a log where results already follow their calls, the entries are the messages unchanged.
 */
export function groupToolResults(messages: ReadonlyArray<RenderedMessage>): ReadonlyArray<AdapterEntry> {
  if (resultsInPlace(messages)) return messages.map(entryOf);
  const pairs = pairToolResults(messages);
  const resultsByCallMessage = new Map<number, PartRef[]>();
  for (const { call, result } of pairs.values()) {
    const list = resultsByCallMessage.get(call.message) ?? [];
    list.push(result);
    resultsByCallMessage.set(call.message, list);
  }
  const moved = new Set<string>();
  const entries: AdapterEntry[] = [];
  messages.forEach((message, m) => {
    const remaining = message.parts.filter((_, p) => !moved.has(partKey(m, p)));
    if (remaining.length > 0 || message.parts.length === 0) {
      entries.push(
        remaining.length === message.parts.length
          ? entryOf(message, m)
          : { ...entryOf(message, m), parts: remaining },
      );
    }
    const results = resultsByCallMessage.get(m);
    if (results !== undefined) entries.push(...resultEntries(messages, results, moved));
  });
  return entries;
}

/**
 * True when every tool result already sits in a tool message right after the assistant message holding its
 * call (only such tool messages in between) — what `renderPrompt` always produces. Pairing then matches the
 * general rule (the nearest unanswered call is in the latest assistant message), so nothing needs moving.
 */
export function resultsInPlace(messages: ReadonlyArray<RenderedMessage>): boolean {
  // Indexed loops: this runs over every message of every request, and for-of over frozen arrays is slow in V8.
  const open = new Set<string>();
  for (let m = 0; m < messages.length; m++) {
    const message = messages[m]!;
    const parts = message.parts;
    if (message.role === "tool") {
      for (let p = 0; p < parts.length; p++) {
        const part = parts[p]!;
        if (part.type !== "tool_result" || !open.delete(part.callId)) return false;
      }
      continue;
    }
    if (open.size > 0) open.clear();
    for (let p = 0; p < parts.length; p++) {
      const part = parts[p]!;
      if (part.type === "tool_result") return false;
      if (part.type === "tool_call") open.add(part.callId);
    }
  }
  return true;
}

function entryOf(message: RenderedMessage, index: number): AdapterEntry {
  return { sourceIndex: index, role: message.role, parts: message.parts };
}

/** One `tool` entry per source message, results in log order; marks the moved parts. */
function resultEntries(
  messages: ReadonlyArray<RenderedMessage>,
  results: ReadonlyArray<PartRef>,
  moved: Set<string>,
): AdapterEntry[] {
  const sorted = [...results].sort((a, b) => a.message - b.message || a.part - b.part);
  const entries: AdapterEntry[] = [];
  for (const ref of sorted) {
    const part = messages[ref.message]?.parts[ref.part];
    if (part === undefined) continue;
    moved.add(partKey(ref.message, ref.part));
    const last = entries[entries.length - 1];
    if (last !== undefined && last.sourceIndex === ref.message) {
      entries[entries.length - 1] = { ...last, parts: [...last.parts, part] };
    } else {
      entries.push({ sourceIndex: ref.message, role: "tool", parts: [part] });
    }
  }
  return entries;
}

/** The tool calls among some parts. */
export function callsIn(parts: ReadonlyArray<Part>): ReadonlyArray<ToolCallPart> {
  return parts.filter((p): p is ToolCallPart => p.type === "tool_call");
}

/** The tool results among some parts. */
export function resultsIn(parts: ReadonlyArray<Part>): ReadonlyArray<ToolResultPart> {
  return parts.filter((p): p is ToolResultPart => p.type === "tool_result");
}

/** Whether a media part is an image a provider can fetch itself: an `http(s):` or `data:` URL. */
export function isInlineImage(part: MediaPart): boolean {
  return part.mediaType.startsWith("image/") && /^(https?:|data:)/i.test(part.uri);
}

/** A one-line text stand-in for media a provider cannot take inline, e.g. `[media application/pdf: s3://b/k]`. */
export function mediaReference(part: MediaPart): string {
  const alt = part.alt !== undefined && part.alt !== "" ? ` (${part.alt})` : "";
  return `[media ${part.mediaType}: ${part.uri}]${alt}`;
}

/**
 * The text of some parts as one string: text parts concatenated exactly (like `textOf`), media as reference
 * lines; calls, results and reasoning are ignored. Only-text input gives exactly `textOf`.
 */
export function flattenText(parts: ReadonlyArray<Part>): string {
  let out = "";
  for (const part of parts) {
    if (part.type === "text") out += part.text;
    else if (part.type === "media")
      out += (out === "" || out.endsWith("\n") ? "" : "\n") + mediaReference(part);
  }
  return out;
}
