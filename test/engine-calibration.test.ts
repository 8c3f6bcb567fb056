/**
 * Calibration compares the provider's input tokens with what the engine expects the provider to count: the
 * rendered request plus the tool definitions and framing the budget reserves. A provider that counts exactly
 * that must calibrate to 1, not to "the tools were estimation error".
 */
import { describe, expect, it } from "vitest";
import { createContextEngine, createMemoryStores } from "../src/index.js";

describe("engine calibration", () => {
  it("learns ratio 1 when the provider counts the request plus the reserved tool schema exactly", async () => {
    const toolSchemaTokens = 400;
    const engine = createContextEngine({
      stores: createMemoryStores(),
      budget: { contextWindow: 20_000, reserveOutput: 0, toolSchemaTokens },
    });
    await engine.append("t", [{ role: "user", parts: [{ type: "text", text: "Summarize the report." }] }]);
    let ratio = 0;
    for (let turn = 0; turn < 4; turn++) {
      const { callId, prompt } = await engine.prepareTurn("t", { format: "openai", model: "m" });
      ratio = (await engine.recordUsage(callId, { inputTokens: prompt.tokenCount + toolSchemaTokens })).ratio;
      await engine.append("t", [
        { role: "assistant", parts: [{ type: "text", text: `Part ${turn} done.` }] },
        { role: "user", parts: [{ type: "text", text: "Go on." }] },
      ]);
    }
    expect(ratio).toBe(1);
    // A provider that counts 10 % more than that is learned as 1.1.
    for (let turn = 0; turn < 5; turn++) {
      const { callId, prompt } = await engine.prepareTurn("t", { format: "openai", model: "n" });
      const inputTokens = Math.round((prompt.tokenCount + toolSchemaTokens) * 1.1);
      ratio = (await engine.recordUsage(callId, { inputTokens })).ratio;
    }
    expect(ratio).toBeCloseTo(1.1, 2);
  });
});
