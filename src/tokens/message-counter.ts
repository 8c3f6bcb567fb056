import type { Part, PartType } from "../log/message.js";
import { BoundedCache } from "./bounded-cache.js";
import type { CountableMessage, MessageCounter, Tokenizer } from "./tokenizer.js";

/** The built-in overhead profiles. */
export type OverheadProfileName = "openai" | "anthropic" | "neutral";

/**
 * Tokens a provider adds around message content. Only OpenAI publishes a recipe (3 per message, the role, 1 per
 * name, 3 to prime the reply); the other figures are documented estimates meant to err slightly high, and
 * calibration against reported usage corrects what is left.
 */
export interface OverheadProfile {
  readonly name: string;
  /** Framing tokens per message. */
  readonly perMessage: number;
  /** Whether the role string itself is tokenized into the message (OpenAI chat format). */
  readonly countsRole: boolean;
  /** Extra tokens when a message carries a `name` (its text is counted too). */
  readonly perName: number;
  /** Tokens per request, e.g. the assistant reply priming. */
  readonly requestOverhead: number;
  /** Framing per tool call, on top of its name and argument tokens. */
  readonly perToolCall: number;
  /** Framing per tool result, on top of its content tokens. */
  readonly perToolResult: number;
  /**
   * False when the format never sends reasoning back (OpenAI Chat Completions): no reasoning is counted then.
   * Default true.
   */
  readonly sendsReasoning?: boolean;
  /** Framing per reasoning block, on top of its text. */
  readonly perReasoning: number;
  /** Fixed estimate per media part (images, audio, files): their real cost depends on data we never see. */
  readonly perMedia: number;
}

/**
 * The built-in profiles. `openai` follows OpenAI's published chat recipe; a tool call costs its name and
 * arguments plus 8 (the function-call wrapper) and media 765 (a 1024×1024 high-detail image). `anthropic`
 * uses 5 per message, 10 per tool-use block, 6 per tool result and 1,600 per image (≈1.15 megapixels / 750,
 * Anthropic's image ceiling); with no public tokenizer, its text counts are estimates anyway. `neutral` counts
 * content only, no framing, media at 765.
 */
export const OVERHEAD_PROFILES: Readonly<Record<OverheadProfileName, OverheadProfile>> = Object.freeze({
  openai: {
    name: "openai",
    sendsReasoning: false,
    perMessage: 3,
    countsRole: true,
    perName: 1,
    requestOverhead: 3,
    perToolCall: 8,
    perToolResult: 4,
    perReasoning: 0,
    perMedia: 765,
  },
  anthropic: {
    name: "anthropic",
    perMessage: 5,
    countsRole: false,
    perName: 1,
    requestOverhead: 3,
    perToolCall: 10,
    perToolResult: 6,
    perReasoning: 4,
    perMedia: 1600,
  },
  neutral: {
    name: "neutral",
    perMessage: 0,
    countsRole: false,
    perName: 0,
    requestOverhead: 0,
    perToolCall: 0,
    perToolResult: 0,
    perReasoning: 0,
    perMedia: 765,
  },
});

type PartCounter<K extends PartType> = (
  part: Extract<Part, { type: K }>,
  tokenizer: Tokenizer,
  profile: OverheadProfile,
) => number;

/**
 * One counter per part kind, so a new kind is a compile error until it is counted. Reasoning counts its text
 * only: a provider `signature` or `redacted` payload is an opaque, encrypted byte string that is passed back
 * verbatim, not model text we can tokenize. Reasoning that no adapter sends (neither a signature nor an encrypted
 * payload) and any reasoning of a format that sends none (`sendsReasoning: false`) count nothing: the request the
 * provider receives does not hold it.
 */
const PART_COUNTERS: { readonly [K in PartType]: PartCounter<K> } = {
  text: (part, t) => t.count(part.text),
  tool_call: (part, t, p) => t.count(part.name) + t.count(part.args) + p.perToolCall,
  tool_result: (part, t, p) => t.count(part.content) + p.perToolResult,
  reasoning: (part, t, p) =>
    p.sendsReasoning === false || (part.signature === undefined && part.redacted === undefined)
      ? 0
      : t.count(part.text) + p.perReasoning,
  media: (_part, _t, p) => p.perMedia,
};

function countPart(part: Part, tokenizer: Tokenizer, profile: OverheadProfile): number {
  return (PART_COUNTERS[part.type] as PartCounter<PartType>)(part as never, tokenizer, profile);
}

/** A `name` some chat formats attach to a message; not part of {@link CountableMessage}, read when present. */
function nameOf(message: CountableMessage): string | undefined {
  const name = (message as { readonly name?: unknown }).name;
  return typeof name === "string" ? name : undefined;
}

/** Options of {@link createMessageCounter}. */
export interface MessageCounterOptions {
  /** Counts remembered per cache generation (default 200,000, enough for long threads to be tokenized once; 0 disables the cache). */
  readonly cacheSize?: number;
}

/**
 * Builds a {@link MessageCounter} from a tokenizer and an overhead profile. Counts are cached by the caller's
 * content hash (messages in the log are immutable, so each is tokenized once); without a hash nothing is
 * cached. The id is `${tokenizer.id}+${profile name}`.
 *
 * @example
 * const counter = createMessageCounter(createTokenizer({ model: "gpt-4o" }), "openai");
 * counter.countMessage({ role: "user", parts: [{ type: "text", text: "hello world" }] }); // 3 + 1 + 2 = 6
 */
export function createMessageCounter(
  tokenizer: Tokenizer,
  profile: OverheadProfileName | OverheadProfile,
  options: MessageCounterOptions = {},
): MessageCounter {
  const p = typeof profile === "string" ? OVERHEAD_PROFILES[profile] : profile;
  const cache = new BoundedCache<string, number>(options.cacheSize ?? 200_000);
  const count = (message: CountableMessage): number => {
    let total = p.perMessage + (p.countsRole ? tokenizer.count(message.role) : 0);
    const name = nameOf(message);
    if (name !== undefined) total += tokenizer.count(name) + p.perName;
    for (const part of message.parts) total += countPart(part, tokenizer, p);
    return total;
  };
  return {
    id: `${tokenizer.id}+${p.name}`,
    requestOverhead: p.requestOverhead,
    countMessage(message: CountableMessage, contentHash?: string): number {
      if (contentHash === undefined) return count(message);
      const hit = cache.get(contentHash);
      if (hit !== undefined) return hit;
      const n = count(message);
      cache.set(contentHash, n);
      return n;
    },
  };
}
