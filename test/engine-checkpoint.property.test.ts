/**
 * Thread checkpoints (docs/decisions/0009) never change what a worker does. Two copies of the same stores get
 * the same random batches and turns: one is driven by an engine that keeps the thread cached, the other by an
 * engine that caches nothing, so each of its turns starts from the newest checkpoint (a log holding only what
 * renders, the plan as runs, the strategies' memos) or, when a turn needs more, from the whole log. Every turn
 * must give the same request bytes, hash, plan version and outcome, and both stores must end with the same plan
 * versions. Set FC_SEED to replay a failure.
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { loadCheckpointed } from "../src/checkpoints/restore-checkpoint.js";
import { createDefaultPipeline } from "../src/compaction/default-pipeline.js";
import type { ContextEngine } from "../src/engine/context-engine.js";
import { createStoredCounter } from "../src/engine/stored-counter.js";
import type { MessageInput } from "../src/log/message.js";
import { serializePlan } from "../src/plan/plan-schema.js";
import type { ProviderFormat } from "../src/render/provider-rules.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import type { Stores } from "../src/stores/stores.js";
import { memosOf } from "../src/strategies/strategy-memo.js";
import { arbitraryBatches, fcParams } from "./support/arbitrary-log.js";
import { propertyEngine, type Turn, turnArb } from "./support/engine-turns.js";
import { simpleCounter } from "./support/simple-counter.js";

/** What the default pipeline's strategies keep in a checkpoint. */
const KINDS = memosOf(createDefaultPipeline().strategies);

const RUNS = 150;
/** Stateless loads: first attempts by source, then the runs again with the checkpoint's tail or the whole log. */
const sources = { checkpoint: 0, cold: 0, warm: 0, withTail: 0, whole: 0 };
/** Checkpoints the cache-less workers wrote: whole, or continuing a stored one's tail (by outcome). */
const written = { whole: 0, stored: 0, exists: 0, missing: 0 };
/** Newest checkpoints read back exactly with their tails, by how their tail was made. */
const decoded = { whole: 0, continued: 0 };

type Outcome =
  | { readonly ok: true; readonly hash: string; readonly request: string; readonly version: number }
  | { readonly ok: false; readonly error: string };

async function turnOn(engine: ContextEngine, format: ProviderFormat, budget: number): Promise<Outcome> {
  try {
    const p = await engine.prepareTurn("t", { format, budget });
    return {
      ok: true,
      hash: p.prompt.hash,
      request: JSON.stringify(p.request),
      version: p.stats.planVersion,
    };
  } catch (error) {
    return { ok: false, error: (error as Error).constructor.name };
  }
}

async function plansOf(stores: Stores): Promise<string[]> {
  const versions = await stores.plans.versions("t");
  return Promise.all(versions.map(async (v) => serializePlan(await stores.plans.get("t", v))));
}

async function logOf(stores: Stores): Promise<string[]> {
  const rows = await stores.log.read("t", 0, await stores.log.length("t"));
  return rows.map(({ message }) => `${message.seq} ${message.id} ${message.hash}`);
}

/**
 * The newest checkpoint of the latest plan version, read back with its tail (whole, or chunks continuing earlier
 * checkpoints), gives every id of the log and the stored plan, byte for byte.
 */
async function expectCheckpointExact(stores: Stores): Promise<void> {
  const version = await stores.plans.latestVersion!("t");
  const length = await stores.log.length("t");
  if (version < 1) return;
  const cp = await stores.checkpoints!.latest("t", version, length);
  if (cp === undefined) return;
  const restored = await loadCheckpointed(
    stores,
    createStoredCounter(simpleCounter()),
    KINDS,
    "t",
    version,
    length,
    true,
  );
  expect(restored).toBeDefined();
  const rows = await stores.log.read("t", 0, cp.logLength);
  const ids = Array.from(restored!.log.fullIdTable()).slice(0, cp.logLength);
  expect(ids).toEqual(rows.map((r) => r.message.id));
  expect(serializePlan(restored!.plan)).toBe(serializePlan(await stores.plans.get("t", version)));
  const chunks =
    ((await stores.checkpoints!.tail("t", cp.planVersion, cp.logLength)) ?? "").split("\n").length / 2;
  if (chunks > 1) decoded.continued++;
  else decoded.whole++;
}

