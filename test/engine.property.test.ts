/**
 * The engine's invariants on random threads (fast-check): appended in random batches, a turn prepared after each
 * batch with a random budget (from far below what the protected content needs to more than the whole thread) in
 * a random provider format, summarization inline or in the background. Every turn either returns a request that
 * is within budget and valid by the provider's rules, replays to the same hash, and renders identically from a
 * stateless worker over the same stores; or fails with `BudgetInfeasibleError` and leaves the plan versions and
 * the call records as they were. The stored log is exactly what was appended. Set FC_SEED to replay a failure.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ContextEngine } from "../src/engine/context-engine.js";
import { BudgetInfeasibleError, RenderValidationError } from "../src/errors/ledger-error.js";
import type { MessageInput } from "../src/log/message.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { validateProviderRequest } from "../src/render/provider-rules.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import type { Stores } from "../src/stores/stores.js";
import { arbitraryBatches, fcParams } from "./support/arbitrary-log.js";
import { propertyEngine, type Turn, turnArb } from "./support/engine-turns.js";

const RUNS = 300;
function engineOn(
  stores: Stores,
  summarization: "inline" | "background",
  cacheThreads?: number,
): ContextEngine {
  return propertyEngine(stores, summarization, cacheThreads === undefined ? {} : { cacheThreads });
}

async function checkThread(
  batches: ReadonlyArray<ReadonlyArray<MessageInput>>,
  turns: ReadonlyArray<Turn>,
  summarization: "inline" | "background",
): Promise<void> {
  const stores = createMemoryStores();
  const warm = engineOn(stores, summarization);
  const stateless = engineOn(stores, summarization, 0);
  const callIds: string[] = [];
  try {
    for (const [i, batch] of batches.entries()) {
      await warm.append("t", batch);
      const turn = turns[i % turns.length]!;
      const full = (await warm.render("t", { format: "openai", planVersion: 0 })).prompt.tokenCount;
      const budget = Math.max(1, Math.floor(full * turn.share));
      const versions = await stores.plans.versions("t");
      const calls = await stores.calls.list("t");
      try {
        const prepared = await warm.prepareTurn("t", { format: turn.format, budget });
        expect(prepared.prompt.tokenCount).toBeLessThanOrEqual(budget);
        expect(validateProviderRequest(turn.format, prepared.request as never)).toEqual([]);
        callIds.push(prepared.callId);
        // A worker with nothing cached renders the same committed version to the same bytes.
        const cold = await stateless.render("t", {
          format: turn.format,
          planVersion: prepared.stats.planVersion,
        });
        expect(cold.prompt.hash).toBe(prepared.prompt.hash);
        expect(JSON.stringify(cold.request)).toBe(JSON.stringify(prepared.request));
      } catch (error) {
        if (error instanceof RenderValidationError) {
          // Only a thread that is invalid for that provider uncompacted too (e.g. nothing but a system prompt
          // for Anthropic) may fail this way: compaction never makes a request invalid.
          const raw = await warm.render("t", { format: turn.format, planVersion: 0 });
          expect(validateProviderRequest(turn.format, raw.request as never)).not.toEqual([]);
        } else {
          if (!(error instanceof BudgetInfeasibleError)) throw error;
          expect(error.required).toBeGreaterThan(error.available);
        }
        expect(await stores.plans.versions("t")).toEqual(versions);
        expect(await stores.calls.list("t")).toEqual(calls);
      }
      await warm.idle();
    }
    for (const callId of callIds) {
      const replay = await warm.replay(callId);
      expect(replay.mismatch).toBeUndefined();
      expect(replay.ok).toBe(true);
    }
    // The log holds exactly what was appended, in order.
    const expected = ThreadLog.from("t", batches.flat()).messages.map((m) => [m.id, m.hash]);
    const stored = await stores.log.read("t", 0);
    expect(stored.map((s) => [s.message.id, s.message.hash])).toEqual(expected);
    // Plan versions only move forward, one at a time.
    const versions = await stores.plans.versions("t");
    expect(versions).toEqual(versions.map((_, i) => i + 1));
  } finally {
    await warm.idle();
    await stores.close();
  }
}

describe("context engine invariants (property)", () => {
  for (const summarization of ["inline", "background"] as const) {
    it(`random threads, batches and budgets, summarization ${summarization}`, async () => {
      await fc.assert(
        fc.asyncProperty(
          arbitraryBatches({ maxOps: 20 }),
          fc.array(turnArb, { minLength: 1, maxLength: 6 }),
          (batches, turns) => checkThread(batches, turns, summarization),
        ),
        fcParams(RUNS),
      );
    }, 120_000);
  }
});
