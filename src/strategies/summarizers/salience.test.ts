import { describe, expect, it } from "vitest";
import { buildSalienceIndex, lineSalience, wordsOf } from "./salience.js";

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
});
