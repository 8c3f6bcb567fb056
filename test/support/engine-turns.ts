/**
 * What the engine property tests share: an engine on given stores with the test counter and a roomy window, and
 * random turns (a provider format and a budget as a share of the thread's full rendered size).
 */
import fc from "fast-check";
import { createContextEngine } from "../../src/context-engine.js";
import type { ContextEngine } from "../../src/engine/context-engine.js";
import type { EngineListener } from "../../src/engine/engine-events.js";
import type { ProviderFormat } from "../../src/render/provider-rules.js";
import type { Stores } from "../../src/stores/stores.js";
import { simpleCounter } from "./simple-counter.js";

export const FORMATS: ReadonlyArray<ProviderFormat> = ["openai", "responses", "anthropic"];

const counter = simpleCounter();

/** An engine for the property tests; `cacheThreads: 0` makes a worker that keeps nothing between turns. */
export function propertyEngine(
  stores: Stores,
  summarization: "inline" | "background",
  extra: { readonly cacheThreads?: number; readonly events?: EngineListener } = {},
): ContextEngine {
  return createContextEngine({
    stores,
    counter,
    budget: { contextWindow: 1_000_000 },
    summarization,
    ...(extra.cacheThreads === undefined ? {} : { cacheThreads: extra.cacheThreads }),
    ...(extra.events === undefined ? {} : { events: extra.events }),
  });
}

export interface Turn {
  readonly format: ProviderFormat;
  /** Budget as a share of the thread's full rendered size. */
  readonly share: number;
}

/** Mostly budgets the thread can meet after compaction, sometimes far below what its protected part needs. */
export const turnArb: fc.Arbitrary<Turn> = fc.record({
  format: fc.constantFrom(...FORMATS),
  share: fc.oneof(
    { weight: 1, arbitrary: fc.double({ min: 0.02, max: 0.3, noNaN: true }) },
    { weight: 3, arbitrary: fc.double({ min: 0.3, max: 1.5, noNaN: true }) },
  ),
});
