import { describe, expect, it } from "vitest";
import { type Rarity, rarityOf, salientLines, wordsOf } from "./salient-lines.js";

/** A thread of 40 messages sharing ordinary words, plus the given texts. */
function threadRarity(...texts: string[]): Rarity {
  const filler = Array.from({ length: 40 }, (_, i) => `running build step ${i} output module compile again`);
  return rarityOf([...filler, ...texts].map(wordsOf));
}

const listing = (planted: string) =>
  [
    "running build step output",
    "compile module output",
    planted,
    "running build step output again",
    "compile module output again",
  ].join("\n");

describe("wordsOf", () => {
  it("lower-cases, keeps identifiers whole and skips short and stop words", () => {
    expect([...wordsOf("The KX-48213 ticket is in src/app.py and it's OK")]).toEqual([
      "kx-48213",
      "ticket",
      "src",
      "app.py",
    ]);
  });
});

describe("salientLines", () => {
  it("keeps a neutral line carrying an identifier or a made-up word rare in the thread", () => {
    const a = listing("The account was moved to ticket KX-48213 last week.");
    expect(salientLines(a, threadRarity(a))).toEqual(["The account was moved to ticket KX-48213 last week."]);
    const b = listing("Remember that the velmorine setting stays on.");
    expect(salientLines(b, threadRarity(b))).toEqual(["Remember that the velmorine setting stays on."]);
  });

  it("does not take a word for rare when it fills the thread", () => {
    const text = listing("the velmorine output");
    const common = threadRarity(text, ...Array.from({ length: 40 }, () => "velmorine build"));
    expect(salientLines(text, common)).toEqual([]);
  });

  it("prefers errors and test outcomes, and returns lines in their original order", () => {
    const text = [
      "collecting tests",
      "tests/test_api.py::test_login FAILED",
      "running build step output",
      "AssertionError: expected 200 got 500",
      "===== 3 passed, 1 failed in 0.52s =====",
    ].join("\n");
    expect(salientLines(text, threadRarity(text), { maxLines: 3 })).toEqual([
      "tests/test_api.py::test_login FAILED",
      "AssertionError: expected 200 got 500",
      "===== 3 passed, 1 failed in 0.52s =====",
    ]);
  });

  it("stays within the line and token caps, cuts long lines and drops duplicates", () => {
    const lines = Array.from(
      { length: 30 },
      (_, i) => `error ${i}: qqzx${i}vv unresolved ${"z".repeat(300)}`,
    );
    const text = [...lines, lines[0]!].join("\n");
    const out = salientLines(text, threadRarity(text), { maxLines: 5, maxTokens: 100, maxLineChars: 60 });
    expect(out.length).toBeLessThanOrEqual(5);
    expect(out.reduce((n, l) => n + Math.ceil(l.length / 4) + 1, 0)).toBeLessThanOrEqual(100);
    for (const line of out) expect(line.length).toBeLessThanOrEqual(60);
    expect(out[0]!.endsWith("…")).toBe(true);
    expect(new Set(out).size).toBe(out.length);
  });

  it("returns nothing for an empty text or one with nothing telling", () => {
    expect(salientLines("", threadRarity())).toEqual([]);
    expect(salientLines("running build step output", threadRarity())).toEqual([]);
  });

  it("is deterministic", () => {
    const text = listing("note: KX-1 and velmorine");
    expect(salientLines(text, threadRarity(text))).toEqual(salientLines(text, threadRarity(text)));
  });
});
