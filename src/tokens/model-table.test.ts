import { getEncodingNameForModel, type TiktokenModel } from "js-tiktoken/lite";
import { describe, expect, it } from "vitest";
import { encodingForModel, lookupModel, MODEL_TABLE } from "./model-table.js";

/** Models js-tiktoken knows, in our two encodings. */
const TIKTOKEN_MODELS: TiktokenModel[] = [
  "gpt-4o",
  "gpt-4o-2024-08-06",
  "gpt-4o-mini",
  "chatgpt-4o-latest",
  "gpt-4.1",
  "gpt-4.1-mini",
  "gpt-4.1-nano-2025-04-14",
  "gpt-4.5-preview",
  "o1",
  "o1-mini",
  "o1-preview",
  "o3",
  "o3-mini",
  "o4-mini",
  "gpt-5",
  "gpt-5-mini",
  "gpt-5-nano-2025-08-07",
  "gpt-5-chat-latest",
  "gpt-4",
  "gpt-4-0613",
  "gpt-4-32k",
  "gpt-4-turbo",
  "gpt-4-turbo-2024-04-09",
  "gpt-4-1106-preview",
  "gpt-4-vision-preview",
  "gpt-3.5-turbo",
  "gpt-3.5-turbo-16k",
  "gpt-35-turbo",
];

describe("model table", () => {
  it.each(TIKTOKEN_MODELS)("agrees with js-tiktoken on the encoding of %s", (model) => {
    expect(encodingForModel(model)).toBe(getEncodingNameForModel(model));
  });

  it("matches the most specific prefix first", () => {
    expect(lookupModel("gpt-4o-2024-11-20")?.prefix).toBe("gpt-4o");
    expect(lookupModel("gpt-4o-mini")?.prefix).toBe("gpt-4o-mini");
    expect(lookupModel("gpt-4-turbo-preview")?.contextWindow).toBe(128_000);
    expect(lookupModel("gpt-4-0613")?.contextWindow).toBe(8_192);
    expect(lookupModel("gpt-4.1-mini")?.contextWindow).toBe(1_047_576);
    expect(lookupModel("GPT-5 ")?.contextWindow).toBe(400_000);
    expect(lookupModel("o3-mini")?.contextWindow).toBe(200_000);
    expect(lookupModel("gpt-3.5-turbo")?.contextWindow).toBe(16_385);
  });

  it("marks Anthropic models as estimated, with no encoding", () => {
    for (const model of [
      "claude-sonnet-4-5",
      "claude-opus-4-1-20250805",
      "claude-3-5-haiku-latest",
      "claude-2.1",
    ]) {
      const info = lookupModel(model);
      expect(info?.provider, model).toBe("anthropic");
      expect(info?.estimated).toBe(true);
      expect(info?.contextWindow).toBe(200_000);
      expect(encodingForModel(model)).toBeUndefined();
    }
  });

  it("knows nothing about other models", () => {
    expect(lookupModel("llama-3-70b")).toBeUndefined();
    expect(encodingForModel("mistral-large")).toBeUndefined();
  });

  it("never shadows an entry with an earlier, shorter prefix", () => {
    MODEL_TABLE.forEach((entry, i) => {
      const shadow = MODEL_TABLE.slice(0, i).find((earlier) => entry.prefix.startsWith(earlier.prefix));
      expect(shadow?.prefix, entry.prefix).toBeUndefined();
    });
  });

  it("leaves room for a prompt under every default output reserve", () => {
    for (const entry of MODEL_TABLE) expect(entry.defaultMaxOutputTokens).toBeLessThan(entry.contextWindow);
  });
});
