import { describe, expect, it } from "vitest";
import { ValidationError } from "../errors/ledger-error.js";
import { createCharEstimateTokenizer } from "./char-estimate-tokenizer.js";

describe("createCharEstimateTokenizer", () => {
  it("is ceil(UTF-16 length / 4) by default", () => {
    const t = createCharEstimateTokenizer();
    expect(t.id).toBe("estimate:chars/4");
    expect(t.count("")).toBe(0);
    expect(t.count("abc")).toBe(1);
    expect(t.count("abcd")).toBe(1);
    expect(t.count("abcde")).toBe(2);
    expect(t.count("😀")).toBe(1); // two UTF-16 code units
    expect(t.count("<|endoftext|>")).toBe(4);
  });

  it("takes another ratio and puts it in the id", () => {
    const t = createCharEstimateTokenizer({ charsPerToken: 3.5 });
    expect(t.id).toBe("estimate:chars/3.5");
    expect(t.count("x".repeat(7))).toBe(2);
  });

  it("rejects a ratio that is not a positive number", () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => createCharEstimateTokenizer({ charsPerToken: bad })).toThrow(ValidationError);
    }
  });
});
