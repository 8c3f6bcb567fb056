/**
 * The fleet test (issue 19): 4 worker processes on one PostgreSQL database serve `prepareTurn` for 20 threads of
 * real trajectories, each call on a random worker, at budgets that force summaries; workers are SIGKILLed at
 * random moments and replaced. Every call gets a valid request within its budget; no span is summarized twice;
 * every queued summary job ends (committed, discarded because its plan was superseded, or failed and reported),
 * none is lost; plan versions are contiguous; every recorded call replays. PostgreSQL runs on a throwaway
 * cluster; without server binaries (or the trajectories) the test is skipped locally, and fails in CI.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgresStores } from "../src/stores/postgres/index.js";
import { JOB_QUEUE_NAME, jobIdOf } from "../src/stores/postgres/postgres-job-queue.js";
import { fleetThreads, openObserver, runFleet } from "./support/fleet.js";
import {
  type PostgresCluster,
  postgresUnavailableReason,
  startPostgresCluster,
} from "./support/postgres-cluster.js";
import { trajectoriesAvailable } from "./support/trajectories.js";

const THREADS = 20;
const CALLS_PER_THREAD = Number(process.env.FLEET_CALLS ?? 12);
const WORKERS = 4;
const reason = postgresUnavailableReason() ?? (trajectoriesAvailable ? undefined : "trajectories not found");

describe.skipIf(reason !== undefined && process.env.CI !== "true")("a fleet of workers on PostgreSQL", () => {
  let cluster: PostgresCluster;
  let dir: string;
  beforeAll(async () => {
    cluster = await startPostgresCluster();
    dir = mkdtempSync(join(tmpdir(), "context-ledger-fleet-"));
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it(`${WORKERS} workers, ${THREADS} threads, SIGKILLs: valid requests, one summary per span, no job lost`, {
    timeout: 180_000,
  }, async () => {
    if (reason !== undefined) throw new Error(reason);
    const counterFile = join(dir, "summaries.tsv");
    writeFileSync(counterFile, "");
    const schema = "fleet";
    const setup = await openPostgresStores({ connectionString: cluster.connectionString, schema });
    await setup.close();
    const threads = fleetThreads(THREADS, CALLS_PER_THREAD);
    const run = await runFleet({
      spec: {
        connectionString: cluster.connectionString,
        schema,
        counterFile,
        summaryMs: 150,
        visibilityTimeoutMs: 3_000,
      },
      workers: WORKERS,
      threads,
      killEveryMs: [800, 2_000],
      seed: 19,
    });
    const { stores, engine } = await openObserver(cluster.connectionString, schema);
    try {
      // Every call got a valid request within its budget.
      expect(run.failures).toEqual([]);
      expect(run.crashes).toEqual([]);
      expect(run.answers).toHaveLength(
        THREADS * CALLS_PER_THREAD - threads.reduce((n, t) => n + (CALLS_PER_THREAD - t.batches.length), 0),
      );
      for (const a of run.answers) {
        expect(a.problems, `${a.threadId} ${a.callId}`).toEqual([]);
        expect(a.tokens).toBeLessThanOrEqual(a.budget);
      }
      expect(run.kills).toBeGreaterThan(0);

      // The queue drains: every job ends, on the workers still running (some after a visibility timeout).
      const until = Date.now() + 60_000;
      let pending = await engine.pendingJobs();
      while (pending.queued + pending.running > 0 && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 500));
        pending = await engine.pendingJobs();
      }
      expect(pending.queued + pending.running).toBe(0);
      const exits = await run.stop();
      expect(exits.every((code) => code === 0)).toBe(true);

      // Every job a call queued is in the database and ended (completed or failed); none is left or lost.
      const client = new pg.Client({ connectionString: cluster.connectionString });
      await client.connect();
      const states = new Map<string, string>();
      try {
        const { rows } = await client.query(
          `SELECT id::text, state::text FROM fleet_jobs.job WHERE name = $1
           UNION ALL SELECT id::text, state::text FROM fleet_jobs.archive WHERE name = $1`,
          [JOB_QUEUE_NAME],
        );
        for (const r of rows as { id: string; state: string }[]) states.set(r.id, r.state);
      } finally {
        await client.end();
      }
      const queuedKeys = new Set(run.events.flatMap((e) => (e.type === "job_queued" ? [e.key] : [])));
      const scheduled = run.answers.filter((a) => a.scheduled).length;
      expect(scheduled).toBeGreaterThan(0);
      expect(queuedKeys.size).toBeGreaterThanOrEqual(scheduled);
      for (const key of queuedKeys) expect(states.get(jobIdOf(key)), key).toMatch(/^(completed|failed)$/);
      expect([...states.values()].every((s) => s === "completed" || s === "failed")).toBe(true);
      const failedJobs = [...states.values()].filter((s) => s === "failed").length;
      expect(pending.failed).toBe(failedJobs);
      const reportedFailed = run.events.filter((e) => e.type === "job_failed" && e.final).length;
      expect(reportedFailed).toBeLessThanOrEqual(failedJobs);
      const committed = run.events.filter((e) => e.type === "job_committed").length;
      expect(committed).toBeGreaterThan(0);

      // No span was summarized twice.
      const lines = readFileSync(counterFile, "utf8")
        .split("\n")
        .filter((l) => l !== "");
      const bySpan = new Map<string, number>();
      for (const line of lines) bySpan.set(line, (bySpan.get(line) ?? 0) + 1);
      expect([...bySpan].filter(([, n]) => n > 1)).toEqual([]);
      expect(lines.length).toBeGreaterThan(0);

      // Plan versions are contiguous, summaries landed, and every recorded call replays.
      let summarizedThreads = 0;
      for (const thread of threads) {
        const versions = await stores.plans.versions(thread.threadId);
        expect(versions).toEqual(versions.map((_, i) => i + 1));
        const latest = await stores.plans.latest(thread.threadId);
        if (latest.actions.some((a) => a.kind === "summarize")) summarizedThreads++;
        for await (const replay of engine.replayThread(thread.threadId)) {
          expect(replay.ok, `${thread.threadId} ${replay.callId}: ${replay.mismatch ?? ""}`).toBe(true);
        }
      }
      expect(summarizedThreads).toBeGreaterThan(THREADS / 2);
      const onPending = run.answers.filter((a) => a.pendingBefore).length;
      const retried = run.events.filter((e) => e.type === "job_started" && e.attempt > 1).length;
      console.info(
        `fleet: ${run.answers.length} calls in ${(run.durationMs / 1_000).toFixed(1)} s on ${WORKERS} workers, ` +
          `${run.kills} SIGKILLs, ${run.resent} calls resent, ${queuedKeys.size} jobs (${committed} commits, ` +
          `${failedJobs} failed, ${retried} attempts after the first), ${lines.length} summarizer calls, ${summarizedThreads}/${THREADS} threads summarized, ` +
          `${((100 * onPending) / run.answers.length).toFixed(0)} % of calls on a plan with a summary pending`,
      );
    } finally {
      await run.stop().catch(() => []);
      await engine.close();
      await stores.close();
    }
  });
});
