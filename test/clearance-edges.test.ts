// Where a stub cannot simply stand in for content above the reader's clearance. A stub can be longer than the
// message it replaces: a turn the pipeline fitted is then compacted again to make room, and refused (before
// committing or recording anything) only when nothing more can be compacted. And the tool-use cycle in progress
// must keep its signed reasoning with its calls: prepareTurn refuses that too.
import { describe, expect, it } from "vitest";
import {
  availableForPrompt,
  BudgetInfeasibleError,
  ClearanceError,
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
  it("a request the stubs push over the budget is compacted again to make room, and stays within it", async () => {
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
    // Stubbed without compacting, the request would be over: a stub is longer than "ok".
    const stubbed = await reader.render("t", { format: "openai" });
    expect(stubbed.prompt.tokenCount).toBeGreaterThan(availableForPrompt(budget));
    const turn = await reader.prepareTurn("t", { format: "openai" });
    expect(turn.prompt.tokenCount).toBeLessThanOrEqual(availableForPrompt(budget));
    expect(JSON.stringify(turn.request)).not.toMatch(/"ok"/);
    expect(turn.request.messages.at(-1)).toMatchObject({ role: "user", content: "and now?" });
    // The budget recorded is the caller's, not the tighter one the refit compacted for; replay reproduces it.
    const record = await fresh.calls.get(turn.callId);
    expect(record?.budget?.available).toBe(availableForPrompt(budget));
    expect((await reader.replay(turn.callId)).ok).toBe(true);
  });

  it("stubs that no compaction can make room for are refused, nothing committed or recorded", async () => {
    // The confidential messages are pinned: no pipeline may compact them, so nothing can make room for their stubs.
    const stores = createMemoryStores();
    const writer = createContextEngine({ stores, clearance: "restricted", budget: 100_000 });
    await writer.append(
      "t",
      THREAD.map((m) => (m.meta === undefined ? m : { ...m, meta: { ...m.meta, pinned: true } })),
    );
    const { prompt } = await writer.render("t", { format: "openai" });
    const budget = createTokenBudget({ contextWindow: prompt.tokenCount, reserveOutput: 0, safetyMargin: 0 });
    const reader = createContextEngine({ stores, clearance: "internal", budget });
    const error = await rejection(reader.prepareTurn("t", { format: "openai" }), BudgetInfeasibleError);
    expect(error.required).toBeGreaterThan(error.available);
    expect(await stores.calls.list("t")).toEqual([]);
    expect(await stores.plans.versions("t")).toEqual([]);
  });

  it("a signed thinking block of the cycle in progress above the clearance is refused, not stubbed", async () => {
    const stores = createMemoryStores();
    const writer = createContextEngine({ stores, clearance: "restricted", budget: 100_000 });
    await writer.append("t", [
      { id: "u0", role: "user", parts: [{ type: "text", text: "look it up" }] },
      {
        id: "a0",
        role: "assistant",
        parts: [
          { type: "reasoning", text: "the vault code is 4411", signature: "sig-abc" },
          { type: "tool_call", callId: "c0", name: "lookup", args: "{}" },
        ],
        meta: { sensitivity: "confidential" },
      },
    ]);
    const reader = createContextEngine({ stores, clearance: "internal", budget: 100_000 });
    const error = await rejection(reader.prepareTurn("t", { format: "anthropic" }), ClearanceError);
    expect(error.message).toMatch(/tool-use cycle in progress/);
    expect(error.where.messageId).toBe("a0");
    expect(await stores.calls.list("t")).toEqual([]);
    // Once the cycle is over (answered, and a user message after it), the same message is withheld: its thinking
    // gone, its call kept with empty arguments.
    await writer.append("t", [
      { id: "r0", role: "tool", parts: [{ type: "tool_result", callId: "c0", content: "found" }] },
      { id: "u1", role: "user", parts: [{ type: "text", text: "thanks" }] },
    ]);
    const { request } = await reader.prepareTurn("t", { format: "anthropic" });
    expect(JSON.stringify(request)).not.toContain("4411");
    expect(JSON.stringify(request)).toContain('"type":"tool_use","id":"c0","name":"lookup","input":{}');
  });
});
