/**
 * Render format versions: cl-render/4 changed the pointer's text (it names the recall tool); cl-render/5 made a
 * cleared tool result name its call id and a summary say that recall finds its messages by query. Calls recorded
 * under earlier versions still replay — the renderer keeps the earlier texts and hash lines — and a request
 * rendered today tells the model how to bring back whatever was compacted.
 */
import { describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { emptyPlan, extendPlan, type PlanAction } from "../src/plan/compaction-plan.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import { RENDER_FORMAT_VERSION, RENDER_FORMAT_VERSIONS, recallCallHint } from "../src/texts/placeholders.js";
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
    expect(RENDER_FORMAT_VERSIONS).toEqual(["cl-render/5", "cl-render/4", "cl-render/3"]);
    expect(RENDER_FORMAT_VERSION).toBe("cl-render/5");
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

  it("cl-render/5 names the way back in placeholders and summaries, and a cl-render/4 call still replays", async () => {
    const stores = createMemoryStores();
    const counter = simpleCounter();
    const engine = createContextEngine({ stores, counter, budget: { contextWindow: 100_000 } });
    const messages = toolRounds(0, 4);
    await engine.append("t", messages);
    const act = (action: Omit<PlanAction, "strategy" | "reason">) =>
      ({ ...action, strategy: "test", reason: "test" }) as PlanAction;
    const keyLines = "[result cleared: search, 609 chars; key lines:]\nresult 1";
    const plan = extendPlan(
      emptyPlan("t"),
      [
        act({ kind: "clear", span: ["t0"], record: { kind: "clear" } }),
        act({
          kind: "clear",
          span: ["t1"],
          record: { kind: "clear", excerpts: [{ messageId: "t1", text: keyLines }] },
        }),
        act({
          kind: "summarize",
          span: ["u2", "a2", "t2", "x2"],
          record: { kind: "summarize", summary: "searched", summarizerId: "test", promptVersion: "1" },
        }),
      ],
      messages.length,
    );
    await stores.plans.commit(plan, 0);
    const turn = await engine.prepareTurn("t", { format: "openai" });
    const sent = JSON.stringify(turn.request);
    expect(sent).toContain('[result cleared: search, 609 chars; recall callId \\"c0\\"]');
    expect(sent).toContain(
      '[result cleared: search, 609 chars; recall callId \\"c1\\"; key lines:]\\nresult 1',
    );
    expect(sent).toContain("[Summary of 4 earlier messages; recall by query]\\nsearched");
    expect((await engine.replay(turn.callId)).ok).toBe(true);
    // The same request as cl-render/4 rendered it: the texts without the way back, a hash of its own.
    const old = renderPrompt(ThreadLog.from("t", messages), plan, { counter, formatVersion: "cl-render/4" });
    const oldText = JSON.stringify(old.messages);
    expect(oldText).toContain('"[result cleared: search, 609 chars]"');
    expect(oldText).toContain(JSON.stringify(keyLines));
    expect(oldText).toContain('"[Summary of 4 earlier messages]\\nsearched"');
    expect(oldText).not.toContain("recall callId");
    expect(old.hash).not.toBe(turn.prompt.hash);
    const recorded = (await stores.calls.get(turn.callId))!;
    await stores.calls.record({ ...recorded, callId: "v4-call", requestHash: old.hash });
    const replay = await engine.replay("v4-call");
    expect([replay.ok, replay.actualHash]).toEqual([true, old.hash]);
  });

  it("every tool result the pipeline clears names its call id, and recall by that id brings it back", async () => {
    const stores = createMemoryStores();
    const counter = simpleCounter();
    const engine = createContextEngine({
      stores,
      counter,
      budget: { contextWindow: 3_000, reserveOutput: 0 },
    });
    const messages = toolRounds(0, 12);
    await engine.append("t", messages);
    const turn = await engine.prepareTurn("t", { format: "anthropic" });
    const cleared = turn.prompt.messages.filter((m) => m.provenance.kind === "cleared" && m.role === "tool");
    expect(cleared.length).toBeGreaterThan(2);
    for (const message of cleared) {
      for (const part of message.parts) {
        if (part.type !== "tool_result") continue;
        expect(part.content).toContain(recallCallHint(part.callId));
        const original = messages.find((m) => m.id === message.provenance.sourceIds[0])!;
        const answer = await engine.recall("t", { callId: part.callId });
        expect(answer.content).toBe((original.parts[0] as { content: string }).content);
      }
    }
  });
});
