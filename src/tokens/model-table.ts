import type { EncodingName } from "./encoding-data.js";

/** Who serves a model; it decides the message-overhead profile and whether an exact tokenizer exists. */
export type ModelProvider = "openai" | "anthropic";

/** What we know about a model family, matched by name prefix. */
export interface ModelInfo {
  /** Name prefix this entry matches (`gpt-4o` matches `gpt-4o-2024-08-06`). */
  readonly prefix: string;
  readonly provider: ModelProvider;
  /** The tiktoken encoding, when the provider publishes its tokenizer. */
  readonly encoding?: EncodingName;
  /** True when no public tokenizer exists and counts are estimates (Anthropic). */
  readonly estimated: boolean;
  /** Total context window in tokens (prompt + output). */
  readonly contextWindow: number;
  /** Output tokens reserved by default; callers may reserve more or less. */
  readonly defaultMaxOutputTokens: number;
}

type Row = readonly [prefix: string, contextWindow: number, defaultMaxOutputTokens: number];

function openai(encoding: EncodingName, rows: ReadonlyArray<Row>): ModelInfo[] {
  return rows.map(([prefix, contextWindow, defaultMaxOutputTokens]) => ({
    prefix,
    provider: "openai",
    encoding,
    estimated: false,
    contextWindow,
    defaultMaxOutputTokens,
  }));
}

function anthropic(rows: ReadonlyArray<Row>): ModelInfo[] {
  return rows.map(([prefix, contextWindow, defaultMaxOutputTokens]) => ({
    prefix,
    provider: "anthropic",
    estimated: true,
    contextWindow,
    defaultMaxOutputTokens,
  }));
}

/**
 * Known models, most specific prefix first (the first matching entry wins). Windows and output limits are the
 * providers' published defaults at the time of writing; pass `contextWindow` / `reserveOutput` to override.
 */
export const MODEL_TABLE: ReadonlyArray<ModelInfo> = Object.freeze([
  ...openai("o200k_base", [
    ["gpt-5", 400_000, 128_000],
    ["gpt-4.1", 1_047_576, 32_768],
    ["gpt-4.5", 128_000, 16_384],
    ["gpt-4o-mini", 128_000, 16_384],
    ["gpt-4o", 128_000, 16_384],
    ["chatgpt-4o", 128_000, 16_384],
    ["o1-mini", 128_000, 65_536],
    ["o1-preview", 128_000, 32_768],
    ["o1", 200_000, 100_000],
    ["o3-mini", 200_000, 100_000],
    ["o3", 200_000, 100_000],
    ["o4-mini", 200_000, 100_000],
  ]),
  ...openai("cl100k_base", [
    ["gpt-4-turbo", 128_000, 4_096],
    ["gpt-4-1106", 128_000, 4_096],
    ["gpt-4-0125", 128_000, 4_096],
    ["gpt-4-vision", 128_000, 4_096],
    ["gpt-4-32k", 32_768, 4_096],
    ["gpt-4", 8_192, 2_048],
    ["gpt-3.5-turbo-instruct", 4_096, 1_024],
    ["gpt-3.5-turbo", 16_385, 4_096],
    ["gpt-35-turbo", 16_385, 4_096],
  ]),
  ...anthropic([
    ["claude-opus-4", 200_000, 32_000],
    ["claude-sonnet-4", 200_000, 64_000],
    ["claude-haiku-4", 200_000, 64_000],
    ["claude-3-7-sonnet", 200_000, 64_000],
    ["claude-3-5-sonnet", 200_000, 8_192],
    ["claude-3-5-haiku", 200_000, 8_192],
    ["claude-", 200_000, 4_096],
  ]),
]);

/** The table entry for a model name (case-insensitive, first matching prefix), or `undefined`. */
export function lookupModel(model: string): ModelInfo | undefined {
  const name = model.trim().toLowerCase();
  return MODEL_TABLE.find((entry) => name.startsWith(entry.prefix));
}

/** The tiktoken encoding of a model, or `undefined` when unknown or when it has no public tokenizer. */
export function encodingForModel(model: string): EncodingName | undefined {
  return lookupModel(model)?.encoding;
}
