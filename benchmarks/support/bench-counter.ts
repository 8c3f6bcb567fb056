import { createTokenizer } from "../../src/tokens/create-tokenizer.js";
import { createMessageCounter } from "../../src/tokens/message-counter.js";
import type { MessageCounter } from "../../src/tokens/tokenizer.js";

/**
 * The message counter every render benchmark uses, floor and peers included: exact gpt-4o (o200k_base) counts
 * with OpenAI's message framing, cached by content hash.
 */
export function benchCounter(): MessageCounter {
  return createMessageCounter(createTokenizer({ model: "gpt-4o" }), "openai", { cacheSize: 400_000 });
}
