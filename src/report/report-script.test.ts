import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FOLD_SEARCH } from "./report-script.js";

/** The page's own search functions, run as the page runs them. */
const { fold, foldedMatch } = new Function(`${FOLD_SEARCH}\nreturn { fold, foldedMatch };`)() as {
  fold: (text: string) => { text: string; from: number[] };
  foldedMatch: (text: string, foldedQuery: string) => [number, number];
};

/** What the page highlights for a query in a text. */
const highlight = (text: string, query: string) => {
  const [at, until] = foldedMatch(text, fold(query).text);
  return text.slice(at, until);
};

describe("the report's search highlight", () => {
  it("marks the matched text itself when lower-casing lengthens what comes before it", () => {
    // "İ" lower-cases to "i̇" (two code units): offsets in the lower-cased text run one ahead per "İ".
    const text = "İİİ İstanbul: QZ-4471 rotated";
    expect("İ".toLowerCase()).toHaveLength(2);
    expect(highlight(text, "qz-4471")).toBe("QZ-4471");
    expect(highlight("ẞ STRASSE İ then MARKER here", "marker")).toBe("MARKER");
    expect(highlight("Straße ß and the TARGET", "ß and the target")).toBe("ß and the TARGET");
  });

  it("marks a match that holds a character whose lower case is longer", () => {
    expect(highlight("see İZMİR now", "i̇zmi̇r")).toBe("İZMİR");
  });

  it("keeps astral characters whole", () => {
    expect(highlight("😀 Ünïcode 😀 MATCH", "match")).toBe("MATCH");
    expect(highlight("a 𝐀𝐁 b", "𝐀𝐁")).toBe("𝐀𝐁");
  });

  it("highlights, for any text and any piece of it, a piece that folds to the query", () => {
    const chars = fc.constantFrom("a", "B", "İ", "ß", "ẞ", "Σ", "😀", " ", "Ω", "K", "ǅ");
    const text = fc.array(chars, { maxLength: 30 }).map((cs) => cs.join(""));
    fc.assert(
      fc.property(text, fc.nat(), fc.nat(), (t, a, b) => {
        const points = [...t];
        const from = Math.min(a, b) % (points.length + 1);
        const to = Math.min(points.length, from + (Math.max(a, b) % 5) + 1);
        const piece = points.slice(from, to).join("");
        const query = fold(piece).text;
        if (query.length === 0) return;
        const marked = highlight(t, piece);
        expect(fold(marked).text).toContain(query);
        expect(t).toContain(marked);
      }),
    );
  });
});
