/**
 * Anthropic Messages request rules: the first message is a user message, roles alternate, every tool_use is
 * answered by a tool_result in the very next (user) message where results come first, tool-use ids are unique
 * and well formed, no blank text, thinking only in assistant messages, at most 4 cache breakpoints, and (with
 * extended thinking in use) the thinking of the tool-use cycle in progress still there.
 */
import type { ContentBlockParam, MessageParam, TextBlockParam } from "@anthropic-ai/sdk/resources/messages";

const quote = (s: string): string => JSON.stringify(s);
const list = (ids: Iterable<string>): string => [...ids].map(quote).join(", ");
const typeOf = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

const TOOL_USE_ID = /^[a-zA-Z0-9_-]+$/;
const MAX_CACHE_BREAKPOINTS = 4;

function blocksOf(content: MessageParam["content"]): ReadonlyArray<ContentBlockParam> {
  return typeof content === "string" ? [{ type: "text", text: content }] : content;
}

/** Problems of an Anthropic Messages body: first role, alternation, tool_use / tool_result adjacency, blocks. */
export function validateAnthropicMessages(body: {
  readonly system?: string | ReadonlyArray<TextBlockParam> | undefined;
  readonly messages: ReadonlyArray<MessageParam>;
  /** The request's extended-thinking setting, as the harness sends it (`{ type: "enabled", … }`). */
  readonly thinking?: { readonly type: string } | undefined;
}): string[] {
  const problems: string[] = [];
  const system = typeof body.system === "string" || body.system === undefined ? [] : body.system;
  system.forEach((b, k) => {
    if (b.text.trim() === "") problems.push(`system[${k}]: text block is blank`);
  });
  if (body.messages.length === 0) problems.push("messages is empty: send at least one user message");
  const seenToolUse = new Set<string>();
  let cacheMarks = system.filter((b) => b.cache_control != null).length;
  let expected: { readonly index: number; readonly ids: Set<string> } | undefined;
  body.messages.forEach((message, i) => {
    const at = `messages[${i}]`;
    const role: string = message.role;
    if (role !== "user" && role !== "assistant") {
      problems.push(
        `${at}: role ${quote(role)} is not allowed here (user or assistant; system text goes in \`system\`)`,
      );
    }
    if (i === 0 && role !== "user")
      problems.push(`${at}: the first message must be a user message, not ${role}`);
    const previous = body.messages[i - 1];
    if (previous !== undefined && previous.role === role) {
      problems.push(`${at}: same role (${role}) as messages[${i - 1}]; roles must alternate`);
    }
    const blocks = blocksOf(message.content);
    if (blocks.length === 0) problems.push(`${at}: content is empty`);
    problems.push(...anthropicBlockProblems(blocks, role, at, seenToolUse));
    cacheMarks += blocks.filter((b) => "cache_control" in b && b.cache_control != null).length;
    const answered = new Set<string>();
    blocks.forEach((b, k) => {
      if (b.type !== "tool_result") return;
      if (expected?.ids.has(b.tool_use_id) !== true || answered.has(b.tool_use_id)) {
        problems.push(
          `${at}.content[${k}]: tool_result for ${quote(b.tool_use_id)} has no tool_use in the assistant message right before it`,
        );
      }
      answered.add(b.tool_use_id);
    });
    const missing = [...(expected?.ids ?? [])].filter((id) => !answered.has(id));
    if (expected !== undefined && missing.length > 0) {
      problems.push(
        `messages[${expected.index}]: tool_use ${list(missing)} not answered by a tool_result in ${at}`,
      );
    }
    const uses = blocks.flatMap((b) => (b.type === "tool_use" ? [b.id] : []));
    expected = role === "assistant" && uses.length > 0 ? { index: i, ids: new Set(uses) } : undefined;
  });
  if (expected !== undefined) {
    problems.push(
      `messages[${expected.index}]: tool_use ${list(expected.ids)} never answered: the request ends with it`,
    );
  }
  if (body.thinking?.type === "enabled") problems.push(...thinkingCycleProblems(body.messages));
  if (cacheMarks > MAX_CACHE_BREAKPOINTS) {
    problems.push(`${cacheMarks} blocks carry cache_control; at most ${MAX_CACHE_BREAKPOINTS} are allowed`);
  }
  return problems;
}

