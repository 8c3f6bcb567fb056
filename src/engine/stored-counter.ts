import { BoundedCache } from "../tokens/bounded-cache.js";
import type { CountableMessage, MessageCounter } from "../tokens/tokenizer.js";

/** A message counter that also answers from token counts read back from the log store. */
export interface StoredCounter extends MessageCounter {
  /** The counter that tokenizes what was not seeded. */
  readonly inner: MessageCounter;
  /** Remembers the count stored beside a message, keyed by the message's content hash. */
  seed(contentHash: string, tokens: number): void;
}

/**
 * Wraps a counter so counts stored beside log messages are used instead of tokenizing again: a stateless worker
 * loading a long thread then tokenizes nothing it has stored. The id is the inner counter's, so renders and
 * stored counts stay comparable.
 */
export function createStoredCounter(inner: MessageCounter, capacity = 200_000): StoredCounter {
  const seeded = new BoundedCache<string, number>(capacity);
  return {
    inner,
    id: inner.id,
    requestOverhead: inner.requestOverhead,
    seed(contentHash, tokens) {
      seeded.set(contentHash, tokens);
    },
    countMessage(message: CountableMessage, contentHash?: string): number {
      if (contentHash !== undefined) {
        const hit = seeded.get(contentHash);
        if (hit !== undefined) return hit;
      }
      return inner.countMessage(message, contentHash);
    },
  };
}
