import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fcParams } from "../../../test/support/arbitrary-log.js";
import { buildSalienceIndex, COMMON_CEILING, lineSalience, type SalienceIndex, wordsOf } from "./salience.js";

const STOP = new Set("the and for that this with from are was".split(" "));

/** The index as first written (three maps, every weight worked out when asked): the reference. */
function naiveIndex(
  documents: ReadonlyArray<string>,
  visible: ReadonlyArray<string>,
): SalienceIndex["weight"] {
  const df = new Map<string, number>();
  const occurrences = new Map<string, number>();
  for (const text of documents) {
    const seen = new Set<string>();
    for (const word of wordsOf(text)) {
      occurrences.set(word, (occurrences.get(word) ?? 0) + 1);
      if (seen.has(word)) continue;
      seen.add(word);
      df.set(word, (df.get(word) ?? 0) + 1);
    }
  }
  const shown = new Set(visible.flatMap(wordsOf));
  return (word) => {
    if (word.length < 3 || STOP.has(word) || shown.has(word)) return 0;
    const d = df.get(word) ?? 1;
    const n = occurrences.get(word) ?? 1;
    const rarity = d <= 1 ? 1 : d === 2 ? 0.75 : 0.5 / (d - 1);
    const repeated = n <= 2 ? 1 : 2 / n;
    const numeric = /^[0-9._-]+$/.test(word) ? 0.5 : 1;
    return rarity * repeated * numeric;
  };
}

describe("salience", () => {
  const documents = [
    "def load(self):\n    return self.config.load(path)",
    "def save(self):\n    return self.config.save(path)",
    "config = load(path)\nThe courier code is KX-48213.",
    "load the config from path; the depot is velmorine",
  ];
  const index = buildSalienceIndex(documents, ["later the config is printed"]);

  it("splits words, keeping inner hyphens and dots", () => {
    expect(wordsOf("Order KX-48213 in src/a.py, then stop.")).toEqual([
      "order",
      "kx-48213",
      "in",
      "src",
      "a.py",
      "then",
      "stop",
    ]);
  });

  it("weighs a word by how few messages use it; stop words and words the visible text shows weigh 0", () => {
    expect(index.weight("kx-48213")).toBe(1);
    expect(index.weight("velmorine")).toBe(1);
    expect(index.weight("load")).toBeLessThan(0.2);
    expect(index.weight("the")).toBe(0);
    expect(index.weight("config")).toBe(0);
  });

  it("ranks a prose sentence with a thread-unique word above code whose identifiers recur", () => {
    const fact = lineSalience("The courier code is KX-48213.", index);
    const code = lineSalience("    return self.config.load(path)", index);
    expect(["courier", "kx-48213"]).toContain(fact.peakWord);
    expect(fact.score).toBeGreaterThan(0.9);
    expect(code.score).toBeLessThan(fact.score * 0.7);
  });

  it("knows lines the visible text shows verbatim", () => {
    expect(index.shows("  later the   config is printed ")).toBe(true);
    expect(index.shows("The courier code is KX-48213.")).toBe(false);
  });

  it("is deterministic", () => {
    const again = buildSalienceIndex(documents, ["later the config is printed"]);
    for (const word of wordsOf(documents.join(" "))) expect(again.weight(word)).toBe(index.weight(word));
  });

  it("weighs every word exactly as the reference does, asked once or again", () => {
    const word = fc.constantFrom(
      "kx-48213",
      "velmorine",
      "load",
      "the",
      "a.py",
      "12",
      "3.5",
      "config",
      "Ab",
      "for",
    );
    const text = fc.array(word, { maxLength: 12 }).map((w) => w.join(" "));
    fc.assert(
      fc.property(
        fc.array(text, { maxLength: 8 }),
        fc.array(text, { maxLength: 2 }),
        (documents, visible) => {
          const index = buildSalienceIndex(documents, visible);
          const reference = naiveIndex(documents, visible);
          const asked = [...wordsOf(documents.join(" ")), "unseen", "velmorine"];
          for (const w of [...asked, ...asked]) expect(index.weight(w)).toBe(reference(w));
        },
      ),
      fcParams(300),
    );
  });

  it("bounds what any line of a document can peak at, the heaviest word used in one or two messages included", () => {
    const word = fc.constantFrom(
      "kx-48213",
      "velmorine",
      "load",
      "the",
      "a.py",
      "12",
      "Config",
      "<b>",
      "ΣΑΣ",
      "K",
    );
    const text = fc
      .array(fc.tuple(word, fc.constantFrom(" ", "\n", ". ", "-", "")), { maxLength: 14 })
      .map((parts) => parts.map(([w, sep]) => w + sep).join(""));
    fc.assert(
      fc.property(
        fc.array(text, { maxLength: 8 }),
        fc.array(text, { maxLength: 2 }),
        (documents, visible) => {
          const index = buildSalienceIndex(documents, visible);
          documents.forEach((doc, d) => {
            const heaviest = Math.max(0, ...wordsOf(doc).map((w) => index.weight(w)));
            expect(index.ceiling(d)).toBe(Math.max(COMMON_CEILING, heaviest));
            for (const line of doc.split(/\r?\n/)) {
              for (const piece of [line, ...line.replace(/<[^>]*>/g, " ").split(/(?<=[.!?;])\s+/)])
                expect(lineSalience(piece, index).peak).toBeLessThanOrEqual(index.ceiling(d));
            }
          });
        },
      ),
      fcParams(300),
    );
  });
});
