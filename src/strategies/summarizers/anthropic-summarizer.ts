/**
 * A summarizer on the Anthropic Messages API, through the official SDK.
 */
import Anthropic from "@anthropic-ai/sdk";
import { SummarizerError } from "../../errors/ledger-error.js";
import type { Summarizer, SummaryRequest, SummaryResult } from "../summarizer.js";
import {
  buildSummaryPrompt,
  callWithDeadline,
  SUMMARY_PROMPT_VERSION,
  summaryFromAnswer,
} from "./summary-format.js";

/** Options of `createAnthropicSummarizer`. */
export interface AnthropicSummarizerOptions {
  readonly model: string;
  /** e.g. `https://api.anthropic.com` (no `/v1`: the SDK adds it). */
  readonly baseURL?: string;
  /** Default: the SDK reads `ANTHROPIC_API_KEY`. */
  readonly apiKey?: string;
  /** A ready client (tests, proxies); `baseURL` and `apiKey` are then ignored. */
  readonly client?: Anthropic;
  /** Total deadline of one summary, SDK retries included (default 60,000 ms). */
  readonly timeoutMs?: number;
  /** SDK retries (default 0: the pipeline has its own attempt limits and cooldown). */
  readonly maxRetries?: number;
  /** Omitted unless given. */
  readonly temperature?: number;
  /** Upper bound of the transcript in the prompt, in characters (default 48,000). */
  readonly maxInputChars?: number;
  /** Token count of a text, to keep the summary within `maxTokens` (default: ceil(chars / 4)). */
  readonly countTokens?: (text: string) => number;
}

/**
 * A `Summarizer` that asks a Claude model for the six-field JSON summary; failures (timeout, 429, 5xx and
 * overload, 4xx, abort, empty or malformed output) throw `SummarizerError` with the matching reason.
 *
 * @example
 * const summarizer = createAnthropicSummarizer({ model: "claude-haiku-4-5", timeoutMs: 30_000 });
 * const { text } = await summarizer.summarize({ threadId, messages, maxTokens: 800 });
 */
export function createAnthropicSummarizer(options: AnthropicSummarizerOptions): Summarizer {
  const id = `anthropic:${options.model}`;
  const timeoutMs = options.timeoutMs ?? 60_000;
  let client = options.client;

  // Built on first use, so a pipeline can be configured without a key and fail as data when it summarizes.
  function clientFor(threadId: string): Anthropic {
    if (client !== undefined) return client;
    try {
      client = new Anthropic({
        ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
        ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
        maxRetries: options.maxRetries ?? 0,
        timeout: timeoutMs,
      });
      return client;
    } catch (error) {
      const problem = `cannot create the Anthropic client (pass apiKey or set ANTHROPIC_API_KEY): ${(error as Error).message}`;
      throw new SummarizerError(id, "failed", problem, { threadId }, { cause: error });
    }
  }

  async function summarize(request: SummaryRequest): Promise<SummaryResult> {
    const where = { threadId: request.threadId };
    if (request.messages.length === 0)
      throw new SummarizerError(id, "empty", "the span has no messages", where);
    const prompt = buildSummaryPrompt(request.messages, {
      maxTokens: request.maxTokens,
      ...(request.previous === undefined ? {} : { previous: request.previous }),
      ...(options.maxInputChars === undefined ? {} : { maxInputChars: options.maxInputChars }),
    });
    const anthropic = clientFor(request.threadId);
    // JSON quoting and keys cost more tokens than the formatted text; the slack keeps the answer from being cut.
    const maxOutput = Math.ceil(request.maxTokens * 1.25) + 256;
    const message = await callWithDeadline(
      id,
      request,
      timeoutMs,
      (signal) =>
        anthropic.messages.create(
          {
            model: options.model,
            max_tokens: maxOutput,
            system: prompt.system,
            messages: [{ role: "user", content: prompt.user }],
            ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
          },
          { signal, timeout: timeoutMs, maxRetries: options.maxRetries ?? 0 },
        ),
      (error) => classify(id, error, request.threadId),
    );
    if (message.stop_reason === "refusal") {
      throw new SummarizerError(id, "empty", "the model refused to summarize (stop_reason refusal)", where);
    }
    const text = message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("");
    const cut = message.stop_reason === "max_tokens";
    if (cut && text.trim() === "") {
      const problem = `the answer hit max_tokens ${maxOutput} before any text`;
      throw new SummarizerError(id, "empty", problem, where);
    }
    return summaryFromAnswer(id, text, { cut, request, countTokens: options.countTokens });
  }

  return Object.freeze({ id, promptVersion: SUMMARY_PROMPT_VERSION, summarize });
}

function classify(id: string, error: unknown, threadId: string): SummarizerError {
  const fail = (reason: SummarizerError["reason"], problem: string) =>
    new SummarizerError(id, reason, problem, { threadId }, { cause: error });
  if (error instanceof Anthropic.APIConnectionTimeoutError) return fail("timeout", "the request timed out");
  if (error instanceof Anthropic.APIUserAbortError) return fail("aborted", "the request was aborted");
  if (error instanceof Anthropic.APIConnectionError) {
    return fail("failed", `cannot reach the API: ${error.message}`);
  }
  if (error instanceof Anthropic.APIError && typeof error.status === "number") {
    const status = error.status;
    const detail = `HTTP ${status}${error.type ? ` ${error.type}` : ""}: ${error.message}`;
    if (status === 429) {
      const retryAfter = error.headers?.get("retry-after");
      return fail("rate_limited", retryAfter ? `${detail} (retry after ${retryAfter} s)` : detail);
    }
    // 529 (overloaded) is a 5xx too: the server, not the request, is the problem.
    if (status >= 500) return fail("server_error", detail);
    if (status >= 400) return fail("bad_request", detail);
  }
  return fail("failed", error instanceof Error ? error.message : String(error));
}
