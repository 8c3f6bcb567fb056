import { ValidationError } from "../errors/ledger-error.js";
import { createBpeTokenizer } from "./bpe-tokenizer.js";
import { createCharEstimateTokenizer } from "./char-estimate-tokenizer.js";
import { ENCODING_NAMES, type EncodingName, isEncodingName } from "./encoding-data.js";
import { lookupModel } from "./model-table.js";
import { createTiktokenTokenizer } from "./tiktoken-tokenizer.js";
import type { Tokenizer } from "./tokenizer.js";

/** Which implementation counts: our exact BPE, js-tiktoken (reference) or the character estimator. */
export type TokenizerBackend = "bpe" | "tiktoken" | "estimate";

/**
 * The default backend. Both exact backends give identical counts; ours measured 22× js-tiktoken's throughput on
 * real agent text (12× with a cold piece cache) and stays linear-ish on inputs that make js-tiktoken quadratic
 * (see `benchmarks/TOKENIZER.md`).
 */
export const DEFAULT_BACKEND: TokenizerBackend = "bpe";

const BACKENDS: ReadonlyArray<TokenizerBackend> = ["bpe", "tiktoken", "estimate"];

/** Encoding used when neither a model nor an encoding is given. */
export const DEFAULT_ENCODING: EncodingName = "o200k_base";

/** Options of {@link createTokenizer}. */
export interface CreateTokenizerOptions {
  /** Model name; picks the encoding (or the estimator, for models without a public tokenizer). */
  readonly model?: string;
  /** Explicit encoding; wins over the one implied by `model`. */
  readonly encoding?: string;
  /** Default: {@link DEFAULT_BACKEND}, or `estimate` for models without a public tokenizer. */
  readonly backend?: TokenizerBackend;
  /** Only for the estimator: characters per token (default 4). */
  readonly charsPerToken?: number;
}

// Tokenizers are deterministic and stateless from the outside, so one instance per id is shared (and with it
// the warm piece cache).
const instances = new Map<string, Tokenizer>();

function shared(id: string, make: () => Tokenizer): Tokenizer {
  let tokenizer = instances.get(id);
  if (tokenizer === undefined) {
    tokenizer = make();
    instances.set(id, tokenizer);
  }
  return tokenizer;
}

function resolveEncoding(options: CreateTokenizerOptions): EncodingName | "estimate" {
  if (options.encoding !== undefined) {
    if (isEncodingName(options.encoding)) return options.encoding;
    throw new ValidationError(
      `unknown encoding ${JSON.stringify(options.encoding)}; supported: ${ENCODING_NAMES.join(", ")}`,
      { field: "encoding" },
    );
  }
  if (options.model === undefined) return DEFAULT_ENCODING;
  const info = lookupModel(options.model);
  if (info === undefined) {
    throw new ValidationError(
      `unknown model ${JSON.stringify(options.model)}: pass \`encoding\` (${ENCODING_NAMES.join(" or ")}) or use backend "estimate"`,
      { field: "model" },
    );
  }
  return info.encoding ?? "estimate";
}

/**
 * Returns the tokenizer for a model / encoding / backend choice: exact BPE by default, the character estimator
 * for models without a public tokenizer (Anthropic) unless an encoding is given as a proxy. Instances are
 * shared per id and the vocabulary loads on the first count.
 *
 * @example
 * createTokenizer({ model: "gpt-4o" }).id; // "bpe:o200k_base"
 * createTokenizer({ model: "claude-sonnet-4-5" }).id; // "estimate:chars/4"
 */
export function createTokenizer(options: CreateTokenizerOptions = {}): Tokenizer {
  if (options.backend !== undefined && !BACKENDS.includes(options.backend)) {
    throw new ValidationError(
      `unknown tokenizer backend ${JSON.stringify(options.backend)}; use one of ${BACKENDS.join(", ")}`,
      { field: "backend" },
    );
  }
  if (options.backend === "estimate") return estimator(options);
  const encoding = resolveEncoding(options);
  if (encoding === "estimate") {
    if (options.backend !== undefined) {
      throw new ValidationError(
        `model ${JSON.stringify(options.model)} has no public tokenizer; use backend "estimate" or pass \`encoding\` as a proxy`,
        { field: "backend" },
      );
    }
    return estimator(options);
  }
  const backend = options.backend ?? DEFAULT_BACKEND;
  if (backend === "tiktoken") return shared(`tiktoken:${encoding}`, () => createTiktokenTokenizer(encoding));
  return shared(`bpe:${encoding}`, () => createBpeTokenizer(encoding));
}

function estimator(options: CreateTokenizerOptions): Tokenizer {
  const made = createCharEstimateTokenizer(
    options.charsPerToken === undefined ? {} : { charsPerToken: options.charsPerToken },
  );
  return shared(made.id, () => made);
}
