import type { CountableMessage, MessageCounter } from "../../src/tokens/tokenizer.js";

/**
 * The floor every render figure is divided by: per-message chat objects and counts already known, the new
 * messages counted and appended, the tail cut from the end to `budget` (the first message, the system prompt,
 * always kept), and the result JSON.stringified. Mutates `counts` (appends the new counts).
 */
export function floorStep(
  chat: ReadonlyArray<object>,
  counts: number[],
  fresh: ReadonlyArray<CountableMessage>,
  counter: MessageCounter,
  budget: number,
): string {
  for (const m of fresh) counts.push(counter.countMessage(m));
  let used = counter.requestOverhead + counts[0]!;
  let start = counts.length;
  while (start > 1 && used + counts[start - 1]! <= budget) used += counts[--start]!;
  return JSON.stringify({ messages: [chat[0], ...chat.slice(start, counts.length)] });
}