async function checkThread(
  batches: ReadonlyArray<ReadonlyArray<MessageInput>>,
  turns: ReadonlyArray<Turn>,
  summarization: "inline" | "background",
): Promise<void> {
  const warmStores = createMemoryStores();
  const coldBase = createMemoryStores();
  const checkpoints = coldBase.checkpoints!;
  const coldStores: Stores = {
    ...coldBase,
    checkpoints: {
      ...checkpoints,
      put: async (cp) => {
        written.whole++;
        return checkpoints.put(cp);
      },
      putExtending: async (cp, base) => {
        const outcome = await checkpoints.putExtending(cp, base);
        written[outcome]++;
        return outcome;
      },
    },
  };
  const warm = propertyEngine(warmStores, summarization);
  const writer = propertyEngine(coldStores, summarization, { cacheThreads: 0 });
  const stateless = propertyEngine(coldStores, summarization, {
    cacheThreads: 0,
    events: (event) => {
      if (event.type !== "loaded") return;
      if (event.fallback === undefined) sources[event.source]++;
      else if (event.source === "checkpoint") sources.withTail++;
      else sources.whole++;
    },
  });
  try {
    for (const [i, batch] of batches.entries()) {
      await warm.append("t", batch);
      await writer.append("t", batch);
      const turn = turns[i % turns.length]!;
      const full = (await warm.render("t", { format: "openai", planVersion: 0 })).prompt.tokenCount;
      const budget = Math.max(1, Math.floor(full * turn.share));
      const expected = await turnOn(warm, turn.format, budget);
      await warm.idle();
      const actual = await turnOn(stateless, turn.format, budget);
      await stateless.idle();
      expect(actual).toEqual(expected);
    }
    expect(await plansOf(coldStores)).toEqual(await plansOf(warmStores));
    // The cache-less writer appended from checkpoints: the same messages, ids (generated ones too) and hashes.
    expect(await logOf(coldStores)).toEqual(await logOf(warmStores));
    await expectCheckpointExact(coldStores);
  } finally {
    await warm.idle();
    await stateless.idle();
    await warmStores.close();
    await coldStores.close();
  }
}

describe("thread checkpoints (property)", () => {
  for (const summarization of ["inline", "background"] as const) {
    it(`a worker without a cache turns exactly like a warm one, summarization ${summarization}`, async () => {
      await fc.assert(
        fc.asyncProperty(
          arbitraryBatches({ maxOps: 24 }),
          fc.array(turnArb, { minLength: 1, maxLength: 6 }),
          (batches, turns) => checkThread(batches, turns, summarization),
        ),
        fcParams(RUNS),
      );
    }, 180_000);
  }

  afterAll(() => {
    console.log(
      `stateless loads: ${JSON.stringify(sources)}; checkpoints written: ${JSON.stringify(written)}; read back: ${JSON.stringify(decoded)}`,
    );
    // The property must not pass vacuously: hundreds of turns started from a checkpoint (the others had no plan
    // version yet, or needed the whole log), most of those did not need the whole log, and some ran again with
    // the checkpoint's tail (a new action naming messages not held).
    expect(sources.checkpoint).toBeGreaterThan(RUNS);
    expect(sources.whole).toBeLessThan(sources.checkpoint / 2);
    expect(sources.withTail).toBeGreaterThan(0);
    // Checkpoints written by a worker that had restored one continued its tail (the others followed full
    // loads: a thread's first compaction, or a run that needed the whole log).
    expect(written.stored).toBeGreaterThan(RUNS / 3);
    // Among the newest checkpoints read back exactly, some had tails continued over several checkpoints.
    expect(decoded.continued).toBeGreaterThan(0);
  });
});
