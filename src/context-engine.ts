import { checkpointedLoader } from "./checkpoints/checkpointed-loader.js";
import { type ContextEngine, createEngine } from "./engine/context-engine.js";
import type { ContextEngineOptions } from "./engine/engine-options.js";
import { buildEnginePipelines } from "./engine/engine-pipelines.js";

/**
 * Creates a context engine over a set of stores (see {@link ContextEngine}); options are validated here. When the
 * stores keep thread checkpoints (SQLite, PostgreSQL), a worker that has not seen a thread loads it from its newest
 * checkpoint instead of reading the whole log (docs/ARCHITECTURE.md, "Stateless workers").
 *
 * @example
 * const engine = createContextEngine({ stores: createMemoryStores(), budget: { model: "gpt-4o" } });
 */
export function createContextEngine(options: ContextEngineOptions): ContextEngine {
  return createEngine(options, { makeLoader: checkpointedLoader, buildPipelines: buildEnginePipelines });
}
