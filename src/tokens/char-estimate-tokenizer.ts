import { ValidationError } from "../errors/ledger-error.js";
import type { Tokenizer } from "./tokenizer.js";

/** Options of {@link createCharEstimateTokenizer}. */
export interface CharEstimateOptions {
  /** Characters (UTF-16 code units) per token; default 4, the usual rule of thumb for English and code. */
  readonly charsPerToken?: number;
}

/**
 * A fast estimator for models without a public tokenizer (e.g. Anthropic's): `ceil(text.length / charsPerToken)`,
 * where `length` counts UTF-16 code units and the empty string is 0 tokens. It is not exact; pair it with a
 * safety margin or with calibration against the provider's reported usage.
 *
 * @example
 * createCharEstimateTokenizer().count("hello world"); // 3
 */
export function createCharEstimateTokenizer(options: CharEstimateOptions = {}): Tokenizer {
  const charsPerToken = options.charsPerToken ?? 4;
  if (!(Number.isFinite(charsPerToken) && charsPerToken > 0)) {
    throw new ValidationError(`charsPerToken must be a positive number, got ${charsPerToken}`, {
      field: "charsPerToken",
    });
  }
  return {
    id: `estimate:chars/${charsPerToken}`,
    count: (text: string): number => Math.ceil(text.length / charsPerToken),
  };
}
