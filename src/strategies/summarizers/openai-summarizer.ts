/**
 * A summarizer on the OpenAI Chat Completions API (and compatible servers), through the official SDK.
 */
import type OpenAI from "openai";
import { requirePeer } from "../../errors/optional-peer.js";
import type { Summarizer } from "../summarizer.js";
import { createModelSummarizer, type ModelAnswer, type ModelSummarizerOptions } from "./model-summarizer.js";

/** Options of `createOpenAISummarizer`. */
export interface OpenAISummarizerOptions extends ModelSummarizerOptions<OpenAI> {
  /** e.g. `https://api.openai.com/v1` or a compatible server's `/v1` URL. */
  readonly baseURL?: string;
  /** Ask for `response_format: { type: "json_object" }` (default true). */
  readonly jsonMode?: boolean;
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
  const OpenAISdk = requirePeer<typeof OpenAI>("openai", "context-ledger/openai");
  return createModelSummarizer(options, {
    name: "openai",
    title: "OpenAI",
    keyVariable: "OPENAI_API_KEY",
    sdk: OpenAISdk,
    send: (openai, { prompt, maxOutput, requestOptions }) =>
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
        requestOptions,
      ),
    read: readCompletion,
    cutBeforeText: (maxOutput) =>
      `the answer hit max_completion_tokens ${maxOutput} before any text (reasoning used it up?)`,
  });
}

function readCompletion(completion: OpenAI.ChatCompletion, empty: (problem: string) => never): ModelAnswer {
  const choice = completion.choices[0];
  if (choice === undefined) return empty("the response has no choices");
  const { content, refusal } = choice.message;
  if (refusal) return empty(`the model refused: ${refusal.slice(0, 200)}`);
  return { text: content, cut: choice.finish_reason === "length" };
}
