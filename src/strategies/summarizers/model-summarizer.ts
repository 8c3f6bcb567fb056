/**
 * What the SDK summarizers share: options, the client built on first use, the prompt, the call under a deadline,
 * SDK errors turned into `SummarizerError` reasons, and the answer turned into a summary. A provider adds only its
 * request shape and how to read its response.
 */
import { SummarizerError } from "../../errors/ledger-error.js";
import type { Message } from "../../log/message.js";
import type { Summarizer, SummaryRequest, SummaryResult } from "../summarizer.js";
import { callWithDeadline, summaryFromAnswer } from "./model-answer.js";
import {
  buildSummaryPrompt,
  SUMMARY_PROMPT_VERSION,
  type SummaryPrompt,
  transcriptChunks,
} from "./summary-prompt.js";

/** Options every SDK summarizer takes; `Client` is the provider's SDK client. */
export interface ModelSummarizerOptions<Client> {
  readonly model: string;
  /** The API's base URL (default: the SDK's). */
  readonly baseURL?: string;
  /** Default: the SDK reads its environment variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`). */
  readonly apiKey?: string;
  /** A ready client (tests, proxies); `baseURL` and `apiKey` are then ignored. */
  readonly client?: Client;
  /**
   * Deadline of one request, SDK retries included (default 60,000 ms). A span summarized in chunks makes one
   * request per chunk, each with this deadline.
   */
  readonly timeoutMs?: number;
  /** SDK retries (default 0: the pipeline has its own attempt limits and cooldown). */
  readonly maxRetries?: number;
  /** Omitted unless given, since some reasoning models reject it. */
  readonly temperature?: number;
  /**
   * Upper bound of the transcript in one request, in characters (default 48,000). A longer span is summarized in
   * chunks that each fit, every chunk absorbing the previous chunk's summary, so the model reads every message.
   */
  readonly maxInputChars?: number;
  /** Token count of a text, to keep the summary within `maxTokens` (default: ceil(chars / 4)). */
  readonly countTokens?: (text: string) => number;
}

/** What the client constructor is given. */
export interface ClientSettings {
  readonly apiKey?: string;
  readonly baseURL?: string;
  readonly maxRetries: number;
  readonly timeout: number;
}

type ErrorClass<E> = abstract new (...args: never) => E;

/** An HTTP error of the SDK: a status when the server answered, and its headers. */
export interface StatusError extends Error {
  readonly status: number | undefined;
  readonly headers: Headers | undefined;
}

/** An SDK's client class with the error classes both official SDKs hang on it (most specific first below). */
export interface ModelSdk<Client, E extends StatusError> {
  new (settings: ClientSettings): Client;
  readonly APIConnectionTimeoutError: ErrorClass<Error>;
  readonly APIUserAbortError: ErrorClass<Error>;
  readonly APIConnectionError: ErrorClass<Error>;
  readonly APIError: ErrorClass<E>;
}

/** One request as a provider sends it. */
export interface ModelCall {
  readonly prompt: SummaryPrompt;
  /** The output token limit to ask for. */
  readonly maxOutput: number;
  /** Per-request SDK options: the deadline's signal, the timeout and the retries. */
  readonly requestOptions: {
    readonly signal: AbortSignal;
    readonly timeout: number;
    readonly maxRetries: number;
  };
}

/** A response read by the provider: the answer's text and whether it stopped at the output limit. */
export interface ModelAnswer {
  readonly text: string | null | undefined;
  readonly cut: boolean;
}

/** What differs between providers. */
export interface ModelProvider<Client, Response, E extends StatusError> {
  /** Prefix of the summarizer id (`openai` gives `openai:<model>`). */
  readonly name: string;
  /** The provider's name in messages and the variable its SDK reads the key from. */
  readonly title: string;
  readonly keyVariable: string;
  readonly sdk: ModelSdk<Client, E>;
  /** Sends one request. */
  readonly send: (client: Client, call: ModelCall) => Promise<Response>;
  /** Reads a response; `empty` throws reason "empty" (no answer, a refusal). */
  readonly read: (response: Response, empty: (problem: string) => never) => ModelAnswer;
  /** The problem when the answer hit `maxOutput` before any text. */
  readonly cutBeforeText: (maxOutput: number) => string;
  /** The status part of an HTTP error's message (default `HTTP <status>`). */
  readonly statusLabel?: (error: E) => string;
}

/**
 * A `Summarizer` on a provider's SDK that asks for the six-field JSON summary; failures (timeout, 429, 5xx, 4xx,
 * abort, empty or malformed output) throw `SummarizerError` with the matching reason.
 */
