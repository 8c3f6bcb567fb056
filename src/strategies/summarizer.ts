import type { Message } from "../log/message.js";
import type { StructuredSummary } from "../plan/compaction-plan.js";

/** What a summarizer is asked to condense. */
export interface SummaryRequest {
  readonly threadId: string;
  /** The span's messages in log order (messages the plan already drops are not included). */
  readonly messages: ReadonlyArray<Message>;
  /**
   * An earlier summary that the new one absorbs (its span is part of this one): its content must survive in
   * the new summary, since the messages it stood for are not repeated in `messages`.
   */
  readonly previous?: SummaryResult;
  /** The summary's text should stay within this many tokens. */
  readonly maxTokens: number;
  /**
   * How the caller counts `maxTokens` (the renderer's tokenizer); a summarizer that measures its own text
   * should use it rather than an estimate.
   */
  readonly countTokens?: (text: string) => number;
  /**
   * The messages the request still shows verbatim besides the span: the system prompt, pinned messages and the
   * kept tail (context only, never to be summarized). What they show needs no room in the summary.
   */
  readonly tail?: ReadonlyArray<Message>;
  readonly signal?: AbortSignal;
}

/** A usable summary: the text the model sees plus its structure. */
export interface SummaryResult {
  readonly text: string;
  readonly structured: StructuredSummary;
}

/**
 * Condenses a span of messages into a structured summary (goals, decisions, constraints, open items, tool
 * outcomes, artifact references). A summarizer throws `SummarizerError` when it cannot produce a usable
 * summary (timeout, rate limit, server error, empty or malformed output); it never returns error text as a
 * summary. `id` and `promptVersion` are part of the summary cache key and of the plan's record.
 *
 * @example
 * const summarizer = createExtractiveSummarizer();
 * const { text, structured } = await summarizer.summarize({ threadId, messages, maxTokens: 800 });
 */
export interface Summarizer {
  /** Stable identity, e.g. `extractive` or `openai:gpt-4o-mini`. */
  readonly id: string;
  /** Changes whenever the prompt or the extraction rules change, so cached summaries are not reused. */
  readonly promptVersion: string;
  /**
   * True when it runs in process without a model call (the extractive one): an engine whose summaries are all
   * local makes them inside the turn by default, since there is no model call to keep off the turn's path.
   */
  readonly local?: boolean;
  summarize(request: SummaryRequest): Promise<SummaryResult>;
}

/**
 * Where summarization keeps the summaries it made, so the same span is never summarized twice: the part of a
 * summary cache a strategy uses (the stores' `SummaryCache` is one). Keys come from {@link summaryCacheKey}.
 */
export interface SummaryCachePort {
  get(key: string): Promise<SummaryResult | undefined>;
  set(key: string, summary: SummaryResult): Promise<void>;
}

/** The cache key of a summary: the span's content hash, the summarizer and its prompt version. */
export function summaryCacheKey(spanHash: string, summarizerId: string, promptVersion: string): string {
  return `${summarizerId}\u0000${promptVersion}\u0000${spanHash}`;
}
