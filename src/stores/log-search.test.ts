import { describe, expect, it } from "vitest";
import {
  SEARCH_MAX_TERMS,
  SEARCH_TEXT_MAX_CHARS,
  SEARCH_WORD_MAX_CHARS,
  searchTerms,
  searchTextOf,
  searchWords,
} from "./log-search.js";

describe("search words", () => {
  it("are lower-cased letters and digits, accents removed, split at everything else", () => {
    expect(searchWords("Read parse_config.ts: TIMEOUT_MS=30_000, Café Ünïcode 東京 x2")).toEqual([
      "read",
      "parse",
      "config",
      "ts",
      "timeout",
      "ms",
      "30",
      "000",
      "cafe",
      "unicode",
      "東京",
      "x2",
    ]);
    expect(searchWords("  ...!!!  ")).toEqual([]);
    expect(searchWords(`short ${"z".repeat(SEARCH_WORD_MAX_CHARS + 1)} end`)).toEqual(["short", "end"]);
  });

  it("of a message: text, tool-call names and arguments, tool results; not reasoning or media", () => {
    const text = searchTextOf({
      parts: [
        { type: "text", text: "Look" },
        { type: "tool_call", callId: "c", name: "grep", args: '{"pattern":"TODO"}' },
        { type: "tool_result", callId: "c", content: "src/a.ts:3 TODO" },
        { type: "reasoning", text: "secret thoughts" },
        { type: "media", mediaType: "image/png", uri: "file://x.png", alt: "diagram" },
      ],
    });
    expect(text).toBe("look grep pattern todo src a ts 3 todo");
    expect(searchTextOf({ parts: [{ type: "text", text: "—" }] })).toBe("");
  });

  it("of a huge message stop at the index's limit, on a word boundary", () => {
    const text = searchTextOf({ parts: [{ type: "text", text: "word ".repeat(SEARCH_TEXT_MAX_CHARS) }] });
    expect(text.length).toBeLessThanOrEqual(SEARCH_TEXT_MAX_CHARS);
    expect(text.length).toBeGreaterThan(SEARCH_TEXT_MAX_CHARS - 5);
    expect(text.endsWith("word")).toBe(true);
  });

  it("of a query are distinct, in order, and at most SEARCH_MAX_TERMS", () => {
    expect(searchTerms("Error error ERROR parser")).toEqual(["error", "parser"]);
    const many = Array.from({ length: 40 }, (_, i) => `w${i}`).join(" ");
    expect(searchTerms(many)).toHaveLength(SEARCH_MAX_TERMS);
  });
});
