/**
 * The provider formats and their dispatcher: render a prompt to a format's request body, list the rules a body
 * breaks, or throw a `RenderValidationError` for them. The rules themselves live beside each adapter.
 */
import { RenderValidationError } from "../errors/ledger-error.js";
import type { AdapterSource } from "./adapter-input.js";
import {
  type AnthropicMessagesOptions,
  type AnthropicMessagesRequest,
  toAnthropicMessages,
} from "./anthropic-messages-adapter.js";
import { validateAnthropicMessages } from "./anthropic-messages-rules.js";
import { type OpenAIChatRequest, toOpenAIChat } from "./openai-chat-adapter.js";
import { validateOpenAIChat } from "./openai-chat-rules.js";
import { type OpenAIResponsesRequest, toOpenAIResponses } from "./openai-responses-adapter.js";
import { validateOpenAIResponses } from "./openai-responses-rules.js";

export { validateAnthropicMessages, validateOpenAIChat, validateOpenAIResponses };

/** The request formats context-ledger can render to. */
export type ProviderFormat = "openai" | "responses" | "anthropic";

/** The request body type of each format. */
export interface ProviderRequestMap {
  openai: OpenAIChatRequest;
  responses: OpenAIResponsesRequest;
  anthropic: AnthropicMessagesRequest;
}

/** Options for `toProviderRequest`; formats ignore the options they have no use for. */
export type ProviderRequestOptions = AnthropicMessagesOptions;

interface ProviderHandler<F extends ProviderFormat> {
  readonly name: string;
  readonly render: (source: AdapterSource, options: ProviderRequestOptions) => ProviderRequestMap[F];
  readonly validate: (body: ProviderRequestMap[F]) => string[];
}

/** Each format's display name, adapter and validator. */
const providers: { readonly [F in ProviderFormat]: ProviderHandler<F> } = {
  openai: { name: "OpenAI Chat Completions", render: (s) => toOpenAIChat(s), validate: validateOpenAIChat },
  responses: {
    name: "OpenAI Responses",
    render: (s) => toOpenAIResponses(s),
    validate: validateOpenAIResponses,
  },
  anthropic: { name: "Anthropic Messages", render: toAnthropicMessages, validate: validateAnthropicMessages },
};

/** Renders a prompt to the request body of one provider format. */
export function toProviderRequest<F extends ProviderFormat>(
  format: F,
  source: AdapterSource,
  options: ProviderRequestOptions = {},
): ProviderRequestMap[F] {
  const handler: ProviderHandler<F> = providers[format];
  return handler.render(source, options);
}

/** Every rule of a format that a request body breaks (empty = valid). */
export function validateProviderRequest<F extends ProviderFormat>(
  format: F,
  body: ProviderRequestMap[F],
): string[] {
  const handler: ProviderHandler<F> = providers[format];
  return handler.validate(body);
}

/** Throws a `RenderValidationError` listing every problem when a body breaks its format's rules. */
export function assertValid<F extends ProviderFormat>(format: F, body: ProviderRequestMap[F]): void {
  const handler: ProviderHandler<F> = providers[format];
  const problems = handler.validate(body);
  if (problems.length > 0) throw new RenderValidationError(handler.name, problems);
}
