/** A thread with no messages is an error that says so, for the harness step and for the audit views alike. */
import { describe, expect, it } from "vitest";
import { createContextEngine, createMemoryStores, NotFoundError } from "../src/index.js";

describe("engine on a thread without messages", () => {
  const engine = createContextEngine({ stores: createMemoryStores(), budget: { model: "gpt-4o" } });
  const calls: ReadonlyArray<[string, () => Promise<unknown>]> = [
    ["prepareTurn", () => engine.prepareTurn("nobody", { format: "openai" })],
    ["render", () => engine.render("nobody", { format: "anthropic" })],
    ["explain", () => engine.explain("nobody")],
    ["compact", () => engine.compact("nobody", { budget: 1_000 })],
  ];
  for (const [name, call] of calls) {
    it(`${name} rejects with NotFoundError naming the thread`, async () => {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotFoundError);
      expect((error as NotFoundError).where.threadId).toBe("nobody");
      expect((error as Error).message).toContain("append (or ingest)");
    });
  }

  it("append still starts a thread, and the thread then prepares", async () => {
    await engine.append("somebody", [{ role: "user", parts: [{ type: "text", text: "hello" }] }]);
    const turn = await engine.prepareTurn("somebody", { format: "openai" });
    expect(turn.stats.logSeq).toBe(1);
  });
});
