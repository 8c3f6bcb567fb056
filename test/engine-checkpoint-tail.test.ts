/**
 * A checkpoint's tail (the ids of messages not held, retired actions, long fields and run lists) is stored
 * apart from its body and read only when an operation asks for it (docs/decisions/0009): a worker without a
 * cache that only turns or appends never reads it; one that writes the next checkpoint reads it once; and when
 * the tail is gone the engine falls back to the whole log without a wrong answer.
 */
import { describe, expect, it } from "vitest";
import { CHECKPOINT_FORMAT } from "../src/checkpoints/checkpoint-format.js";
import { makeCheckpoint } from "../src/checkpoints/make-checkpoint.js";
import { loadCheckpointed } from "../src/checkpoints/restore-checkpoint.js";
import { createDefaultPipeline } from "../src/compaction/default-pipeline.js";
import type { ContextEngine } from "../src/engine/context-engine.js";
import type { EngineEvent } from "../src/engine/engine-events.js";
import { createStoredCounter } from "../src/engine/stored-counter.js";
import { CheckpointUnfitError, MessageNotLoadedError } from "../src/errors/ledger-error.js";
import { serializePlan } from "../src/plan/plan-schema.js";
import type { CheckpointStore } from "../src/stores/checkpoint-store.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import type { Stores } from "../src/stores/stores.js";
import { memosOf } from "../src/strategies/strategy-memo.js";
import { propertyEngine } from "./support/engine-turns.js";
import { simpleCounter } from "./support/simple-counter.js";
import { toolRounds as rounds } from "./support/tool-rounds.js";

/** What the default pipeline's strategies keep in a checkpoint. */
const KINDS = memosOf(createDefaultPipeline().strategies);

/** Stores whose checkpoint tails are counted, and can be made to have vanished. */
function watchedStores(): {
  stores: Stores;
  tailReads: () => number;
  dropTails: () => void;
  spoilTails: (spoil: (tail: string) => string) => void;
} {
  const base = createMemoryStores();
  const checkpoints = base.checkpoints!;
  let reads = 0;
  let gone = false;
  let spoilt = (tail: string) => tail;
  const watched: CheckpointStore = {
    put: (cp) => checkpoints.put(cp),
    putExtending: (cp, base) => checkpoints.putExtending(cp, base),
    latest: (...args) => checkpoints.latest(...args),
    tail: async (...args) => {
      reads++;
      const tail = gone ? undefined : await checkpoints.tail(...args);
      return tail === undefined ? undefined : spoilt(tail);
    },
  };
  return {
    stores: { ...base, checkpoints: watched },
    tailReads: () => reads,
    dropTails: () => {
      gone = true;
    },
    spoilTails: (spoil) => {
      spoilt = spoil;
    },
  };
}

const BUDGET = 1_500;

async function turn(engine: ContextEngine, budget = BUDGET) {
  const p = await engine.prepareTurn("t", { format: "openai", budget });
  await engine.idle();
  return p;
}

/** A thread whose newest checkpoint leaves messages out (so it has a tail), written by a warm worker. */
async function compactedThread() {
  const watched = watchedStores();
  const warm = propertyEngine(watched.stores, "inline");
  await warm.append("t", rounds(0, 40));
  const first = await turn(warm);
  const cp = await watched.stores.checkpoints!.latest("t", first.stats.planVersion, 160);
  return { ...watched, warm, first, cp: cp! };
}

function loads(events: EngineEvent[]): string[] {
  return events.flatMap((e) =>
    e.type === "loaded" ? [`${e.source}${e.fallback === undefined ? "" : " again"}`] : [],
  );
}