export function createModelSummarizer<Client, Response, E extends StatusError>(
  options: ModelSummarizerOptions<Client>,
  provider: ModelProvider<Client, Response, E>,
): Summarizer {
  const id = `${provider.name}:${options.model}`;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const maxRetries = options.maxRetries ?? 0;
  const clientFor = lazyClient(id, options, provider, { maxRetries, timeout: timeoutMs });

  /** One request: `messages` (which must fit one transcript) absorbing `previous`. */
  async function summarizeChunk(
    request: SummaryRequest,
    messages: ReadonlyArray<Message>,
    previous: SummaryResult | undefined,
    empty: (problem: string) => never,
  ): Promise<SummaryResult> {
    const prompt = buildSummaryPrompt(messages, {
      maxTokens: request.maxTokens,
      ...(previous === undefined ? {} : { previous }),
      ...(options.maxInputChars === undefined ? {} : { maxInputChars: options.maxInputChars }),
    });
    const client = clientFor(request.threadId);
    // JSON quoting and keys cost more tokens than the formatted text; the slack keeps the answer from being cut.
    const maxOutput = Math.ceil(request.maxTokens * 1.25) + 256;
    const response = await callWithDeadline(
      id,
      request,
      timeoutMs,
      (signal) =>
        provider.send(client, {
          prompt,
          maxOutput,
          requestOptions: { signal, timeout: timeoutMs, maxRetries },
        }),
      (error) => classify(id, error, request.threadId, provider),
    );
    const { text, cut } = readAnswer(id, provider, response, empty, request.threadId);
    if (cut && (text ?? "").trim() === "") empty(provider.cutBeforeText(maxOutput));
    return summaryFromAnswer(id, text, { cut, request, countTokens: options.countTokens });
  }

  async function summarize(request: SummaryRequest): Promise<SummaryResult> {
    const where = { threadId: request.threadId };
    const empty = (problem: string): never => {
      throw new SummarizerError(id, "empty", problem, where);
    };
    if (request.messages.length === 0) empty("the span has no messages");
    // Chunk, then absorb: a span too long for one request is read chunk by chunk, each request carrying the
    // summary so far, so no message the summary replaces is left out of every request. Any failure fails the
    // whole summary (a partial one would stand for messages no request contained).
    let summary = request.previous;
    for (const chunk of transcriptChunks(request.messages, options.maxInputChars)) {
      summary = await summarizeChunk(request, chunk, summary, empty);
    }
    return summary!;
  }

  return Object.freeze({ id, promptVersion: SUMMARY_PROMPT_VERSION, summarize });
}

// Built on first use, so a pipeline can be configured without a key and fail as data when it summarizes.
function lazyClient<Client, E extends StatusError>(
  id: string,
  options: ModelSummarizerOptions<Client>,
  provider: Pick<ModelProvider<Client, never, E>, "sdk" | "title" | "keyVariable">,
  settings: ClientSettings,
): (threadId: string) => Client {
  let client = options.client;
  return (threadId) => {
    if (client !== undefined) return client;
    try {
      client = new provider.sdk({
        ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
        ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
        ...settings,
      });
      return client;
    } catch (error) {
      const hint = `pass apiKey or set ${provider.keyVariable}`;
      const problem = `cannot create the ${provider.title} client (${hint}): ${(error as Error).message}`;
      throw new SummarizerError(id, "failed", problem, { threadId }, { cause: error });
    }
  };
}

function classify<E extends StatusError>(
  id: string,
  error: unknown,
  threadId: string,
  provider: Pick<ModelProvider<unknown, never, E>, "sdk" | "statusLabel">,
): SummarizerError {
  const fail = (reason: SummarizerError["reason"], problem: string) =>
    new SummarizerError(id, reason, problem, { threadId }, { cause: error });
  const sdk = provider.sdk;
  if (error instanceof sdk.APIConnectionTimeoutError) return fail("timeout", "the request timed out");
  if (error instanceof sdk.APIUserAbortError) return fail("aborted", "the request was aborted");
  if (error instanceof sdk.APIConnectionError)
    return fail("failed", `cannot reach the API: ${error.message}`);
  if (error instanceof sdk.APIError && typeof error.status === "number") {
    const status = error.status;
    const detail = `${provider.statusLabel?.(error) ?? `HTTP ${status}`}: ${error.message}`;
    if (status === 429) {
      const retryAfter = error.headers?.get("retry-after");
      return fail("rate_limited", retryAfter ? `${detail} (retry after ${retryAfter} s)` : detail);
    }
    // Anthropic's 529 (overloaded) is a 5xx too: the server, not the request, is the problem.
    if (status >= 500) return fail("server_error", detail);
    if (status >= 400) return fail("bad_request", detail);
  }
  return fail("failed", error instanceof Error ? error.message : String(error));
}

/**
 * The provider's reading of a response, with anything that is not the response object it expects (an HTML page
 * served with HTTP 200 by a proxy, a JSON error body, a string) turned into a "malformed" `SummarizerError`
 * instead of a `TypeError` from reading its fields.
 */
function readAnswer<Response>(
  id: string,
  provider: { readonly read: (response: Response, empty: (problem: string) => never) => ModelAnswer },
  response: Response,
  empty: (problem: string) => never,
  threadId: string,
): ModelAnswer {
  const malformed = (cause?: unknown): never => {
    const shown = typeof response === "string" ? response : JSON.stringify(response ?? null);
    const preview = JSON.stringify((shown ?? "").slice(0, 80));
    throw new SummarizerError(
      id,
      "malformed",
      `the response is not a model answer: ${preview}`,
      { threadId },
      {
        ...(cause === undefined ? {} : { cause }),
      },
    );
  };
  if (typeof response !== "object" || response === null) return malformed();
  let answer: ModelAnswer;
  try {
    answer = provider.read(response, empty);
  } catch (error) {
    if (error instanceof SummarizerError) throw error;
    return malformed(error);
  }
  if (answer.text !== null && answer.text !== undefined && typeof answer.text !== "string")
    return malformed();
  return answer;
}