function anthropicBlockProblems(
  blocks: ReadonlyArray<ContentBlockParam>,
  role: string,
  at: string,
  seenToolUse: Set<string>,
): string[] {
  const problems: string[] = [];
  let otherSeen = false;
  blocks.forEach((b, k) => {
    const where = `${at}.content[${k}]`;
    if (b.type === "text" && b.text.trim() === "") problems.push(`${where}: text block is blank`);
    if ((b.type === "thinking" || b.type === "redacted_thinking") && role !== "assistant") {
      problems.push(`${where}: ${b.type} block outside an assistant message`);
    }
    if (b.type === "thinking" && b.signature === "")
      problems.push(`${where}: thinking block without a signature`);
    if (b.type === "tool_use") problems.push(...toolUseProblems(b, role, where, seenToolUse));
    if (b.type === "tool_result" && role !== "user")
      problems.push(`${where}: tool_result outside a user message`);
    if (b.type === "tool_result" && otherSeen) {
      problems.push(`${where}: tool_result after other content; tool_result blocks must come first`);
    }
    if (b.type !== "tool_result") otherSeen = true;
  });
  return problems;
}

function toolUseProblems(
  block: { readonly id: string; readonly name: string; readonly input: unknown },
  role: string,
  where: string,
  seen: Set<string>,
): string[] {
  const problems: string[] = [];
  if (role !== "assistant") problems.push(`${where}: tool_use outside an assistant message`);
  if (!TOOL_USE_ID.test(block.id))
    problems.push(`${where}: tool_use id ${quote(block.id)} must match [a-zA-Z0-9_-]+`);
  if (seen.has(block.id))
    problems.push(`${where}: tool_use id ${quote(block.id)} is not unique in the request`);
  seen.add(block.id);
  if (block.name === "") problems.push(`${where}: tool_use has no name`);
  if (typeOf(block.input) !== "object") problems.push(`${where}: tool_use input must be an object`);
  return problems;
}

const isThinking = (b: ContentBlockParam): boolean =>
  (b.type === "thinking" && b.signature !== "") || b.type === "redacted_thinking";

/**
 * Anthropic's rule for extended thinking with tools, checked when the request turns thinking on
 * (`thinking: { type: "enabled" }`): thinking blocks of earlier assistant turns may be left out (the API ignores
 * them), but the assistant turn still in its tool-use cycle must be sent with its thinking, unmodified, at the
 * start of its first message ("a final assistant message must start with a thinking block"). The cycle in
 * progress is the assistant messages after the last user message that holds anything but tool results; when one
 * of them holds a tool_use, the first must start with a signed `thinking` or a `redacted_thinking` block. A
 * request whose compaction kept a call but removed the signed reasoning that led to it fails here. (The content
 * alone cannot tell: a harness may turn thinking off mid-thread, and earlier thinking blocks are then accepted.)
 */
function thinkingCycleProblems(messages: ReadonlyArray<MessageParam>): string[] {
  let start = messages.length;
  while (start > 0) {
    const m = messages[start - 1]!;
    if (m.role === "user" && blocksOf(m.content).some((b) => b.type !== "tool_result")) break;
    start--;
  }
  const first = messages.findIndex((m, i) => i >= start && m.role === "assistant");
  if (first < 0) return [];
  const cycle = messages.slice(first);
  const usesTools = cycle.some(
    (m) => m.role === "assistant" && blocksOf(m.content).some((b) => b.type === "tool_use"),
  );
  const opening = blocksOf(messages[first]!.content)[0];
  if (!usesTools || (opening !== undefined && isThinking(opening))) return [];
  return [
    `messages[${first}]: extended thinking is enabled but the assistant turn in its tool-use cycle does not start with its thinking block; the reasoning that led to its tool_use was removed (Anthropic rejects this)`,
  ];
}
