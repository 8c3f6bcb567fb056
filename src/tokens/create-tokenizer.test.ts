import { describe, expect, it } from "vitest";
import { ValidationError } from "../errors/ledger-error.js";
import { createTokenizer, DEFAULT_BACKEND } from "./create-tokenizer.js";

describe("createTokenizer", () => {
  it("defaults to exact BPE with o200k_base", () => {
    expect(DEFAULT_BACKEND).toBe("bpe");
    expect(createTokenizer().id).toBe("bpe:o200k_base");
  });

  it("picks the encoding from the model", () => {
    expect(createTokenizer({ model: "gpt-4o" }).id).toBe("bpe:o200k_base");
    expect(createTokenizer({ model: "gpt-4-0613" }).id).toBe("bpe:cl100k_base");
    expect(createTokenizer({ model: "gpt-3.5-turbo", backend: "tiktoken" }).id).toBe("tiktoken:cl100k_base");
  });

  it("lets an explicit encoding win over the model's", () => {
    expect(createTokenizer({ model: "gpt-4", encoding: "o200k_base" }).id).toBe("bpe:o200k_base");
  });

  it("estimates for models without a public tokenizer, or uses an encoding given as a proxy", () => {
    expect(createTokenizer({ model: "claude-sonnet-4-5" }).id).toBe("estimate:chars/4");
    expect(createTokenizer({ model: "claude-sonnet-4-5", encoding: "o200k_base" }).id).toBe("bpe:o200k_base");
    expect(createTokenizer({ backend: "estimate", charsPerToken: 3 }).id).toBe("estimate:chars/3");
    expect(() => createTokenizer({ model: "claude-sonnet-4-5", backend: "bpe" })).toThrow(
      /no public tokenizer/,
    );
  });

  it("shares one instance per id", () => {
    expect(createTokenizer({ model: "gpt-4o" })).toBe(createTokenizer({ encoding: "o200k_base" }));
  });

  it("gives the same counts on both exact backends", () => {
    const text = "Ünïcödé, <|endoftext|>, CRLF\r\n and   spaces ==== 12345";
    expect(createTokenizer({ backend: "bpe" }).count(text)).toBe(
      createTokenizer({ backend: "tiktoken" }).count(text),
    );
  });

  it("rejects unknown models, encodings and backends with a ValidationError naming the field", () => {
    const cases: Array<[Parameters<typeof createTokenizer>[0], string]> = [
      [{ model: "llama-3-70b" }, "model"],
      [{ encoding: "p50k_base" }, "encoding"],
      [{ backend: "wasm" as never }, "backend"],
    ];
    for (const [options, field] of cases) {
      try {
        createTokenizer(options);
        expect.unreachable();
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).where.field).toBe(field);
      }
    }
  });
});
