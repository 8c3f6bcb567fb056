/**
 * Per-tier caps work (issue 16, item 7): `tierCaps.toolResults` brings the tool results a request shows verbatim
 * under their share of the window even when the whole request fits, oldest first, sparing what the model reads
 * next; and a custom strategy can read the budget from its context.
 */
import { describe, expect, it } from "vitest";
import { createPipeline } from "../src/compaction/pipeline.js";
import { createContextEngine } from "../src/context-engine.js";
import type { MessageInput } from "../src/log/message.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import type { Strategy } from "../src/strategies/strategy.js";
import { createToolResultRetention } from "../src/strategies/tool-result-retention.js";
import { simpleCounter } from "./support/simple-counter.js";

function reads(count: number, chars: number): MessageInput[] {
  const out: MessageInput[] = [{ id: "u0", role: "user", parts: [{ type: "text", text: "audit the repo" }] }];
  for (let i = 0; i < count; i++) {
    out.push(
      {
        id: `a${i}`,
        role: "assistant",
        parts: [{ type: "tool_call", callId: `c${i}`, name: "read", args: `{"f":${i}}` }],
      },
      {
        id: `r${i}`,
        role: "tool",
        parts: [{ type: "tool_result", callId: `c${i}`, content: `file ${i} ${"z".repeat(chars)}` }],
      },
    );
  }
  return out;
}

describe("tier caps", () => {
  it("stubs the oldest tool results until the tier is under its cap, though the request fits", async () => {
    const counter = simpleCounter();
    const budget = {
      contextWindow: 100_000,
      reserveOutput: 0,
      safetyMargin: 0,
      tierCaps: { toolResults: 0.05 },
    };
    // Retention alone would keep all of these (keep the last 50): only the cap makes it act.
    const pipeline = createPipeline({
      strategies: [createToolResultRetention({ default: { keepLast: 50 } })],
    });
    const engine = createContextEngine({ stores: createMemoryStores(), counter, budget, pipeline });
    const messages = reads(12, 2_000);
    await engine.append("t", messages);
    const turn = await engine.prepareTurn("t", { format: "openai" });
    expect(turn.stats.tokens).toBeLessThan(turn.stats.budget.target);
    const tool = turn.prompt.messages.filter((m) => m.role === "tool");
    const shown = tool.filter((m) => JSON.stringify(m.parts).includes("zzzz"));
    const shownTokens = shown.reduce((n, m) => n + m.tokens, 0);
    expect(shownTokens).toBeLessThanOrEqual(5_000);
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.length).toBeLessThan(12);
    // The newest result is shown whole; the stubbed ones are the oldest.
    const ids = shown.map((m) => m.provenance.sourceIds[0]);
    expect(ids).toContain("r11");
    expect(ids).not.toContain("r0");
    expect(turn.stats.actionsByKind.clear).toBeGreaterThan(0);
  });

  it("leaves the tier alone without a cap, and hands custom strategies the budget", async () => {
    let seen: unknown;
    const peek: Strategy = {
      name: "peek",
      cost: "free",
      kinds: ["clear"],
      propose: (ctx) => {
        seen = ctx.budget.tierCaps;
        return { actions: [] };
      },
    };
    const pipeline = createPipeline({
      strategies: [createToolResultRetention({ default: { keepLast: 50 } }), peek],
    });
    const budget = { contextWindow: 100_000, reserveOutput: 0, safetyMargin: 0 };
    const engine = createContextEngine({
      stores: createMemoryStores(),
      counter: simpleCounter(),
      budget,
      pipeline,
    });
    await engine.append("t", reads(12, 2_000));
    const turn = await engine.prepareTurn("t", { format: "openai" });
    expect(turn.stats.compacted).toBe(false);
    expect(seen).toEqual({});
  });
});
