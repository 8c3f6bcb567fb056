/**
 * The engine's `pendingCalls` mode is the one the request is rendered with, so replay and render give the hash
 * that was sent, whichever mode is chosen (found by review: "hold" used to be ignored by the pipeline).
 */
import { describe, expect, it } from "vitest";
import { createContextEngine, createMemoryStores, createPipeline, ValidationError } from "../src/index.js";

const messages = [
  { role: "user" as const, parts: [{ type: "text" as const, text: "Look up the order." }] },
  {
    role: "assistant" as const,
    parts: [{ type: "tool_call" as const, callId: "c1", name: "lookup", args: '{"id":7}' }],
  },
];

describe("engine pendingCalls", () => {
  for (const mode of ["stub", "hold"] as const) {
    it(`${mode}: the sent request renders the call that way, and replay and render reproduce its hash`, async () => {
      const engine = createContextEngine({
        stores: createMemoryStores(),
        budget: { model: "gpt-4o" },
        pendingCalls: mode,
      });
      await engine.append("t", messages);
      const turn = await engine.prepareTurn("t", { format: "openai" });
      const stubbed = turn.prompt.messages.some((m) => m.provenance.kind === "pending_stub");
      expect(stubbed).toBe(mode === "stub");
      const replay = await engine.replay(turn.callId);
      expect(replay.ok).toBe(true);
      expect((await engine.render("t", { format: "openai" })).prompt.hash).toBe(turn.prompt.hash);
    });
  }

  it("refuses a mode that contradicts the given pipeline's", () => {
    expect(() =>
      createContextEngine({
        stores: createMemoryStores(),
        budget: { model: "gpt-4o" },
        pipeline: createPipeline({ strategies: [] }),
        pendingCalls: "hold",
      }),
    ).toThrow(ValidationError);
  });
});
