/**
 * A worker without a cache, in its own thread (its own V8 heap): the engine benchmark's writer keeps a
 * 100,000-message thread warm in the main thread, and a stateless worker in that heap would pay the writer's
 * garbage collection too. Each request makes a new engine over the same stores and times one `prepareTurn`
 * (background work it queued finishes outside the timing).
 */
import { parentPort, workerData } from "node:worker_threads";
import { createContextEngine } from "../../src/index.js";
import { openPostgresStores } from "../../src/stores/postgres/index.js";
import { openSqliteStores } from "../../src/stores/sqlite/index.js";

/** Which stores the worker opens (the ones the benchmark's writer uses). */
export type StatelessStores =
  | { readonly backend: "sqlite"; readonly path: string }
  | { readonly backend: "postgres"; readonly connectionString: string; readonly schema: string };

/** What the worker answers per turn. */
export interface StatelessTurn {
  readonly ms: number;
  readonly tokens: number;
  readonly loadedFrom: string;
  /** When the turn's steps ended, in ms from its start (for `--verbose`). */
  readonly detail: string;
}

interface Request {
  readonly type: "turn" | "close";
  readonly thread: string;
  readonly budget: number;
}

const spec = workerData as StatelessStores;
const stores =
  spec.backend === "sqlite"
    ? openSqliteStores({ path: spec.path })
    : await openPostgresStores({ connectionString: spec.connectionString, schema: spec.schema });

parentPort!.on("message", async (request: Request) => {
  if (request.type === "close") {
    await stores.close();
    parentPort!.close();
    return;
  }
  const marks: string[] = [];
  const t0 = performance.now();
  const engine = createContextEngine({
    stores,
    budget: { model: "gpt-4o" },
    events: (e) => {
      if (
        e.type === "loaded" ||
        e.type === "committed" ||
        e.type === "rendered" ||
        e.type === "call_recorded"
      )
        marks.push(`${e.type}@${(performance.now() - t0).toFixed(1)}`);
      // Strategy steps that took a while, with what became of them.
      if (e.type === "proposal" && e.durationMs >= 2)
        marks.push(`[${e.strategy} ${e.outcome} ${e.durationMs.toFixed(1)}ms]`);
    },
  });
  const out = await engine.prepareTurn(request.thread, { format: "openai", budget: request.budget });
  const ms = performance.now() - t0;
  await engine.idle();
  const turn: StatelessTurn = {
    ms,
    tokens: out.stats.tokens,
    loadedFrom: out.stats.loadedFrom,
    detail: marks.join(" "),
  };
  parentPort!.postMessage(turn);
});
