/**
 * Room for a turn's own content (issue 16, item 8): with a budget that keeps no reserve, a turn's injections and
 * rehydrated artifacts take their room from the history on that turn; with a reserve too small, the error names
 * the injection (index and label) or artifact that overflowed it, with its size.
 */
import { describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import { BudgetInfeasibleError } from "../src/errors/ledger-error.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import { simpleCounter } from "./support/simple-counter.js";
import { toolRounds } from "./support/tool-rounds.js";

describe("reserves for the turn's own content", () => {
  it("takes the room for injections and rehydrations from the history when the budget keeps none", async () => {
    const engine = createContextEngine({
      stores: createMemoryStores(),
      counter: simpleCounter(),
      budget: { contextWindow: 6_000, reserveOutput: 0, safetyMargin: 0 },
      summarization: "inline",
    });
    await engine.append("t", toolRounds(0, 20));
    const docs = "reference material ".repeat(150);
    const turn = await engine.prepareTurn("t", {
      format: "anthropic",
      injected: [{ text: docs, label: "docs" }],
      rehydrated: [{ artifactId: "art_1", content: "earlier notes ".repeat(40) }],
    });
    expect(turn.stats.tokens).toBeLessThanOrEqual(turn.stats.budget.available);
    expect(JSON.stringify(turn.request)).toContain("reference material");
    expect(JSON.stringify(turn.request)).toContain("[Rehydrated artifact art_1]");
    // A turn without them keeps its whole target.
    const plain = await engine.prepareTurn("t", { format: "anthropic" });
    expect(plain.stats.budget.target).toBeGreaterThan(turn.stats.budget.target);
  });

  it("names the injection that overflows a reserve too small for it", async () => {
    const engine = createContextEngine({
      stores: createMemoryStores(),
      counter: simpleCounter(),
      budget: { contextWindow: 50_000, reserveOutput: 0, safetyMargin: 0, injectionReserve: 50 },
    });
    await engine.append("t", toolRounds(0, 2));
    const error = await engine
      .prepareTurn("t", {
        format: "openai",
        injected: ["short", { text: "long ".repeat(500), label: "retrieved docs" }],
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(BudgetInfeasibleError);
    expect((error as Error).message).toMatch(
      /injection 1 \("retrieved docs"\): \d+ tokens, injection 0: \d+ tokens/,
    );
  });
});
