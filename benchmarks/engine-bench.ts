/**
 * The engine end to end on a generated thread of 10,000 and 100,000 messages (budget 20,000 tokens, gpt-4o):
 *
 * - **append**: `engine.append` of the whole thread in batches of 5,000 per backend (memory, SQLite in a temp
 *   file, PostgreSQL on a throwaway `initdb` cluster when the server binaries are there): validation, hashing,
 *   token counting and the store write.
 * - **warm**: one engine, +10 messages per round, `prepareTurn` (after the first compaction).
 * - **stateless**: +10 messages appended by the warm engine, then a *new* engine over the same stores runs
 *   `prepareTurn` in a worker thread of its own (its own heap, as a worker process has): it loads the thread
 *   from the stores (the newest checkpoint and the rows that render, docs/decisions/0009), as a worker
 *   without a cache does.
 *
 * Stateless and warm figures are reported as ratios to the in-memory warm `prepareTurn` measured in the same
 * run, and every figure at 100,000 messages as a ratio to 10,000. Background summarization is awaited between
 * rounds, outside the timings. `--full` runs more rounds. Writes benchmarks/results/engine.json and prints a
 * markdown table (pasted into benchmarks/README.md).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { type ContextEngine, createContextEngine, createMemoryStores } from "../src/index.js";
import type { MessageInput } from "../src/log/message.js";
import { openPostgresStores } from "../src/stores/postgres/index.js";
import { openSqliteStores } from "../src/stores/sqlite/index.js";
import type { Stores } from "../src/stores/stores.js";
import { type PostgresCluster, startPostgresCluster } from "../test/support/postgres-cluster.js";
import { repoRoot } from "../test/support/repo-root.js";
import { generatedMessages } from "./support/datasets.js";
import type { StatelessStores, StatelessTurn } from "./support/stateless-worker.js";
import { ms, sinkValue, summarize, type Timing } from "./support/stats.js";

const FULL = process.argv.includes("--full");
const VERBOSE = process.argv.includes("--verbose");
const SIZES = [10_000, 100_000];
const BATCH = 5_000;
const BUDGET = 20_000;
const WARM_ROUNDS = FULL ? 30 : 10;
const STATELESS_ROUNDS = FULL ? 7 : 3;
/** Untimed stateless rounds first: the worker thread's code is compiled afresh, as a new process's would be. */
const STATELESS_WARMUP = 5;
const THREAD = "bench";
const turn = { format: "openai" as const, budget: BUDGET };

type Backend = "memory" | "sqlite" | "postgres";

interface Row {
  backend: Backend;
  messages: number;
  /** Whole thread through `engine.append`, batches of 5,000. */
  appendMs: number;
  appendPerSecond: number;
  /** The first `prepareTurn` after the append (first compaction, nothing cached but the log). */
  firstMs: number;
  warm: Timing;
  stateless?: Timing;
  /** Where each timed stateless turn started from (`checkpoint`, or `cold` for a full load). */
  statelessLoadedFrom?: string[];
  renderedTokens: number;
}

interface Opened {
  readonly stores: Stores;
  readonly close: () => Promise<void>;
  /** How a worker thread opens the same stores (none for memory). */
  readonly shared?: StatelessStores;
}

/** A stateless worker in its own thread (benchmarks/support/stateless-worker.ts). */
class StatelessWorker {
  readonly #worker: Worker;

  constructor(shared: StatelessStores) {
    // Compiled, the worker is plain JavaScript beside this file; run from source (tsx), it is TypeScript.
    const compiled = import.meta.url.endsWith(".js");
    const url = new URL(`./support/stateless-worker.${compiled ? "js" : "ts"}`, import.meta.url);
    this.#worker = new Worker(url, {
      workerData: shared,
      ...(compiled ? {} : { execArgv: ["--import", "tsx"] }),
    });
  }

  turn(): Promise<StatelessTurn> {
    return new Promise((resolve, reject) => {
      const failed = (error: Error) => reject(error);
      this.#worker.once("error", failed);
      this.#worker.once("message", (turn: StatelessTurn) => {
        this.#worker.off("error", failed);
        resolve(turn);
      });
      this.#worker.postMessage({ type: "turn", thread: THREAD, budget: BUDGET });
    });
  }

  async close(): Promise<void> {
    const exited = new Promise((resolve) => this.#worker.once("exit", resolve));
    this.#worker.postMessage({ type: "close" });
    await exited;
  }
}

