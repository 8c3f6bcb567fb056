import { describe, expect, it } from "vitest";
import { createTiktokenTokenizer, tiktokenEncoder } from "./tiktoken-tokenizer.js";

describe("createTiktokenTokenizer", () => {
  const tokenizer = createTiktokenTokenizer("cl100k_base");

  it("counts with js-tiktoken under a backend-specific id", () => {
    expect(tokenizer.id).toBe("tiktoken:cl100k_base");
    expect(tokenizer.count("hello world")).toBe(2);
    expect(tokenizer.count("")).toBe(0);
  });

  it("treats special-token strings as text instead of throwing", () => {
    const text = "a <|endoftext|> b <|fim_prefix|> c <|im_start|>";
    expect(() => tokenizer.count(text)).not.toThrow();
    expect(tokenizer.encode(text)).not.toContain(100257); // the <|endoftext|> control token
    expect(tokenizer.count(text)).toBeGreaterThan(6);
  });

  it("builds each encoder once", () => {
    expect(tiktokenEncoder("cl100k_base")).toBe(tiktokenEncoder("cl100k_base"));
  });
});
