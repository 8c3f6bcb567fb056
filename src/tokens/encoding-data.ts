import { createRequire } from "node:module";

/** The BPE encodings this package can count exactly. */
export type EncodingName = "o200k_base" | "cl100k_base";

/** Every supported encoding name, in a stable order. */
export const ENCODING_NAMES: ReadonlyArray<EncodingName> = ["o200k_base", "cl100k_base"];

/**
 * The rank data that ships with js-tiktoken: `pat_str` is the pre-tokenizer regex source, `bpe_ranks` the
 * compressed vocabulary (lines of `<marker> <first rank> <base64 token> <base64 token> ...`, ranks consecutive
 * within a line) and `special_tokens` the control tokens we never emit.
 */
export interface EncodingData {
  readonly pat_str: string;
  readonly special_tokens: Readonly<Record<string, number>>;
  readonly bpe_ranks: string;
}

// A synchronous require keeps `Tokenizer.count` synchronous while loading the multi-megabyte rank modules only
// when an encoding is first used (a static import would parse both for every consumer of the package).
const require = createRequire(import.meta.url);
const loaded = new Map<EncodingName, EncodingData>();

/** Whether a string names a supported encoding. */
export function isEncodingName(value: string): value is EncodingName {
  return (ENCODING_NAMES as ReadonlyArray<string>).includes(value);
}

/** The raw js-tiktoken rank data of an encoding, loaded on first use and cached for the process. */
export function loadEncodingData(encoding: EncodingName): EncodingData {
  const cached = loaded.get(encoding);
  if (cached !== undefined) return cached;
  const mod = require(`js-tiktoken/ranks/${encoding}`) as { default?: EncodingData } & EncodingData;
  const data = mod.default ?? mod;
  loaded.set(encoding, data);
  return data;
}