function engineOn(stores: Stores): ContextEngine {
  return createContextEngine({ stores, budget: { model: "gpt-4o" } });
}

async function appendAll(engine: ContextEngine, messages: ReadonlyArray<MessageInput>): Promise<number> {
  const t0 = performance.now();
  for (let at = 0; at < messages.length; at += BATCH)
    await engine.append(THREAD, messages.slice(at, at + BATCH));
  return performance.now() - t0;
}

/** One timed `prepareTurn`; background work it queued finishes outside the timing. */
async function timedTurn(engine: ContextEngine): Promise<{ ms: number; tokens: number }> {
  const t0 = performance.now();
  const out = await engine.prepareTurn(THREAD, turn);
  const elapsed = performance.now() - t0;
  await engine.idle();
  return { ms: elapsed, tokens: out.stats.tokens };
}

async function measure(backend: Backend, opened: Opened, all: MessageInput[], size: number): Promise<Row> {
  // Each configuration starts from a collected heap (with --expose-gc, as the npm script runs it): the
  // garbage of the one before (a 100,000-message thread per backend) would otherwise be collected during this
  // one's timings.
  (globalThis as { gc?: () => void }).gc?.();
  const writer = engineOn(opened.stores);
  const appendMs = await appendAll(writer, all.slice(0, size));
  const first = await timedTurn(writer);
  let next = size;
  const more = () => {
    const batch = all.slice(next, next + 10);
    next += 10;
    return batch;
  };
  const warm: number[] = [];
  let tokens = first.tokens;
  for (let round = 0; round < WARM_ROUNDS + 2; round++) {
    await writer.append(THREAD, more());
    const t = await timedTurn(writer);
    tokens = t.tokens;
    if (round >= 2) warm.push(t.ms);
  }
  const row: Row = {
    backend,
    messages: size,
    appendMs,
    appendPerSecond: size / (appendMs / 1000),
    firstMs: first.ms,
    warm: summarize(warm),
    renderedTokens: tokens,
  };
  if (backend === "memory" || opened.shared === undefined) return row;
  const stateless: number[] = [];
  const loadedFrom: string[] = [];
  const worker = new StatelessWorker(opened.shared);
  try {
    for (let round = 0; round < STATELESS_WARMUP + STATELESS_ROUNDS; round++) {
      await writer.append(THREAD, more());
      const t = await worker.turn();
      if (round < STATELESS_WARMUP) continue;
      stateless.push(t.ms);
      loadedFrom.push(t.loadedFrom);
      if (VERBOSE)
        console.error(
          `  ${backend} ${size} stateless round ${round}: ${ms(t.ms)} ms (${t.loadedFrom}; ${t.detail})`,
        );
    }
  } finally {
    await worker.close();
  }
  return { ...row, stateless: summarize(stateless), statelessLoadedFrom: loadedFrom };
}

