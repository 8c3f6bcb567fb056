/**
 * A stateless worker runs a turn on a partial log restored from a thread checkpoint. A strategy written without
 * any thought of that — one that reads every message inside a catch-all and carries on — must not be able to make
 * the worker answer from what it failed to read: the read past the partial log is recorded for the operation,
 * and the worker runs the turn again on more of the thread, so the strategy's answer that counts saw every
 * message. (Before the checkpoint wing, every strategy had to rethrow a special error by hand.)
 */
import { describe, expect, it } from "vitest";
import { createDefaultPipeline } from "../src/compaction/default-pipeline.js";
import { createPipeline } from "../src/compaction/pipeline.js";
import { createContextEngine } from "../src/context-engine.js";
import type { EngineEvent } from "../src/engine/engine-events.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import type { Strategy } from "../src/strategies/strategy.js";
import { simpleCounter } from "./support/simple-counter.js";
import { toolRounds as rounds } from "./support/tool-rounds.js";

describe("a strategy with a catch-all on a stateless worker", () => {
  it("never has its partial reading count: the turn runs again until it read every message", async () => {
    const reads: Array<{ readonly length: number; readonly read: number }> = [];
    const carefree: Strategy = {
      name: "carefree",
      cost: "free",
      kinds: ["clear"],
      propose: ({ log }) => {
        let read = 0;
        for (let seq = 0; seq < log.length; seq++) {
          try {
            if (log.at(seq) !== undefined) read++;
          } catch {
            // A strategy that carries on past anything it cannot read.
          }
        }
        reads.push({ length: log.length, read });
        return { actions: [] };
      },
    };
    const pipeline = createPipeline({ strategies: [...createDefaultPipeline().strategies, carefree] });
    const stores = createMemoryStores();
    const options = { stores, counter: simpleCounter(), pipeline, budget: { contextWindow: 1_000_000 } };
    const warm = createContextEngine(options);
    await warm.append("t", rounds(0, 40));
    const first = await warm.prepareTurn("t", { format: "openai", budget: 1_500 });
    await warm.idle();
    expect(first.stats.compacted).toBe(true);
    expect(reads.every((r) => r.read === r.length)).toBe(true);

    const events: EngineEvent[] = [];
    const cold = createContextEngine({ ...options, cacheThreads: 0, events: (e) => events.push(e) });
    reads.length = 0;
    await cold.append("t", rounds(40, 1));
    const turn = await cold.prepareTurn("t", { format: "openai", budget: 1_500 });
    const loads = events.flatMap((e) =>
      e.type === "loaded" ? [`${e.source}${e.fallback === undefined ? "" : " again"}`] : [],
    );
    // The turn started on the checkpoint, where the strategy swallowed what it could not read …
    expect(loads.at(-2)?.startsWith("checkpoint")).toBe(true);
    expect(reads.some((r) => r.read < r.length)).toBe(true);
    // … and its answer that counted read every message, on the whole log.
    expect(loads.at(-1)).toBe("cold again");
    expect(reads.at(-1)).toEqual({ length: 164, read: 164 });
    // The same request a warm worker sends.
    const same = await warm.prepareTurn("t", { format: "openai", budget: 1_500 });
    expect(same.prompt.hash).toBe(turn.prompt.hash);
  });
});
