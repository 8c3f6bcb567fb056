import type { MessageCounter } from "../../src/tokens/tokenizer.js";
import { simpleCounter } from "../../test/support/simple-counter.js";

/** The message counter the render benchmarks use (counts cached by content hash). */
export function benchCounter(): MessageCounter {
  const inner = simpleCounter();
  const cache = new Map<string, number>();
  return {
    id: inner.id,
    requestOverhead: inner.requestOverhead,
    countMessage(message, hash) {
      if (hash === undefined) return inner.countMessage(message);
      let n = cache.get(hash);
      if (n === undefined) {
        n = inner.countMessage(message);
        cache.set(hash, n);
      }
      return n;
    },
  };
}