async function open(backend: Backend, cluster: PostgresCluster | undefined, n: number): Promise<Opened> {
  if (backend === "memory") return { stores: createMemoryStores(), close: async () => {} };
  if (backend === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "context-ledger-bench-"));
    const path = join(dir, "ledger.db");
    const stores = openSqliteStores({ path });
    return {
      stores,
      shared: { backend: "sqlite", path },
      close: async () => {
        await stores.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const shared = {
    backend: "postgres",
    connectionString: cluster!.connectionString,
    schema: `bench_${n}`,
  } as const;
  const stores = await openPostgresStores({
    connectionString: shared.connectionString,
    schema: shared.schema,
  });
  return { stores, shared, close: () => stores.close() };
}

async function startCluster(): Promise<PostgresCluster | undefined> {
  try {
    return await startPostgresCluster();
  } catch (error) {
    console.log(
      `PostgreSQL skipped: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`,
    );
    return undefined;
  }
}

const ratio = (a: number, b: number): string => `${(a / b).toFixed(1)}×`;

function table(rows: ReadonlyArray<Row>): string {
  const warmOf = (size: number) =>
    rows.find((r) => r.backend === "memory" && r.messages === size)?.warm.median;
  const lines = [
    "| backend | messages | append msgs/s | first turn ms | warm ms (min–max) | stateless ms (min–max) | stateless / in-memory warm |",
    "|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const r of rows) {
    const base = warmOf(r.messages);
    const timing = (t: Timing | undefined) =>
      t === undefined ? "–" : `${ms(t.median)} (${ms(t.min)}–${ms(t.max)})`;
    const rel = r.stateless === undefined || base === undefined ? "–" : ratio(r.stateless.median, base);
    lines.push(
      `| ${r.backend} | ${r.messages.toLocaleString("en")} | ${Math.round(r.appendPerSecond).toLocaleString("en")} | ${ms(r.firstMs)} | ${timing(r.warm)} | ${timing(r.stateless)} | ${rel} |`,
    );
  }
  lines.push(
    "",
    "| backend | append 100k / 10k (per message) | warm 100k / 10k | stateless 100k / 10k |",
    "|---|---:|---:|---:|",
  );
  for (const backend of new Set(rows.map((r) => r.backend))) {
    const [small, large] = SIZES.map((s) => rows.find((r) => r.backend === backend && r.messages === s));
    if (small === undefined || large === undefined) continue;
    const stateless =
      small.stateless && large.stateless ? ratio(large.stateless.median, small.stateless.median) : "–";
    lines.push(
      `| ${backend} | ${ratio(small.appendPerSecond, large.appendPerSecond)} | ${ratio(large.warm.median, small.warm.median)} | ${stateless} |`,
    );
  }
  return lines.join("\n");
}

async function main(): Promise<void> {
  const rounds = WARM_ROUNDS + STATELESS_WARMUP + STATELESS_ROUNDS + 10;
  const all = generatedMessages(SIZES[SIZES.length - 1]! + 10 * rounds, 11);
  const cluster = await startCluster();
  const only = process.argv
    .find((a) => a.startsWith("--backends="))
    ?.slice("--backends=".length)
    .split(",");
  const backends = (cluster === undefined ? ["memory", "sqlite"] : ["memory", "sqlite", "postgres"]).filter(
    (b) => only === undefined || b === "memory" || only.includes(b),
  ) as Backend[];
  const rows: Row[] = [];
  try {
    for (const size of SIZES) {
      for (const backend of backends) {
        const opened = await open(backend, cluster, size);
        try {
          const row = await measure(backend, opened, all, size);
          rows.push(row);
          console.error(
            `${backend} ${size}: warm ${ms(row.warm.median)} ms, stateless ${row.stateless ? ms(row.stateless.median) : "–"} ms`,
          );
        } finally {
          await opened.close();
        }
      }
    }
  } finally {
    await cluster?.stop();
  }
  console.log(`engine, generated thread, budget ${BUDGET} tokens, gpt-4o; ${FULL ? "full" : "quick"} run\n`);
  console.log(table(rows));
  // A run of some backends only (--backends=…) is for investigation: the results file keeps the last full set.
  if (only === undefined) {
    writeFileSync(
      join(repoRoot, "benchmarks/results/engine.json"),
      `${JSON.stringify({ date: new Date().toISOString(), full: FULL, budget: BUDGET, rows }, null, 2)}\n`,
    );
  }
  console.log(`\n(sink ${sinkValue()})`);
}

await main();
