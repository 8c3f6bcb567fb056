import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import type { ContextEngine } from "../src/engine/context-engine.js";
import type { EngineListener } from "../src/engine/engine-events.js";
import { createMetricsCollector } from "../src/engine/metrics-collector.js";
import { BudgetInfeasibleError } from "../src/errors/ledger-error.js";
import { parseTranscript } from "../src/log/import-jsonl.js";
import type { MessageInput } from "../src/log/message.js";
import { splitAtReplies } from "../src/log/reply-batches.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { emptyPlan } from "../src/plan/compaction-plan.js";
import { type ProviderFormat, validateProviderRequest } from "../src/render/provider-rules.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import { openSqliteStores } from "../src/stores/sqlite/index.js";
import type { Stores } from "../src/stores/stores.js";
import { createTokenizer } from "../src/tokens/create-tokenizer.js";
import { createMessageCounter } from "../src/tokens/message-counter.js";
import { listTrajectories, trajectoriesAvailable } from "./support/trajectories.js";

const FORMATS: ReadonlyArray<ProviderFormat> = ["openai", "responses", "anthropic"];
const counter = createMessageCounter(createTokenizer({ model: "gpt-4o" }), "openai");
const dirs: string[] = [];

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function sqliteStores(): Stores {
  const dir = mkdtempSync(join(tmpdir(), "context-ledger-engine-"));
  dirs.push(dir);
  return openSqliteStores({ path: join(dir, "ledger.db"), synchronous: "normal" });
}

function engineOn(
  stores: Stores,
  extra: { cacheThreads?: number; events?: EngineListener } = {},
): ContextEngine {
  return createContextEngine({ stores, counter, budget: { contextWindow: 1_000_000 }, ...extra });
}

/**
 * Appends the thread turn by turn and prepares every model call. A turn whose protected content (system prompt,
 * last user turn) alone exceeds the budget must fail with `BudgetInfeasibleError` and leave no trace.
 */
async function driveThread(
  engine: ContextEngine,
  stores: Stores,
  inputs: ReadonlyArray<MessageInput>,
  budget: number,
): Promise<{ callIds: string[]; infeasible: number }> {
  const callIds: string[] = [];
  let infeasible = 0;
  let n = 0;
  for (const batch of splitAtReplies(inputs)) {
    await engine.append("t", batch);
    const format = FORMATS[n++ % FORMATS.length]!;
    const before = await stores.plans.versions("t");
    try {
      const turn = await engine.prepareTurn("t", { format, budget, model: "gpt-4o" });
      expect(validateProviderRequest(format, turn.request as never)).toEqual([]);
      expect(turn.prompt.tokenCount).toBeLessThanOrEqual(budget);
      callIds.push(turn.callId);
      // The model call happens here; background summarization runs meanwhile.
      await engine.idle();
    } catch (error) {
      expect(error).toBeInstanceOf(BudgetInfeasibleError);
      expect((error as BudgetInfeasibleError).required).toBeGreaterThan(
        (error as BudgetInfeasibleError).available,
      );
      expect(await stores.plans.versions("t")).toEqual(before);
      infeasible++;
    }
  }
  expect(await stores.calls.list("t")).toHaveLength(callIds.length);
  return { callIds, infeasible };
}

describe.skipIf(!trajectoriesAvailable)(
  "engine on the shared trajectories, turn by turn at 25 % of full size",
  () => {
    const files = listTrajectories();
    files.forEach((file, index) => {
      const backend = index % 4 === 0 ? "sqlite" : "memory";
      it(`${file.name} (${backend}): valid requests within budget, every call replays, a stateless worker agrees`, async () => {
        const inputs = parseTranscript(file.text);
        const full = renderPrompt(ThreadLog.from("full", inputs), emptyPlan("full"), { counter }).tokenCount;
        const budget = Math.ceil(full * 0.25);
        const stores = backend === "sqlite" ? sqliteStores() : createMemoryStores();
        try {
          const metrics = createMetricsCollector();
          const warm = engineOn(stores, { events: metrics.listener });
          const t0 = performance.now();
          const { callIds, infeasible } = await driveThread(warm, stores, inputs, budget);
          await warm.idle();
          const elapsed = performance.now() - t0;
          for (const callId of callIds) {
            const replay = await warm.replay(callId);
            expect(replay.mismatch).toBeUndefined();
            expect(replay.ok).toBe(true);
          }
          // The last turn may be infeasible at 25 %; compare the workers at a budget every thread meets.
          const roomy = full;
          const again = await warm.prepareTurn("t", { format: "openai", budget: roomy });
          // The model call happens here: the warm worker's checkpoint write finishes meanwhile.
          await warm.idle();
          const stateless = engineOn(stores, { cacheThreads: 0 });
          const cold = await stateless.prepareTurn("t", { format: "openai", budget: roomy });
          // A worker without a cache starts from the checkpoint of the latest plan version (0009).
          expect(cold.stats.loadedFrom).toBe(again.stats.planVersion > 0 ? "checkpoint" : "cold");
          expect(cold.prompt.hash).toBe(again.prompt.hash);
          expect(cold.stats.planVersion).toBe(again.stats.planVersion);
          const m = metrics.snapshot();
          console.log(
            `${file.name}: ${callIds.length} calls (+${infeasible} infeasible), budget ${budget}/${full}, plan v${again.stats.planVersion}, ` +
              `${JSON.stringify(m.messages)}, background commits ${m.durations.background?.count ?? 0}/${m.events.background_scheduled ?? 0}, ${(elapsed / (callIds.length + infeasible)).toFixed(1)} ms/turn`,
          );
        } finally {
          await stores.close();
        }
      });
    });
  },
);
