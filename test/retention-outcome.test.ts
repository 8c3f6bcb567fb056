/**
 * What the model keeps, on the shared trajectories (issue 14): every run, with planted facts and a pinned
 * constraint, replayed call by call through the engine with its defaults (idle() never awaited) and through a
 * keep-newest window at a quarter of its size, judged as `npm run bench:quality` judges. The engine sends every
 * call (none over budget, invalid or failed), keeps the pinned constraint and the task verbatim wherever they fit,
 * and keeps at least 1.5 times the planted facts of the window, each kind. The benchmark has the full figures.
 */
import { describe, expect, it } from "vitest";
import { benchCounter } from "../benchmarks/support/bench-counter.js";
import { plantFacts } from "../benchmarks/support/quality-facts.js";
import { inputAt, seedOf } from "../benchmarks/support/quality-input.js";
import { ChatCounter } from "../benchmarks/support/quality-judge.js";
import { keepNewestSystem } from "../benchmarks/support/quality-peers.js";
import { replay } from "../benchmarks/support/quality-replay.js";
import { engineSystem } from "../benchmarks/support/quality-systems.js";
import { addTallies, emptyTally, type RunTally } from "../benchmarks/support/quality-tally.js";
import { parseTranscript } from "../src/index.js";
import { listTrajectories, trajectoriesAvailable } from "./support/trajectories.js";

describe.skipIf(!trajectoriesAvailable)("retention on the shared trajectories", () => {
  it("the engine sends every call, keeps pinned and task, and 1.5x the facts of a keep-newest window at 25 %", async () => {
    const counter = benchCounter();
    let engine: RunTally = emptyTally();
    let window: RunTally = emptyTally();
    for (const file of listTrajectories()) {
      const run = plantFacts(parseTranscript(file.text), seedOf(file.name));
      const { input } = inputAt(run, 0.25, counter, new ChatCounter(counter));
      engine = addTallies(engine, await replay(engineSystem(false), input));
      window = addTallies(window, await replay(keepNewestSystem(), input));
    }
    expect(engine.notes.filter((n) => / failed| over budget| invalid/.test(n))).toEqual([]);
    expect([engine.failed, engine.overBudget, engine.invalid]).toEqual([0, 0, 0]);
    expect(engine.pinned.hit).toBe(engine.pinned.of);
    expect(engine.task.hit).toBe(engine.task.of);
    for (const kind of ["identifier", "word"] as const) {
      const ours = engine.finalKept[kind] / engine.finalPlanted[kind];
      const theirs = window.finalKept[kind] / window.finalPlanted[kind];
      expect(ours, `${kind} facts: ${ours} vs the window's ${theirs}`).toBeGreaterThanOrEqual(1.5 * theirs);
    }
  }, 120_000);
});
