import { describe, expect, it } from "vitest";
import {
  listTrajectories,
  trajectoriesAvailable,
  trajectoriesSkipReason,
} from "../../test/support/trajectories.js";
import { createBpeTokenizer } from "./bpe-tokenizer.js";
import type { EncodingName } from "./encoding-data.js";
import { createTiktokenTokenizer } from "./tiktoken-tokenizer.js";

/** Every `content`, every `tool_calls[].arguments` and every `reasoning` of every trajectory line. */
function trajectoryTexts(): Array<{ where: string; text: string }> {
  const out: Array<{ where: string; text: string }> = [];
  for (const file of listTrajectories()) {
    file.text.split("\n").forEach((line, i) => {
      if (line.trim() === "") return;
      const row = JSON.parse(line) as {
        content?: unknown;
        reasoning?: unknown;
        tool_calls?: Array<{ arguments?: unknown }>;
      };
      const where = `${file.name}:${i + 1}`;
      if (typeof row.content === "string") out.push({ where, text: row.content });
      if (typeof row.reasoning === "string") out.push({ where: `${where} reasoning`, text: row.reasoning });
      for (const call of row.tool_calls ?? []) {
        if (typeof call.arguments === "string")
          out.push({ where: `${where} arguments`, text: call.arguments });
      }
    });
  }
  return out;
}

describe.skipIf(!trajectoriesAvailable)(
  `BPE tokenizer on the real trajectories${trajectoriesSkipReason ? ` (${trajectoriesSkipReason})` : ""}`,
  () => {
    it.each(["o200k_base", "cl100k_base"] as EncodingName[])(
      "gives js-tiktoken's exact token ids for every text (%s)",
      (encoding) => {
        const ours = createBpeTokenizer(encoding);
        const reference = createTiktokenTokenizer(encoding);
        const texts = trajectoryTexts();
        expect(texts.length).toBeGreaterThan(1000);
        let mismatches = 0;
        for (const { where, text } of texts) {
          const expected = reference.encode(text);
          if (ours.count(text) !== expected.length) {
            mismatches++;
            expect.soft(ours.count(text), where).toBe(expected.length);
          }
          expect(ours.encode(text), where).toEqual(expected);
        }
        expect(mismatches).toBe(0);
      },
    );
  },
);
