// A stub standing for content above the reader's clearance can be longer than the message it replaces. A turn
// the pipeline fitted must then not go out over its budget: prepareTurn refuses it, before committing or
// recording anything.
import { describe, expect, it } from "vitest";
import {
  BudgetInfeasibleError,
  createContextEngine,
  createMemoryStores,
  createTokenBudget,
  type MessageInput,
} from "../src/index.js";
import { rejection } from "./support/store-cases-log.js";

const THREAD: MessageInput[] = [
  { id: "u0", role: "user", parts: [{ type: "text", text: "tally the votes" }] },
  ...Array.from(
    { length: 20 },
    (_, i): MessageInput => ({
      id: `a${i}`,
      role: "assistant",
      parts: [{ type: "text", text: "ok" }],
      meta: { sensitivity: "confidential" },
    }),
  ),
  { id: "u1", role: "user", parts: [{ type: "text", text: "and now?" }] },
];

describe("clearance stubs and the budget", () => {
  it("a request the stubs push over the budget is refused, nothing committed or recorded", async () => {
    const stores = createMemoryStores();
    const writer = createContextEngine({ stores, clearance: "restricted", budget: 100_000 });
    await writer.append("t", THREAD);
    // The whole request as a reader who may see everything gets it: exactly what the budget allows.
    const { prompt } = await writer.render("t", { format: "openai" });
    const budget = createTokenBudget({ contextWindow: prompt.tokenCount, reserveOutput: 0, safetyMargin: 0 });
    const fits = createContextEngine({ stores, clearance: "restricted", budget });
    const seen = await fits.prepareTurn("t", { format: "openai" });
    expect(seen.prompt.tokenCount).toBeLessThanOrEqual(prompt.tokenCount);

    const fresh = createMemoryStores();
    await createContextEngine({ stores: fresh, clearance: "restricted", budget: 100_000 }).append(
      "t",
      THREAD,
    );
    const reader = createContextEngine({ stores: fresh, clearance: "internal", budget });
    const error = await rejection(reader.prepareTurn("t", { format: "openai" }), BudgetInfeasibleError);
    expect(error.message).toMatch(/stubs of content above the reader's clearance/);
    expect(error.required).toBeGreaterThan(error.available);
    expect(await fresh.calls.list("t")).toEqual([]);
    expect(await fresh.plans.versions("t")).toEqual([]);
  });
});
