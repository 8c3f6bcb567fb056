/**
 * The in-process job runner (memory and SQLite stores): background summaries behave as they always did
 * (`idle()` waits for them), and now report `job_*` events, `pendingJobs` figures and metrics; `close` stops
 * taking jobs. The `jobs` option is validated.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import { createContextEngine } from "../src/context-engine.js";
import type { EngineEvent } from "../src/engine/engine-events.js";
import { createMetricsCollector } from "../src/engine/metrics-collector.js";
import { ValidationError } from "../src/errors/ledger-error.js";
import type { JobOptions, jobOptionsSchema } from "../src/jobs/job-options.js";
import type { MessageInput } from "../src/log/message.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import type { Summarizer } from "../src/strategies/summarizer.js";

const budget = { contextWindow: 100_000, reserveOutput: 0, safetyMargin: 0 };

function chat(n: number): MessageInput[] {
  return Array.from({ length: n }, (_, i): MessageInput[] => [
    { id: `u${i}`, role: "user", parts: [{ type: "text", text: `question ${i} ${"word ".repeat(60)}` }] },
    { id: `a${i}`, role: "assistant", parts: [{ type: "text", text: `answer ${i} ${"text ".repeat(60)}` }] },
  ]).flat();
}

function summarizer(broken = false): Summarizer {
  return {
    id: "test-model",
    promptVersion: "1",
    summarize: async (input) => {
      await new Promise((r) => setTimeout(r, 20));
      if (broken) throw new Error("model down");
      return { text: `summary of ${input.messages.length} messages`, structured: {} };
    },
  };
}

function engineWith(options: { broken?: boolean; jobs?: JobOptions } = {}) {
  const events: EngineEvent[] = [];
  const metrics = createMetricsCollector();
  const engine = createContextEngine({
    stores: createMemoryStores(),
    budget,
    summarizer: summarizer(options.broken),
    events: [(e) => events.push(e), metrics.listener],
    ...(options.jobs === undefined ? {} : { jobs: options.jobs }),
  });
  return { engine, events, metrics };
}

const jobTypes = (events: ReadonlyArray<EngineEvent>) =>
  events.map((e) => e.type).filter((t) => t.startsWith("job_") && t !== "job_queue_depth");

describe("background jobs in process", () => {
  it("a summary job is queued, started and committed; pendingJobs and metrics follow it", async () => {
    const { engine, events, metrics } = engineWith();
    await engine.append("t", chat(20));
    const turn = await engine.prepareTurn("t", { format: "openai", budget: 1_200 });
    expect(turn.stats.backgroundScheduled).toBe(true);
    expect(await engine.pendingJobs("t")).toEqual({ queued: 1, running: 0, failed: 0 });
    expect(await engine.pendingJobs("other")).toEqual({ queued: 0, running: 0, failed: 0 });
    await engine.idle();
    expect(await engine.pendingJobs()).toEqual({ queued: 0, running: 0, failed: 0 });
    expect(jobTypes(events)).toEqual(["job_queued", "job_started", "job_committed"]);
    // Queued by the turn (its call number), run outside it.
    expect(events.find((e) => e.type === "job_queued")?.callNumber).toBe(1);
    for (const e of events.filter((e) => e.type === "job_started" || e.type === "job_committed")) {
      expect(e.callNumber).toBeUndefined();
    }
    expect(events.find((e) => e.type === "job_committed")).toMatchObject({
      key: "t/v1",
      runner: "in-process",
      planVersion: 2,
    });
    expect(metrics.snapshot().jobs).toEqual({
      queued: 1,
      started: 1,
      committed: 1,
      discarded: 0,
      failed: 0,
      retried: 0,
    });
    expect(metrics.snapshot().jobDepth).toEqual({ queued: 0, running: 0, failed: 0 });
  });

  it("a failing job is reported once, counted as failed, and leaves the deterministic plan", async () => {
    const { engine, events, metrics } = engineWith({ broken: true });
    await engine.append("t", chat(20));
    await engine.prepareTurn("t", { format: "openai", budget: 1_200 });
    await engine.idle();
    expect(jobTypes(events)).toEqual(["job_queued", "job_started", "job_failed"]);
    expect(events.find((e) => e.type === "job_failed")).toMatchObject({
      final: true,
      attempt: 1,
      attempts: 1,
    });
    expect(await engine.pendingJobs("t")).toEqual({ queued: 0, running: 0, failed: 1 });
    expect(metrics.snapshot("t").jobs.failed).toBe(1);
    const next = await engine.prepareTurn("t", { format: "openai", budget: 1_200 });
    expect(next.stats.planVersion).toBe(1);
  });

  it("close waits for the running job and takes no new one", async () => {
    const { engine, events } = engineWith();
    await engine.append("t", chat(20));
    await engine.prepareTurn("t", { format: "openai", budget: 1_200 });
    await engine.close({ timeoutMs: 5_000 });
    expect(jobTypes(events)).toEqual(["job_queued", "job_started", "job_committed"]);
    await engine.append("t", chat(40).slice(40));
    const after = await engine.prepareTurn("t", { format: "openai", budget: 600 });
    expect(after.stats.backgroundScheduled).toBe(false);
    expect(await engine.pendingJobs()).toEqual({ queued: 0, running: 0, failed: 0 });
  });

  it("rejects a queue runner on stores without a durable queue, and bad job options, naming the field", () => {
    const make = (jobs: unknown) => () =>
      createContextEngine({ stores: createMemoryStores(), budget, jobs: jobs as JobOptions });
    expect(make({ runner: "queue" })).toThrow(
      /jobs\.runner is `queue` but these stores keep no durable queue/,
    );
    expect(make({ attempts: 0 })).toThrow(ValidationError);
    expect(make({ attempts: 0 })).toThrow(/jobs\.attempts/);
    expect(make({ visibilityTimeoutMs: 10 })).toThrow(/jobs\.visibilityTimeoutMs/);
    expect(make({ typo: 1 })).toThrow(/typo/);
    expect(make({ runner: "in-process", concurrency: 2 })).not.toThrow();
  });

  it("keeps the jobs schema and the JobOptions type in step", () => {
    type FromSchema = z.output<typeof jobOptionsSchema>;
    expectTypeOf<FromSchema>().toExtend<JobOptions>();
    expectTypeOf<keyof FromSchema>().toEqualTypeOf<keyof JobOptions>();
    expectTypeOf<FromSchema["runner"]>().toEqualTypeOf<JobOptions["runner"]>();
  });
});
