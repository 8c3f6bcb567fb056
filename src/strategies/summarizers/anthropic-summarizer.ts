/**
 * A summarizer on the Anthropic Messages API, through the official SDK.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { requirePeer } from "../../errors/optional-peer.js";
import type { Summarizer } from "../summarizer.js";
import { createModelSummarizer, type ModelAnswer, type ModelSummarizerOptions } from "./model-summarizer.js";

/** Options of `createAnthropicSummarizer`. */
export interface AnthropicSummarizerOptions extends ModelSummarizerOptions<Anthropic> {
  /** e.g. `https://api.anthropic.com` (no `/v1`: the SDK adds it). */
  readonly baseURL?: string;
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
  const AnthropicSdk = requirePeer<typeof Anthropic>("@anthropic-ai/sdk", "context-ledger/anthropic");
  return createModelSummarizer(options, {
    name: "anthropic",
    title: "Anthropic",
    keyVariable: "ANTHROPIC_API_KEY",
    sdk: AnthropicSdk,
    send: (anthropic, { prompt, maxOutput, requestOptions }) =>
      anthropic.messages.create(
        {
          model: options.model,
          max_tokens: maxOutput,
          system: prompt.system,
          messages: [{ role: "user", content: prompt.user }],
          ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
        },
        requestOptions,
      ),
    read: readMessage,
    cutBeforeText: (maxOutput) => `the answer hit max_tokens ${maxOutput} before any text`,
    statusLabel: (error) => `HTTP ${error.status}${error.type ? ` ${error.type}` : ""}`,
  });
}

function readMessage(message: Anthropic.Message, empty: (problem: string) => never): ModelAnswer {
  if (message.stop_reason === "refusal") {
    return empty("the model refused to summarize (stop_reason refusal)");
  }
  const text = message.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("");
  return { text, cut: message.stop_reason === "max_tokens" };
}
