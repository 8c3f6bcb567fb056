import { Tiktoken, type TiktokenBPE } from "js-tiktoken/lite";
import { type EncodingName, loadEncodingData } from "./encoding-data.js";
import type { Tokenizer } from "./tokenizer.js";

/** A {@link Tokenizer} backed by js-tiktoken that can also return token ids. */
export interface TiktokenTokenizer extends Tokenizer {
  readonly encoding: EncodingName;
  /** The token ids of `text`, special-token strings encoded as ordinary text. */
  encode(text: string): number[];
}

const encoders = new Map<EncodingName, Tiktoken>();

/** The js-tiktoken encoder of an encoding, built on first use (it takes most of a second) and then shared. */
export function tiktokenEncoder(encoding: EncodingName): Tiktoken {
  let encoder = encoders.get(encoding);
  if (encoder === undefined) {
    encoder = new Tiktoken(loadEncodingData(encoding) as TiktokenBPE);
    encoders.set(encoding, encoder);
  }
  return encoder;
}

/**
 * Counts with js-tiktoken, the reference implementation. Special-token strings such as `<|endoftext|>` are
 * encoded as ordinary text (nothing allowed, nothing disallowed), so tool output containing them never throws.
 * Exact, but slow on long runs of one character (its merge loop is quadratic in the piece length).
 *
 * @example
 * createTiktokenTokenizer("o200k_base").count("hello world"); // 2
 */
export function createTiktokenTokenizer(encoding: EncodingName): TiktokenTokenizer {
  const encode = (text: string): number[] => tiktokenEncoder(encoding).encode(text, [], []);
  return {
    id: `tiktoken:${encoding}`,
    encoding,
    encode,
    count: (text: string): number => encode(text).length,
  };
}
