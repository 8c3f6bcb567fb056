/**
 * The keep-newest window of the retention benchmark (our own baseline): every system message, then the newest
 * groups that still fit the budget, where an assistant message with tool calls and the tool messages answering
 * it form one group that is kept or dropped whole. Nothing is summarized, cleared or cut.
 */
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { OpenAIChatRequest } from "../../src/render/openai-chat-adapter.js";
import type { ChatCounter } from "./quality-judge.js";

/** Message index ranges [start, end) of the groups, in order. */
function groupsOf(chat: ReadonlyArray<ChatCompletionMessageParam>): Array<[number, number]> {
  const groups: Array<[number, number]> = [];
  for (let i = 0; i < chat.length; ) {
    const m = chat[i]!;
    let end = i + 1;
    if (m.role === "assistant" && (m.tool_calls?.length ?? 0) > 0) {
      while (end < chat.length && chat[end]!.role === "tool") end++;
    }
    groups.push([i, end]);
    i = end;
  }
  return groups;
}

/** The request keep-newest sends for `chat` under `budget` tokens (by `counts`, framing included). */
export function keepNewest(
  chat: ReadonlyArray<ChatCompletionMessageParam>,
  budget: number,
  counts: ChatCounter,
): OpenAIChatRequest {
  const tokensOf = (from: number, to: number): number => {
    let sum = 0;
    for (let i = from; i < to; i++) sum += counts.count(JSON.stringify(chat[i]), chat[i]!);
    return sum;
  };
  const groups = groupsOf(chat);
  const keep = new Uint8Array(groups.length);
  let used = counts.counter.requestOverhead;
  groups.forEach(([from, to], g) => {
    if (chat[from]!.role !== "system") return;
    keep[g] = 1;
    used += tokensOf(from, to);
  });
  for (let g = groups.length - 1; g >= 0; g--) {
    if (keep[g] === 1) continue;
    const [from, to] = groups[g]!;
    const size = tokensOf(from, to);
    if (used + size > budget) break;
    keep[g] = 1;
    used += size;
  }
  return { messages: groups.flatMap(([from, to], g) => (keep[g] === 1 ? chat.slice(from, to) : [])) };
}
