import type { Part, Role } from "../log/message.js";

/**
 * Counts tokens of plain text. Implementations must be deterministic and must treat special-token strings such
 * as `<|endoftext|>` as ordinary text (tool output can contain them), never throwing on any input.
 *
 * @example
 * const tokenizer = createTokenizer({ model: "gpt-4o" });
 * tokenizer.count("hello world"); // 2
 */
export interface Tokenizer {
  /** Stable identity, part of every cache key (e.g. `bpe:o200k_base`, `estimate:chars/4`). */
  readonly id: string;
  count(text: string): number;
}

/** The shape of anything whose tokens can be counted as a chat message. */
export interface CountableMessage {
  readonly role: Role;
  readonly parts: ReadonlyArray<Part>;
}

/**
 * Counts whole chat messages, including the provider's per-message framing overhead, and caches counts by
 * content hash: the log is immutable, so a message is tokenized once, ever.
 *
 * @example
 * const counter = createMessageCounter(createTokenizer({ model: "gpt-4o" }), "openai");
 * counter.countMessage(log.messages[0], log.messages[0].hash);
 */
export interface MessageCounter {
  /** Tokenizer id plus overhead profile; a render hash only compares across equal ids. */
  readonly id: string;
  /** Tokens added once per request (e.g. the assistant reply priming). */
  readonly requestOverhead: number;
  /** Tokens of one message including its framing. `contentHash`, when given, keys the cache. */
  countMessage(message: CountableMessage, contentHash?: string): number;
}
