/**
 * A summarizer on the OpenAI Chat Completions API (and compatible servers), through the official SDK.
 */
import OpenAI from "openai";
import { SummarizerError } from "../../errors/ledger-error.js";
import type { Summarizer, SummaryRequest, SummaryResult } from "../summarizer.js";
import {
  buildSummaryPrompt,
  callWithDeadline,
  SUMMARY_PROMPT_VERSION,
  summaryFromAnswer,
} from "./summary-format.js";

/** Options of `createOpenAISummarizer`. */
export interface OpenAISummarizerOptions {
  readonly model: string;
  /** e.g. `https://api.openai.com/v1` or a compatible server's `/v1` URL. */
  readonly baseURL?: string;
  /** Default: the SDK reads `OPENAI_API_KEY`. */
  readonly apiKey?: string;
  /** A ready client (tests, proxies); `baseURL` and `apiKey` are then ignored. */
  readonly client?: OpenAI;
  /** Total deadline of one summary, SDK retries included (default 60,000 ms). */
  readonly timeoutMs?: number;
  /** SDK retries (default 0: the pipeline has its own attempt limits and cooldown). */
  readonly maxRetries?: number;
  /** Omitted unless given, since reasoning models reject it. */
  readonly temperature?: number;
  /** Ask for `response_format: { type: "json_object" }` (default true). */
  readonly jsonMode?: boolean;
  /** Upper bound of the transcript in the prompt, in characters (default 48,000). */
  readonly maxInputChars?: number;
  /** Token count of a text, to keep the summary within `maxTokens` (default: ceil(chars / 4)). */
  readonly countTokens?: (text: string) => number;
}

/**
 * A `Summarizer` that asks an OpenAI chat model for the six-field JSON summary; failures (timeout, 429, 5xx,
 * 4xx, abort, empty or malformed output) throw `SummarizerError` with the matching reason.
 *
 * @example
 * const summarizer = createOpenAISummarizer({ model: "gpt-4o-mini", timeoutMs: 30_000 });
 * const { text } = await summarizer.summarize({ threadId, messages, maxTokens: 800 });
 */
export function createOpenAISummarizer(options: OpenAISummarizerOptions): Summarizer {
  const id = `openai:${options.model}`;
  const timeoutMs = options.timeoutMs ?? 60_000;
  let client = options.client;

  // Built on first use, so a pipeline can be configured without a key and fail as data when it summarizes.
  function clientFor(threadId: string): OpenAI {
    if (client !== undefined) return client;
    try {
      client = new OpenAI({
        ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
        ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
        maxRetries: options.maxRetries ?? 0,
        timeout: timeoutMs,
      });
      return client;
    } catch (error) {
      const problem = `cannot create the OpenAI client (pass apiKey or set OPENAI_API_KEY): ${(error as Error).message}`;
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
    const openai = clientFor(request.threadId);
    // JSON quoting and keys cost more tokens than the formatted text; the slack keeps the answer from being cut.
    const maxOutput = Math.ceil(request.maxTokens * 1.25) + 256;
    const completion = await callWithDeadline(
      id,
      request,
      timeoutMs,
      (signal) =>
        openai.chat.completions.create(
          {
            model: options.model,
            messages: [
              { role: "system", content: prompt.system },
              { role: "user", content: prompt.user },
            ],
            max_completion_tokens: maxOutput,
            ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
            ...(options.jsonMode === false ? {} : { response_format: { type: "json_object" as const } }),
          },
          { signal, timeout: timeoutMs, maxRetries: options.maxRetries ?? 0 },
        ),
      (error) => classify(id, error, request.threadId),
    );
    const choice = completion.choices[0];
    if (choice === undefined) throw new SummarizerError(id, "empty", "the response has no choices", where);
    const { content, refusal } = choice.message;
    if (refusal) throw new SummarizerError(id, "empty", `the model refused: ${refusal.slice(0, 200)}`, where);
    const cut = choice.finish_reason === "length";
    if (cut && (content ?? "").trim() === "") {
      const problem = `the answer hit max_completion_tokens ${maxOutput} before any text (reasoning used it up?)`;
      throw new SummarizerError(id, "empty", problem, where);
    }
    return summaryFromAnswer(id, content, { cut, request, countTokens: options.countTokens });
  }

  return Object.freeze({ id, promptVersion: SUMMARY_PROMPT_VERSION, summarize });
}

function classify(id: string, error: unknown, threadId: string): SummarizerError {
  const where = { threadId };
  const fail = (reason: SummarizerError["reason"], problem: string) =>
    new SummarizerError(id, reason, problem, where, { cause: error });
  if (error instanceof OpenAI.APIConnectionTimeoutError) return fail("timeout", "the request timed out");
  if (error instanceof OpenAI.APIUserAbortError) return fail("aborted", "the request was aborted");
  if (error instanceof OpenAI.APIConnectionError) {
    return fail("failed", `cannot reach the API: ${error.message}`);
  }
  if (error instanceof OpenAI.APIError && typeof error.status === "number") {
    const status = error.status;
    const detail = `HTTP ${status}: ${error.message}`;
    if (status === 429) {
      const retryAfter = error.headers?.get("retry-after");
      return fail("rate_limited", retryAfter ? `${detail} (retry after ${retryAfter} s)` : detail);
    }
    if (status >= 500) return fail("server_error", detail);
    if (status >= 400) return fail("bad_request", detail);
  }
  return fail("failed", error instanceof Error ? error.message : String(error));
}