describe("checkpoint tails", () => {
  it("a checkpoint's body is the header alone; the tail holds the ids not held and the rest", async () => {
    const { cp, stores } = await compactedThread();
    expect(cp.format).toBe(CHECKPOINT_FORMAT);
    expect(cp).not.toHaveProperty("tail");
    expect(cp.body).not.toContain("\n");
    const tail = (await stores.checkpoints!.tail("t", cp.planVersion, cp.logLength))!;
    // One chunk, written from scratch: the absent seqs with their ids, then retired actions and deferred fields.
    const [absent, rest, ...more] = tail.split("\n");
    expect(more).toEqual([]);
    expect(JSON.parse(absent!).ids.length).toBeGreaterThan(0);
    expect(JSON.parse(rest!)).toHaveProperty("retired");
    // The body is one JSON document, the header, and none of the tail's lists travel in it.
    expect(Object.keys(JSON.parse(cp.body))).toEqual(["log", "plan", "sources", "memos"]);
    expect(cp.body).not.toContain(rest!);
    expect(cp.body).not.toContain(absent!);
  });

  it("a worker without a cache turns and appends without reading the tail", async () => {
    const { stores, first, tailReads } = await compactedThread();
    const events: EngineEvent[] = [];
    const cold = propertyEngine(stores, "inline", { cacheThreads: 0, events: (e) => events.push(e) });
    const again = await turn(cold);
    expect(again.prompt.hash).toBe(first.prompt.hash);
    // Supplied ids and generated ones alike are asked of the log store, not of the tail.
    await cold.append("t", rounds(40, 1));
    await cold.append("t", [{ role: "user", parts: [{ type: "text", text: "and now?" }] }]);
    expect(loads(events)).toEqual(["checkpoint", "checkpoint", "checkpoint"]);
    expect(tailReads()).toBe(0);
    // A duplicate id is still refused: the store knows the ids the projection does not hold.
    await expect(cold.append("t", [{ id: "u0", role: "user", parts: [] }])).rejects.toThrow(/duplicate/);
    expect(tailReads()).toBe(0);
  });

  it("a checkpoint written from a restored thread reads the tail first and carries it forward", async () => {
    const { stores, cp, tailReads } = await compactedThread();
    const counter = createStoredCounter(simpleCounter());
    const restored = await loadCheckpointed(stores, counter, KINDS, "t", cp.planVersion, cp.logLength);
    expect(restored?.log.partial).toBe(true);
    const { log, plan } = restored!;
    // The restored thread does not have the tail yet: making the next checkpoint asks for it before any work.
    const error = (() => {
      try {
        makeCheckpoint(log, plan, KINDS);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(MessageNotLoadedError);
    const fetch = (error as MessageNotLoadedError).fetch;
    expect(fetch).toBeDefined();
    await fetch!();
    expect(tailReads()).toBe(1);
    // The same plan on the same log: the same checkpoint, byte for byte, body and tail.
    const again = makeCheckpoint(log, plan, KINDS)!.checkpoint;
    expect(again.body).toBe(cp.body);
    expect(again.tail).toBe(await stores.checkpoints!.tail("t", cp.planVersion, cp.logLength));
  });

  it("an append whose generated id is taken reads the tail; with the tail gone it uses the whole log", async () => {
    for (const tailsGone of [false, true]) {
      const { stores, warm, cp, tailReads, dropTails } = await compactedThread();
      // The message appended next takes the id the one after it would be given.
      await warm.append("t", [{ id: `msg-${cp.logLength + 1}`, role: "user", parts: [] }]);
      if (tailsGone) dropTails();
      const events: EngineEvent[] = [];
      const cold = propertyEngine(stores, "inline", { cacheThreads: 0, events: (e) => events.push(e) });
      const appended = await cold.append("t", [{ role: "user", parts: [{ type: "text", text: "next" }] }]);
      expect(appended.ids).toEqual([`msg-${cp.logLength + 1}-1`]);
      expect(tailReads()).toBe(1);
      expect(loads(events)).toEqual(
        tailsGone ? ["checkpoint", "checkpoint again", "cold again"] : ["checkpoint", "checkpoint again"],
      );
      // Either way the thread is what a warm worker makes of it.
      const fresh = propertyEngine(stores, "inline");
      expect((await fresh.render("t", { format: "openai", planVersion: 0 })).prompt.messages.length).toBe(
        cp.logLength + 2,
      );
    }
  });
});

describe("checkpoints continuing a stored tail", () => {
  it("a restored worker's checkpoints add chunks without reading the tail, and restore the stored plan exactly", async () => {
    const { stores, tailReads } = await compactedThread();
    const extended: string[] = [];
    const checkpoints = stores.checkpoints!;
    const counted: Stores = {
      ...stores,
      checkpoints: {
        ...checkpoints,
        putExtending: async (cp, base) => {
          const outcome = await checkpoints.putExtending(cp, base);
          extended.push(outcome);
          return outcome;
        },
      },
    };
    // One worker keeps its projection between turns: each commit's checkpoint continues the one before.
    const events: EngineEvent[] = [];
    const worker = propertyEngine(counted, "inline", { events: (e) => events.push(e) });
    let version = 0;
    for (let r = 0; r < 6; r++) {
      await worker.append("t", rounds(40 + 5 * r, 5));
      version = (await turn(worker)).stats.planVersion;
    }
    expect(loads(events)[0]).toBe("checkpoint");
    expect(extended.length).toBeGreaterThanOrEqual(3);
    expect(extended.every((o) => o === "stored")).toBe(true);
    // The writes never read a tail (each sent only what changed); a turn may have (running again with it).
    expect(tailReads()).toBe(loads(events).filter((l) => l === "checkpoint again").length);
    const length = await stores.log.length("t");
    const cp = (await checkpoints.latest("t", version, length))!;
    const tail = (await checkpoints.tail("t", cp.planVersion, cp.logLength))!;
    expect(tail.split("\n").length).toBeGreaterThan(2);
    // Read back with its tail, the latest checkpoint gives every id and the stored plan, byte for byte.
    const counter = createStoredCounter(simpleCounter());
    const restored = (await loadCheckpointed(
      stores,
      counter,
      KINDS,
      "t",
      cp.planVersion,
      cp.logLength,
      true,
    ))!;
    const whole = await stores.log.read("t", 0, cp.logLength);
    expect(Array.from(restored.log.fullIdTable()).slice(0, cp.logLength)).toEqual(
      whole.map((r) => r.message.id),
    );
    expect(serializePlan(restored.plan)).toBe(serializePlan(await stores.plans.get("t", cp.planVersion)));
  });
});

describe("a tail that does not fit its checkpoint", () => {
  const spoilers: ReadonlyArray<[string, (tail: string) => string]> = [
    ["not JSON", (tail) => `{${tail}`],
    ["no second line", (tail) => tail.split("\n")[0]!],
    ["an id missing", (tail) => tail.replace(/"ids":\["[^"]*",/, '"ids":[')],
    ["an id not a string", (tail) => tail.replace(/"ids":\["[^"]*",/, '"ids":[7,')],
    ["a seq named twice", (tail) => `${tail}\n${JSON.stringify({ absent: [1, 2], ids: ["x"] })}\n{}`],
  ];
  for (const [name, spoil] of spoilers) {
    it(`(${name}) sends the operation that read it to the whole log`, async () => {
      const { stores, warm, cp, spoilTails } = await compactedThread();
      // As in the test above: the next append's generated id is taken, so the append reads the absent ids.
      await warm.append("t", [{ id: `msg-${cp.logLength + 1}`, role: "user", parts: [] }]);
      spoilTails(spoil);
      const events: EngineEvent[] = [];
      const cold = propertyEngine(stores, "inline", { cacheThreads: 0, events: (e) => events.push(e) });
      const appended = await cold.append("t", [{ role: "user", parts: [{ type: "text", text: "next" }] }]);
      expect(appended.ids).toEqual([`msg-${cp.logLength + 1}-1`]);
      expect(loads(events)).toEqual(["checkpoint", "checkpoint again", "cold again"]);
      const reason = events.flatMap((e) => (e.type === "loaded" ? [e.fallback ?? ""] : []))[2];
      expect(reason).toMatch(/checkpoint unusable: its tail/);
    });
  }

  it("a retired action missing from it is found when first read, as a load the whole log answers", async () => {
    const { stores, warm, spoilTails } = await compactedThread();
    // Turns until the plan has an action that governs nothing any more (a summary took all of a clear's span).
    let cp = undefined as Awaited<ReturnType<CheckpointStore["latest"]>>;
    for (let round = 1; round <= 6; round++) {
      await warm.append("t", rounds(40 * round, 40));
      const { stats } = await turn(warm);
      cp = await stores.checkpoints!.latest("t", stats.planVersion, 160 * (round + 1));
      if (cp?.body.includes('"retired"')) break;
    }
    spoilTails((tail) => `${tail.split("\n")[0]}\n${JSON.stringify({ retired: [], deferred: [] })}`);
    const header = JSON.parse(cp!.body) as { plan: { actions: Array<{ retired?: number }> } };
    const retired = header.plan.actions.findIndex((a) => a.retired !== undefined);
    expect(retired).toBeGreaterThanOrEqual(0);
    const counter = createStoredCounter(simpleCounter());
    const { plan } = (await loadCheckpointed(
      stores,
      counter,
      KINDS,
      "t",
      cp!.planVersion,
      cp!.logLength,
      true,
    ))!;
    const error = (() => {
      try {
        return plan.actions[retired]!.record;
      } catch (e) {
        return e;
      }
    })();
    // Not fetchable (the tail was read): the engine's answer to such an error is the whole log.
    expect(error).toBeInstanceOf(CheckpointUnfitError);
    expect((error as MessageNotLoadedError).fetch).toBeUndefined();
    expect((error as Error).message).toMatch(/retired action/);
  });
});

describe("background runs on a restored thread", () => {
  it("a summary absorbing an earlier one is made on the projection, without reading the whole log", async () => {
    const watched = watchedStores();
    const reads: Array<[number, number]> = [];
    const log = watched.stores.log;
    const stores: Stores = {
      ...watched.stores,
      log: {
        ...log,
        read: (thread, from = 0, to = Number.POSITIVE_INFINITY) => {
          reads.push([from, to]);
          return log.read(thread, from, to);
        },
      },
    };
    const warm = propertyEngine(stores, "background");
    await warm.append("t", rounds(0, 40));
    await turn(warm);
    const plans = stores.plans;
    const before = await plans.get("t", await plans.latestVersion!("t"));
    const summaries = (p: typeof before) => p.actions.filter((a) => a.kind === "summarize");
    expect(summaries(before)).toHaveLength(1);
    await warm.append("t", rounds(40, 30));
    reads.length = 0;
    const events: EngineEvent[] = [];
    const cold = propertyEngine(stores, "background", { cacheThreads: 0, events: (e) => events.push(e) });
    await turn(cold);
    const after = await plans.get("t", await plans.latestVersion!("t"));
    // The background run committed a summary that absorbs the first one (its span starts where that one's did).
    expect(events.filter((e) => e.type === "completed" && e.operation === "background")).toHaveLength(1);
    expect(events.some((e) => e.type === "background_discarded")).toBe(false);
    const [old] = summaries(before);
    const grown = summaries(after).at(-1)!;
    expect(grown.span.length).toBeGreaterThan(old!.span.length);
    expect(grown.span.slice(0, old!.span.length)).toEqual(old!.span);
    expect(loads(events)).toEqual(["checkpoint"]);
    // Only the rows that render and those appended since were read: never the thread from its start.
    expect(reads.filter(([from, to]) => from === 0 && to >= 160)).toEqual([]);
  });
});
