/**
 * Render format versions: cl-render/4 changed the pointer's text (it names the recall tool). A call recorded
 * under cl-render/3 still replays — the renderer keeps the earlier texts and hash line — and a request rendered
 * today tells the model how to bring externalized content back.
 */
import { describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { emptyPlan, extendPlan } from "../src/plan/compaction-plan.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import { RENDER_FORMAT_VERSION } from "../src/texts/placeholders.js";
import { simpleCounter } from "./support/simple-counter.js";
import { toolRounds } from "./support/tool-rounds.js";

describe("render format versions", () => {
  it("a pointer names the recall tool, and a call recorded under cl-render/3 still replays", async () => {
    const stores = createMemoryStores();
    const counter = simpleCounter();
    const engine = createContextEngine({ stores, counter, budget: { contextWindow: 100_000 } });
    const messages = toolRounds(0, 3);
    await engine.append("t", messages);
    const plan = extendPlan(
      emptyPlan("t"),
      [
        {
          kind: "externalize",
          span: ["a0", "t0"],
          record: { kind: "externalize", artifactId: "art_x", summary: "search results" },
          strategy: "test",
          reason: "moved out",
        },
      ],
      messages.length,
    );
    await stores.plans.commit(plan, 0);
    const turn = await engine.prepareTurn("t", { format: "openai" });
    expect(RENDER_FORMAT_VERSION).toBe("cl-render/4");
    expect(JSON.stringify(turn.request)).toContain('call the recall tool with artifactId \\"art_x\\"');
    expect((await engine.replay(turn.callId)).ok).toBe(true);
    // The same request as cl-render/3 rendered it, recorded as another call.
    const log = ThreadLog.from("t", messages);
    const old = renderPrompt(log, plan, { counter, formatVersion: "cl-render/3" });
    expect(JSON.stringify(old.messages)).toContain(
      "Reference artifact art_x to bring the full content back.",
    );
    expect(old.hash).not.toBe(turn.prompt.hash);
    const recorded = (await stores.calls.get(turn.callId))!;
    await stores.calls.record({ ...recorded, callId: "old-call", requestHash: old.hash });
    const replay = await engine.replay("old-call");
    expect(replay.ok).toBe(true);
    expect(replay.actualHash).toBe(old.hash);
    // A hash neither version gives is still a mismatch.
    await stores.calls.record({ ...recorded, callId: "forged", requestHash: "0".repeat(64) });
    expect((await engine.replay("forged")).ok).toBe(false);
  });
});
