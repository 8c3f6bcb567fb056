/**
 * Background summaries on the PostgreSQL durable queue (pg-boss, docs/decisions/0020): a job one engine queues is
 * run by another; queuing a key twice is one job; a job left running by a worker that died is retried after the
 * visibility timeout; a job that keeps failing stops after its attempts and is reported; `close` lets a running
 * job finish and leaves queued ones queued. PostgreSQL runs on a throwaway cluster; without server binaries the
 * test is skipped locally and fails in CI.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import type { ContextEngine } from "../src/engine/context-engine.js";
import type { EngineEvent } from "../src/engine/engine-events.js";
import type { JobOptions } from "../src/jobs/job-options.js";
import type { MessageInput } from "../src/log/message.js";
import { JOB_QUEUE_NAME, jobIdOf } from "../src/stores/postgres/postgres-job-queue.js";
import type { Stores } from "../src/stores/stores.js";
import type { Summarizer } from "../src/strategies/summarizer.js";
import { STORE_BACKENDS, StoreOpener } from "./support/store-backends.js";
import type { StoreTarget } from "./support/store-target.js";

const backend = STORE_BACKENDS.find((b) => b.name === "postgres")!;
const reason = backend.unavailable();
const budget = { contextWindow: 100_000, reserveOutput: 0, safetyMargin: 0 };
const FAST: JobOptions = { pollIntervalMs: 500, maintenanceIntervalMs: 1_000, retryDelayMs: 0, attempts: 2 };

function chat(n: number): MessageInput[] {
  const out: MessageInput[] = [];
  for (let i = 0; i < n; i++) {
    out.push({
      id: `u${i}`,
      role: "user",
      parts: [{ type: "text", text: `question ${i} ${"word ".repeat(60)}` }],
    });
    out.push({
      id: `a${i}`,
      role: "assistant",
      parts: [{ type: "text", text: `answer ${i} ${"text ".repeat(60)}` }],
    });
  }
  return out;
}

/** A model-like summarizer (not local, so summaries go to the background) that counts its calls. */
function summarizer(behaviour: "ok" | "broken" = "ok", delayMs = 0): Summarizer & { calls: number } {
  const s = {
    id: "test-model",
    promptVersion: "1",
    calls: 0,
    summarize: async (input: { messages: ReadonlyArray<{ id: string }> }) => {
      s.calls++;
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
      if (behaviour === "broken") throw new Error("model down");
      return { text: `summary of ${input.messages.length} messages`, structured: {} };
    },
  };
  return s;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe.skipIf(reason !== undefined && process.env.CI !== "true")("background jobs on PostgreSQL", () => {
  const opener = new StoreOpener(backend);
  const engines: ContextEngine[] = [];
  beforeAll(() => backend.start(), 120_000);
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close({ timeoutMs: 1_000 })));
    await opener.closeAll();
    await backend.stop();
  });

  function engineOn(
    stores: Stores,
    s: Summarizer,
    jobs: JobOptions = {},
    events: EngineEvent[] = [],
  ): ContextEngine {
    const engine = createContextEngine({
      stores,
      budget,
      summarizer: s,
      jobs: { ...FAST, ...jobs },
      events: (e) => events.push(e),
    });
    engines.push(engine);
    return engine;
  }

  async function queuedTurn(target?: StoreTarget, thread = "t") {
    const opened = target === undefined ? await opener.fresh() : { stores: await opener.at(target), target };
    const events: EngineEvent[] = [];
    const s = summarizer();
    const engine = engineOn(opened.stores, s, { work: false }, events);
    await engine.append(thread, chat(20));
    const turn = await engine.prepareTurn(thread, { format: "openai", budget: 1_200 });
    return { ...opened, engine, events, turn, summarizer: s };
  }

  it("a job one engine queues is run by another, which commits the summary", {
    timeout: 60_000,
  }, async () => {
    if (reason !== undefined) throw new Error(reason);
    const { target, engine, events, turn } = await queuedTurn();
    expect(turn.stats).toMatchObject({ planVersion: 1, backgroundScheduled: true });
    expect(events.filter((e) => e.type === "job_queued")).toMatchObject([{ key: "t/v1", runner: "queue" }]);
    expect(await engine.pendingJobs("t")).toEqual({ queued: 1, running: 0, failed: 0 });
    expect(await engine.pendingJobs("other")).toEqual({ queued: 0, running: 0, failed: 0 });

    const workerEvents: EngineEvent[] = [];
    const s = summarizer();
    const worker = engineOn(await opener.at(target), s, {}, workerEvents);
    await worker.startJobs();
    const stores = await opener.at(target);
    await waitFor("the summary to commit", async () =>
      (await stores.plans.latest("t")).version === 2 ? true : undefined,
    );
    const plan = await stores.plans.latest("t");
    expect(plan.actions.some((a) => a.kind === "summarize")).toBe(true);
    await waitFor("the job to complete", async () => {
      const p = await engine.pendingJobs("t");
      return p.queued + p.running === 0 ? p : undefined;
    });
    expect(workerEvents.map((e) => e.type).filter((t) => t.startsWith("job_"))).toEqual([
      "job_started",
      "job_committed",
    ]);
    expect(s.calls).toBeGreaterThan(0);
    const next = await engine.prepareTurn("t", { format: "openai", budget: 1_200 });
    expect(next.stats.planVersion).toBe(2);
    expect(next.prompt.messages.some((m) => m.provenance.kind === "summary")).toBe(true);
  });

  it("each tenant's jobs go to its own queue: another tenant's worker never takes them", {
    timeout: 60_000,
  }, async () => {
    if (reason !== undefined) throw new Error(reason);
    const { stores, target } = await opener.fresh();
    const acmeStores = stores.forTenant!("acme");
    const acme = createContextEngine({
      stores: acmeStores,
      tenant: "acme",
      budget,
      summarizer: summarizer(),
      jobs: { ...FAST, work: false },
    });
    engines.push(acme);
    await acme.append("t", chat(20));
    await acme.prepareTurn("t", { format: "openai", budget: 1_200 });
    expect(await acme.pendingJobs("t")).toEqual({ queued: 1, running: 0, failed: 0 });

    // A worker of another tenant on the same database sees no job and takes none.
    const otherSummarizer = summarizer();
    const other = engineOn(await opener.at(target), otherSummarizer);
    await other.startJobs();
    expect(await other.pendingJobs()).toEqual({ queued: 0, running: 0, failed: 0 });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(otherSummarizer.calls).toBe(0);
    expect(await acme.pendingJobs("t")).toEqual({ queued: 1, running: 0, failed: 0 });

    // The tenant's own worker runs it.
    const worker = createContextEngine({
      stores: (await opener.at(target)).forTenant!("acme"),
      tenant: "acme",
      budget,
      summarizer: summarizer(),
      jobs: FAST,
    });
    engines.push(worker);
    await worker.startJobs();
    await waitFor("the summary to commit", async () =>
      (await acmeStores.plans.latest("t")).version === 2 ? true : undefined,
    );
  });

  it("queuing the same key twice is one job", { timeout: 60_000 }, async () => {
    if (reason !== undefined) throw new Error(reason);
    const { stores } = await opener.fresh();
    const queue = stores.jobQueue!({
      visibilityTimeoutMs: 5_000,
      attempts: 1,
      retryDelayMs: 0,
      concurrency: 1,
      pollIntervalMs: 500,
      maintenanceIntervalMs: 1_000,
    });
    try {
      const job = { key: "x/v3", threadId: "x", data: { n: 1 } };
      expect(await queue.add(job)).toBe(true);
      expect(await queue.add(job)).toBe(false);
      expect(await queue.add({ ...job, key: "x/v4" })).toBe(true);
      expect(await queue.counts("x")).toEqual({ queued: 2, running: 0, failed: 0 });
      expect(await queue.counts()).toEqual({ queued: 2, running: 0, failed: 0 });
    } finally {
      await queue.stop(1_000);
    }
  });

  it("a job whose worker died is retried after the visibility timeout", { timeout: 60_000 }, async () => {
    if (reason !== undefined) throw new Error(reason);
    const { target, stores, engine } = await queuedTurn();
    // What a worker SIGKILLed mid-job leaves behind: the job active, started a moment ago, and no one on it.
    const schema = (target as { schema: string }).schema;
    const client = new pg.Client({
      connectionString: (target as { connectionString: string }).connectionString,
    });
    await client.connect();
    try {
      const moved = await client.query(
        `UPDATE "${schema}_jobs".job SET state = 'active', started_on = now(), expire_in = interval '1 second'
          WHERE name = $1 AND id = $2`,
        [JOB_QUEUE_NAME, jobIdOf("t/v1")],
      );
      expect(moved.rowCount).toBe(1);
    } finally {
      await client.end();
    }
    expect(await engine.pendingJobs("t")).toEqual({ queued: 0, running: 1, failed: 0 });
    const events: EngineEvent[] = [];
    const worker = engineOn(await opener.at(target), summarizer(), {}, events);
    await worker.startJobs();
    await waitFor("the retried job to commit", async () =>
      (await stores.plans.latest("t")).version === 2 ? true : undefined,
    );
    expect(events.find((e) => e.type === "job_started")).toMatchObject({ attempt: 2 });
  });

  it("a job that keeps failing stops after its attempts, is reported, and leaves the plan", {
    timeout: 60_000,
  }, async () => {
    if (reason !== undefined) throw new Error(reason);
    const { target, stores } = await queuedTurn();
    const events: EngineEvent[] = [];
    const broken = summarizer("broken");
    const worker = engineOn(await opener.at(target), broken, {}, events);
    await worker.startJobs();
    const failed = await waitFor("the job to fail for good", async () => {
      const p = await worker.pendingJobs("t");
      return p.failed === 1 ? p : undefined;
    });
    expect(failed).toEqual({ queued: 0, running: 0, failed: 1 });
    const reported = events.filter((e) => e.type === "job_failed");
    expect(reported.map((e) => (e.type === "job_failed" ? [e.attempt, e.final] : []))).toEqual([
      [1, false],
      [2, true],
    ]);
    expect((await stores.plans.latest("t")).version).toBe(1);
    expect(events.at(-1)).toMatchObject({ type: "job_queue_depth", failed: 1 });
  });

  it("close lets a running job finish and leaves queued ones queued", { timeout: 60_000 }, async () => {
    if (reason !== undefined) throw new Error(reason);
    const { target, stores } = await queuedTurn();
    const events: EngineEvent[] = [];
    const slow = summarizer("ok", 1_500);
    const worker = engineOn(await opener.at(target), slow, {}, events);
    await worker.startJobs();
    await waitFor("the job to start", async () =>
      events.some((e) => e.type === "job_started") ? true : undefined,
    );
    const closing = worker.close({ timeoutMs: 10_000 });
    // Another thread's job, queued while the worker is closing, stays for another worker.
    const other = await queuedTurn(target, "u");
    expect(other.turn.stats.backgroundScheduled).toBe(true);
    await closing;
    expect(events.some((e) => e.type === "job_committed")).toBe(true);
    expect((await stores.plans.latest("t")).version).toBe(2);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await other.engine.pendingJobs("u")).toEqual({ queued: 1, running: 0, failed: 0 });
  });
});
