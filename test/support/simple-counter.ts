import type { CountableMessage, MessageCounter } from "../../src/tokens/tokenizer.js";

/** A dependency-free counter for tests: 1 token per 4 characters plus 3 per message, no cache. */
export function simpleCounter(): MessageCounter {
  return {
    id: "test:chars/4",
    requestOverhead: 3,
    countMessage(message: CountableMessage): number {
      let chars = 0;
      for (const p of message.parts) {
        if (p.type === "text" || p.type === "reasoning") chars += p.text.length;
        else if (p.type === "tool_call") chars += p.name.length + p.args.length;
        else if (p.type === "tool_result") chars += p.content.length;
        else chars += 85 * 4;
      }
      return 3 + Math.ceil(chars / 4);
    },
  };
}
