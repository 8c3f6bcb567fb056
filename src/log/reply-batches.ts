import type { MessageInput } from "./message.js";

/**
 * Splits a transcript the way a harness appends it: a new batch starts at each assistant message (the reply of a
 * model call), so each batch is one reply plus what followed it (tool results, a new user request).
 */
export function splitAtReplies(inputs: ReadonlyArray<MessageInput>): MessageInput[][] {
  const batches: MessageInput[][] = [];
  let current: MessageInput[] = [];
  for (const input of inputs) {
    if (input.role === "assistant" && current.length > 0) {
      batches.push(current);
      current = [];
    }
    current.push(input);
  }
  if (current.length > 0) batches.push(current);
  return batches;
}
