/**
 * The "tool calls visible" check of the retention benchmark. A call made so far counts as visible when the
 * request still holds a call of the same tool whose main argument starts the same way, or when a synthetic text
 * message (a summary, a collapsed line, an excerpt: any system, user or assistant text that is not the text of a
 * message of the run) names the tool and quotes that start. An original message's own narration does not count:
 * a peer that drops a call but keeps the assistant's text would otherwise score on the text alone.
 *
 * The main argument is the first string value of the call's JSON arguments (e.g. `command` of a bash call), else
 * the whole argument text; its start is its first 32 characters with whitespace runs collapsed to one space (32,
 * not 40: enough to tell commands apart, and a summary line that clips an argument to 39 characters and "…"
 * still matches). Calls with the same signature (same tool, same leading characters) are visible together.
 */
import type { MessageInput } from "../../src/log/message.js";
import type { OpenAIChatRequest } from "../../src/render/openai-chat-adapter.js";

const PREFIX_CHARS = 32;

/** A tool call reduced to what the check compares. */
export interface CallSignature {
  readonly name: string;
  /** The first 32 characters of the main argument, whitespace collapsed (may be empty). */
  readonly prefix: string;
}

/** Whitespace runs collapsed to one space. */
export function collapse(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function mainArgument(args: string): string {
  try {
    const value: unknown = JSON.parse(args);
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      const first = Object.values(value).find((v) => typeof v === "string" && v.trim() !== "");
      return typeof first === "string" ? first : JSON.stringify(value);
    }
  } catch {
    // not JSON: the raw text is the argument
  }
  return args;
}

/** The signature of one call. */
export function signatureOf(name: string, args: string): CallSignature {
  return { name, prefix: collapse(mainArgument(args)).slice(0, PREFIX_CHARS) };
}

const keyOf = (s: CallSignature): string => `${s.name}\u0000${s.prefix}`;

/** The signatures of every tool call in `messages`, in order. */
export function callSignatures(messages: ReadonlyArray<MessageInput>): CallSignature[] {
  const out: CallSignature[] = [];
  for (const m of messages) {
    for (const p of m.parts) if (p.type === "tool_call") out.push(signatureOf(p.name, p.args));
  }
  return out;
}

/** The texts of the run's own messages (each text part, and all of a message's text parts joined). */
export function originalTexts(messages: ReadonlyArray<MessageInput>): Set<string> {
  const out = new Set<string>();
  for (const m of messages) {
    const texts = m.parts.flatMap((p) => (p.type === "text" ? [p.text] : []));
    for (const t of texts) out.add(t);
    out.add(texts.join(""));
  }
  return out;
}

/** How many of `calls` a request still shows (see the module comment); `originals` from {@link originalTexts}. */
export function visibleCalls(
  request: OpenAIChatRequest,
  calls: ReadonlyArray<CallSignature>,
  originals: ReadonlySet<string>,
): number {
  const asCalls = new Set<string>();
  const texts: string[] = [];
  for (const m of request.messages) {
    if (m.role === "assistant") {
      for (const c of m.tool_calls ?? []) {
        if (c.type === "function") asCalls.add(keyOf(signatureOf(c.function.name, c.function.arguments)));
      }
    }
    if (m.role === "tool") continue;
    const content = "content" in m ? m.content : undefined;
    let text = "";
    if (typeof content === "string") text = content;
    else if (Array.isArray(content)) for (const p of content) if (p.type === "text") text += p.text;
    if (text !== "" && !originals.has(text)) texts.push(collapse(text));
  }
  let visible = 0;
  for (const call of calls) {
    if (asCalls.has(keyOf(call))) visible++;
    else if (call.prefix !== "" && texts.some((t) => t.includes(call.prefix) && t.includes(call.name)))
      visible++;
  }
  return visible;
}
