import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { estimateTokens, excerptText, omissionMarker } from "./text-excerpt.js";

const lines = (n: number, tag = "line") => Array.from({ length: n }, (_, i) => `${tag} ${i}`).join("\n");

describe("excerptText", () => {
  it("returns a text that fits whole, with nothing omitted", () => {
    expect(excerptText("short", { maxChars: 10 })).toEqual({ text: "short" });
    expect(excerptText("short", { maxTokens: 2 })).toEqual({ text: "short" });
    expect(excerptText("short")).toEqual({ text: "short" });
  });

  it("keeps head and tail at line ends with a marker of the chars, lines and tokens left out", () => {
    const text = lines(1000);
    const out = excerptText(text, { maxTokens: 200 });
    expect(estimateTokens(out.text)).toBeLessThanOrEqual(200);
    expect(out.text.startsWith("line 0\nline 1\n")).toBe(true);
    expect(out.text.endsWith("line 998\nline 999")).toBe(true);
    const [marker] = /\[… \d+ chars \(\d+ lines, ~\d+ tokens\) omitted …\]/.exec(out.text)!;
    expect(out.text).toContain(`\n${marker}\n`);
    const { omitted } = out;
    expect(marker).toBe(omissionMarker(omitted!));
    // Whole lines were cut: what is left plus what was omitted is the original.
    const [head, tail] = out.text.split(`${marker}\n`) as [string, string];
    expect(head.length + omitted!.chars + tail.length).toBe(text.length);
    expect(text.slice(head.length, head.length + omitted!.chars).split("\n").length - 1).toBe(omitted!.lines);
  });

  it("honours the head share and names the artifact holding the full text", () => {
    const text = lines(1000);
    const out = excerptText(text, { maxChars: 2000, headShare: 0.8, artifactId: "art-7" });
    expect(out.text.length).toBeLessThanOrEqual(2000);
    const [head, tail] = out.text.split(/\[…[^\]]*…\]/) as [string, string];
    expect(head.length).toBeGreaterThan(tail.length * 3);
    expect(out.text).toContain("; full text in artifact art-7 …]");
    expect(out.omitted?.tokens).toBeUndefined();
  });

  it("counts with the given tokenizer, and returns the marker alone when nothing else fits", () => {
    const words = (t: string) => t.split(/\s+/).filter(Boolean).length;
    const text = "alpha beta ".repeat(500);
    const out = excerptText(text, { maxTokens: 50, countTokens: words });
    expect(words(out.text)).toBeLessThanOrEqual(50);
    expect(out.omitted!.tokens).toBeGreaterThan(900);
    const tiny = excerptText(text, { maxChars: 5 });
    expect(tiny.text).toBe(omissionMarker(tiny.omitted!));
    expect(tiny.omitted!.chars).toBe(text.length);
  });

  it("never splits a surrogate pair", () => {
    const text = "😀".repeat(3000);
    const out = excerptText(text, { maxChars: 1001 });
    expect(out.text).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
  });

  it("sends key lines of the omitted middle after the marker when asked, within the same allowance", () => {
    const text = Array.from({ length: 400 }, (_, i) => (i === 200 ? "ERROR at step 200" : `row ${i}`)).join(
      "\n",
    );
    const keyLines = (middle: string, maxChars: number) =>
      middle.split("\n").filter((l) => l.startsWith("ERROR") && l.length <= maxChars);
    const out = excerptText(text, { maxChars: 400, keyLines });
    expect(out.text.length).toBeLessThanOrEqual(400);
    expect(out.text.startsWith("row 0\n")).toBe(true);
    expect(out.text.endsWith("row 399")).toBe(true);
    expect(out.text).toMatch(/omitted; 1 key line of it below …\]\nERROR at step 200\n\[…\]\n/);
    // Without key lines the same allowance is all head and tail, as before.
    const plain = excerptText(text, { maxChars: 400 });
    expect(plain.text).not.toContain("ERROR");
    expect(plain.text).not.toContain("key line");
  });

  it("fits any text into any allowance with key lines too, deterministically", () => {
    const keyLines = (middle: string, maxChars: number) => {
      const picked: string[] = [];
      let used = 0;
      for (const line of middle.split("\n").filter((l) => /\d/.test(l))) {
        if (used + line.length + 1 > maxChars) break;
        picked.push(line);
        used += line.length + 1;
      }
      return picked;
    };
    fc.assert(
      fc.property(
        fc.array(fc.string({ maxLength: 40 }), { maxLength: 300 }).map((lines) => lines.join("\n")),
        fc.integer({ min: 80, max: 2000 }),
        (text, maxChars) => {
          const options = { maxChars, keyLines, maxTokens: Math.ceil(maxChars / 3) };
          const out = excerptText(text, options);
          expect(out.text.length).toBeLessThanOrEqual(maxChars);
          expect(excerptText(text, options)).toEqual(out);
          if (out.omitted === undefined) expect(out.text).toBe(text);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("fits any text into any allowance the marker leaves room for, deterministically", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme", maxLength: 3000 }),
        fc.integer({ min: 80, max: 2000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (text, maxChars, headShare) => {
          const out = excerptText(text, { maxChars, headShare, maxTokens: Math.ceil(maxChars / 3) });
          expect(out.text.length).toBeLessThanOrEqual(maxChars);
          expect(estimateTokens(out.text)).toBeLessThanOrEqual(Math.ceil(maxChars / 3));
          expect(excerptText(text, { maxChars, headShare, maxTokens: Math.ceil(maxChars / 3) })).toEqual(out);
          if (out.omitted === undefined) expect(out.text).toBe(text);
        },
      ),
      { numRuns: 300 },
    );
  });
});
