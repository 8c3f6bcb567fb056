/**
 * An engine created without a pipeline builder (what the CLI does, so a read loads no strategy) builds its
 * pipelines on the first operation that runs one. It must behave as the engine `createContextEngine` builds at
 * once: the same requests, plans and background work, on the same calls, in both pending-call modes.
 */
import { describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import { createEngine } from "../src/engine/context-engine.js";
import type { ContextEngineOptions } from "../src/engine/engine-options.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import { simpleCounter } from "./support/simple-counter.js";
import { toolRounds } from "./support/tool-rounds.js";

async function drive(
  make: (options: ContextEngineOptions) => ReturnType<typeof createEngine>,
  hold: boolean,
) {
  const stores = createMemoryStores();
  let n = 0;
  const engine = make({
    stores,
    counter: simpleCounter(),
    budget: { contextWindow: 1_000_000 },
    newCallId: () => `call-${n++}`,
    now: () => 1_700_000_000_000,
    ...(hold ? { pendingCalls: "hold" as const } : {}),
  });
  // A read first: nothing has asked for the pipelines yet.
  await engine.append("t", toolRounds(0, 20));
  const explained = await engine.explain("t");
  const hashes: string[] = [];
  for (let round = 1; round <= 4; round++) {
    await engine.append("t", toolRounds(round * 20, 20));
    const turn = await engine.prepareTurn("t", { format: "openai", budget: 1_500 });
    hashes.push(turn.prompt.hash);
    await engine.idle();
    const replay = await engine.replay(turn.callId);
    expect(replay.ok).toBe(true);
  }
  const compacted = await engine.compact("t", { budget: 1_200 });
  const plan = await stores.plans.latest("t");
  return { explained: explained.totals, hashes, compacted: compacted.ok, plan: plan?.version };
}

describe("pipelines built on first use", () => {
  for (const hold of [false, true]) {
    it(`give the same requests and plans as pipelines built at creation (pendingCalls ${hold ? "hold" : "stub"})`, async () => {
      const eager = await drive(createContextEngine, hold);
      const lazy = await drive((options) => createEngine(options), hold);
      expect(lazy).toEqual(eager);
      // The turns compacted: the comparison covers pipeline runs, not only renders of the whole log.
      expect(new Set(eager.hashes).size).toBe(eager.hashes.length);
      expect(eager.plan).toBeGreaterThan(0);
    });
  }

  it("still refuses an engine without a budget at creation", () => {
    expect(() => createEngine({ stores: createMemoryStores() } as unknown as ContextEngineOptions)).toThrow(
      /needs a budget/,
    );
  });

  it("reports a bad pipeline config on the first operation that runs it", async () => {
    const engine = createEngine({
      stores: createMemoryStores(),
      counter: simpleCounter(),
      budget: { contextWindow: 1_000_000 },
      pipeline: { strategies: [{ use: "noSuchStrategy" }] },
    } as unknown as ContextEngineOptions);
    await engine.append("t", toolRounds(0, 5));
    // A read does not need the pipelines.
    await expect(engine.explain("t")).resolves.toBeDefined();
    await expect(engine.prepareTurn("t", { format: "openai", budget: 1_000 })).rejects.toThrow(
      /noSuchStrategy/,
    );
  });
});
