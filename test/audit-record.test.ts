/**
 * The audit record of a call is complete (issue 16, item 9): besides the request hash it names every action in
 * force by span — clears, summaries, externalizations, drops — says which summarizer and prompt version wrote each
 * summary, and what the turn brought back; replay hands the record back with its verdict.
 */
import { describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import { simpleCounter } from "./support/simple-counter.js";
import { toolRounds } from "./support/tool-rounds.js";

describe("the call's audit record", () => {
  it("names clears and summaries with their summarizer, and replay returns it", async () => {
    const stores = createMemoryStores();
    const engine = createContextEngine({
      stores,
      counter: simpleCounter(),
      budget: { contextWindow: 1_000_000 },
      summarization: "inline",
    });
    await engine.append("t", toolRounds(0, 60));
    const turn = await engine.prepareTurn("t", { format: "openai", budget: 2_000 });
    const record = await stores.calls.get(turn.callId);
    expect(record?.evictions.some((e) => e.startsWith("clear:"))).toBe(true);
    expect(record?.summaries.length).toBeGreaterThan(0);
    expect(record?.summarizers?.length).toBe(record?.summaries.length);
    for (const s of record?.summarizers ?? []) {
      expect(s.summarizerId).toMatch(/extractive/);
      expect(s.promptVersion).not.toBe("");
      expect(s.messages).toBeGreaterThan(0);
    }
    // Every message is accounted for: the named actions govern what was compacted, the rest was kept.
    const governed = [...record!.summaries, ...record!.evictions].reduce(
      (n, ref) => n + Number(ref.slice(ref.lastIndexOf("+") + 1)),
      0,
    );
    expect(governed).toBeGreaterThan(0);
    expect(governed).toBeLessThanOrEqual(record!.logSeq);
    // The budget the call was prepared against is kept with it, as the turn's stats gave it.
    expect(record?.budget).toEqual(turn.stats.budget);
    expect(record!.tokenEstimate - turn.prompt.tokenCount).toBeGreaterThanOrEqual(0);
    const replay = await engine.replay(turn.callId);
    expect(replay.ok).toBe(true);
    expect(replay.record).toEqual(record);
  });
});
