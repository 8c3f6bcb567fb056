/**
 * The AI SDK types this wing speaks, taken from the `ai` package as types only (nothing here loads it). The
 * provider-level prompt types are derived from the middleware's signature, so `ai` is the one package named.
 */
import type { LanguageModel, LanguageModelMiddleware, ModelMessage, Tool, ToolSet } from "ai";

export type { LanguageModel, LanguageModelMiddleware, ModelMessage, Tool, ToolSet };

type TransformParams = NonNullable<LanguageModelMiddleware["transformParams"]>;

/** The options of one language-model call, as a middleware sees them. */
export type LanguageModelCallOptions = Parameters<TransformParams>[0]["params"];

/** The language model a middleware wraps (a provider's model object, with `provider` and `modelId`). */
export type WrappedLanguageModel = Parameters<TransformParams>[0]["model"];

/** The prompt of one language-model call: the SDK's `ModelMessage`s after it normalized them for the provider. */
export type LanguageModelPrompt = LanguageModelCallOptions["prompt"];

/** One message of a provider-level prompt. */
export type LanguageModelMessage = LanguageModelPrompt[number];

/** What the converters read: a message of either level (a provider-level message is a narrower shape). */
export type SdkMessage = ModelMessage | LanguageModelMessage;

/** A JSON value, as the SDK's provider options and tool outputs hold them. */
export type JsonValue = null | string | number | boolean | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };
