/**
 * Fleet benchmark (issue 19): worker processes on one PostgreSQL database (a throwaway cluster) serve the calls of
 * real-trajectory threads, each call on a random worker, at budgets that force summaries, while the same workers
 * take the summary jobs from the durable queue. For 1, 2 and 4 workers it reports summaries committed per minute
 * (from the first call until the queue is empty) and the share of calls prepared while a summary of their thread
 * was still queued or running (they ran on the deterministic fallback plan). A summary takes `SUMMARY_MS` (a
 * model call's latency, shortened). A second measure, the backlog: a harness queues one summary job on each of
 * `BACKLOG` threads with no worker running, then the fleet starts and only takes jobs; summaries per minute from
 * the moment the workers are ready until the queue is empty. Quick by default (12 threads × 12 calls, a backlog of
 * 24, one run per fleet size); `--full` runs 20 threads × 24 calls, a backlog of 60, three runs each (medians,
 * min–max). Writes benchmarks/results/fleet.json.
 *
 * Run: `npm run bench:fleet` (or `-- --full`).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createContextEngine } from "../src/context-engine.js";
import { openPostgresStores } from "../src/stores/postgres/index.js";
import { fleetThreads, openObserver, runFleet } from "../test/support/fleet.js";
import { startPostgresCluster } from "../test/support/postgres-cluster.js";
import { repoRoot } from "../test/support/repo-root.js";
import { simpleCounter } from "../test/support/simple-counter.js";

const FULL = process.argv.includes("--full");
const THREADS = FULL ? 20 : 12;
const CALLS = FULL ? 24 : 12;
const RUNS = FULL ? 3 : 1;
const SUMMARY_MS = 250;
const FLEETS = [1, 2, 4] as const;
const BACKLOG = FULL ? 60 : 24;

interface RunFigures {
  readonly calls: number;
  readonly summaries: number;
  readonly summarizerCalls: number;
  readonly seconds: number;
  readonly summariesPerMinute: number;
  readonly pendingShare: number;
}

async function once(
  connectionString: string,
  schema: string,
  workers: number,
  dir: string,
): Promise<RunFigures> {
  const counterFile = join(dir, `${schema}.tsv`);
  writeFileSync(counterFile, "");
  const setup = await openPostgresStores({ connectionString, schema });
  await setup.close();
  const t0 = performance.now();
  const run = await runFleet({
    spec: { connectionString, schema, counterFile, summaryMs: SUMMARY_MS, visibilityTimeoutMs: 30_000 },
    workers,
    threads: fleetThreads(THREADS, CALLS),
    seed: 7,
  });
  const { stores, engine } = await openObserver(connectionString, schema);
  try {
    for (;;) {
      const p = await engine.pendingJobs();
      if (p.queued + p.running === 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const seconds = (performance.now() - t0) / 1_000;
    await run.stop();
    const summaries = run.events.filter((e) => e.type === "job_committed").length;
    const summarizerCalls = readFileSync(counterFile, "utf8")
      .split("\n")
      .filter((l) => l !== "").length;
    return {
      calls: run.answers.length,
      summaries,
      summarizerCalls,
      seconds,
      summariesPerMinute: (summaries / seconds) * 60,
      pendingShare: run.answers.filter((a) => a.pendingBefore).length / run.answers.length,
    };
  } finally {
    await engine.close();
    await stores.close();
  }
}

/** Queues one summary job on each of `BACKLOG` threads (no worker runs), then times a fleet draining them. */
async function backlog(
  connectionString: string,
  schema: string,
  workers: number,
  dir: string,
): Promise<number> {
  const counterFile = join(dir, `${schema}.tsv`);
  writeFileSync(counterFile, "");
  const stores = await openPostgresStores({ connectionString, schema });
  const harness = createContextEngine({
    stores,
    counter: simpleCounter(),
    budget: { contextWindow: 1_000_000 },
    // Only queues: the summarizer is the workers'; a model-like one keeps summaries in the background.
    summarizer: {
      id: "fleet-model",
      promptVersion: "1",
      summarize: async () => ({ text: "-", structured: {} }),
    },
    jobs: { work: false },
  });
  try {
    const threads = fleetThreads(BACKLOG, 12);
    let queued = 0;
    for (const t of threads) {
      await harness.append(t.threadId, t.batches.flat());
      const turn = await harness.prepareTurn(t.threadId, { format: "openai", budget: t.budget });
      if (turn.stats.backgroundScheduled) queued++;
    }
    const run = await runFleet({
      spec: { connectionString, schema, counterFile, summaryMs: SUMMARY_MS, visibilityTimeoutMs: 30_000 },
      workers,
      threads: [],
      seed: 7,
    });
    const t0 = performance.now();
    for (;;) {
      const p = await harness.pendingJobs();
      if (p.queued + p.running === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const seconds = (performance.now() - t0) / 1_000;
    await run.stop();
    const summaries = run.events.filter((e) => e.type === "job_committed").length;
    if (summaries === 0 || queued === 0) throw new Error("the backlog produced no summary");
    return (summaries / seconds) * 60;
  } finally {
    await harness.close();
    await stores.close();
  }
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const cluster = await startPostgresCluster();
  const dir = mkdtempSync(join(tmpdir(), "context-ledger-fleet-bench-"));
  const rows: Array<{ workers: number; runs: RunFigures[]; backlogPerMinute: number[] }> = [];
  try {
    let n = 0;
    for (const workers of FLEETS) {
      const runs: RunFigures[] = [];
      for (let r = 0; r < RUNS; r++)
        runs.push(await once(cluster.connectionString, `fleet${++n}`, workers, dir));
      const drained: number[] = [];
      for (let r = 0; r < RUNS; r++)
        drained.push(await backlog(cluster.connectionString, `fleet${++n}`, workers, dir));
      rows.push({ workers, runs, backlogPerMinute: drained });
      const rate = runs.map((x) => x.summariesPerMinute);
      const share = runs.map((x) => x.pendingShare * 100);
      console.info(
        `${workers} worker(s): ${median(rate).toFixed(0)} summaries/min (${Math.min(...rate).toFixed(0)}–${Math.max(...rate).toFixed(0)}), ` +
          `${median(share).toFixed(0)} % of calls on a plan with a summary pending, ` +
          `${runs[0]!.calls} calls, ${runs[0]!.summaries} summaries in ${runs[0]!.seconds.toFixed(1)} s; ` +
          `backlog of ${BACKLOG}: ${median(drained).toFixed(0)} summaries/min (${Math.min(...drained).toFixed(0)}–${Math.max(...drained).toFixed(0)})`,
      );
    }
  } finally {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  writeFileSync(
    join(repoRoot, "benchmarks/results/fleet.json"),
    `${JSON.stringify({ full: FULL, threads: THREADS, callsPerThread: CALLS, backlog: BACKLOG, summaryMs: SUMMARY_MS, rows }, null, 2)}\n`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
