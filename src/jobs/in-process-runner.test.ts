import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InProcessRunner } from "./in-process-runner.js";
import type { JobNote, JobOutcome } from "./job-runner.js";

interface Job {
  readonly threadId: string;
  readonly n: number;
}

/** A runner whose jobs end when the test says, with the outcome it says. */
function harness() {
  const finish = new Map<number, (outcome: JobOutcome) => void>();
  const settled: Array<{ note: JobNote; outcome: JobOutcome; final: boolean }> = [];
  const runner = new InProcessRunner<Job>(
    {
      keyOf: (job) => `${job.threadId}/v${job.n}`,
      threadOf: (job) => job.threadId,
      run: (job) => new Promise<JobOutcome>((resolve) => finish.set(job.n, resolve)),
    },
    { started: () => {}, settled: (note, outcome, _ms, final) => settled.push({ note, outcome, final }) },
  );
  return { runner, finish, settled };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("InProcessRunner", () => {
  it("holds one job per thread, counts what waits, runs and failed, and reports each end once", async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant("enqueue" as const), thread: fc.constantFrom("a", "b", "c") }),
      fc.record({ kind: fc.constant("finish" as const), fail: fc.boolean(), pick: fc.nat() }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 30 }), async (ops) => {
        const { runner, finish, settled } = harness();
        const inFlight = new Map<string, number>();
        let failed = 0;
        let n = 0;
        for (const o of ops) {
          if (o.kind === "enqueue") {
            const queued = await runner.enqueue({ threadId: o.thread, n });
            expect(queued).toBe(!inFlight.has(o.thread));
            if (queued) inFlight.set(o.thread, n);
            n++;
            await tick();
          } else {
            const running = [...inFlight.entries()];
            if (running.length === 0) continue;
            const [thread, job] = running[o.pick % running.length]!;
            // A job starts on a later turn of the event loop than the one that queued it.
            for (let i = 0; i < 10 && !finish.has(job); i++) await tick();
            finish.get(job)?.(
              o.fail ? { kind: "failed", error: new Error("x") } : { kind: "discarded", reason: "-" },
            );
            inFlight.delete(thread);
            if (o.fail) failed++;
            await tick();
            await tick();
          }
          const pending = await runner.pending();
          expect(pending.queued + pending.running).toBe(inFlight.size);
          expect(pending.failed).toBe(failed);
        }
        expect(settled.every((s) => s.final && s.note.attempts === 1)).toBe(true);
        expect(settled.filter((s) => s.outcome.kind === "failed")).toHaveLength(failed);
      }),
      { numRuns: 100 },
    );
  });

  it("a job waits for `after`, and close takes no new job", async () => {
    const { runner, finish } = harness();
    let release!: () => void;
    const after = new Promise<void>((resolve) => {
      release = resolve;
    });
    expect(await runner.enqueue({ threadId: "t", n: 1 }, after)).toBe(true);
    await tick();
    expect(await runner.pending("t")).toEqual({ queued: 1, running: 0, failed: 0 });
    release();
    for (let i = 0; i < 10 && !finish.has(1); i++) await tick();
    expect(await runner.pending("t")).toEqual({ queued: 0, running: 1, failed: 0 });
    const closing = runner.close(5_000);
    expect(await runner.enqueue({ threadId: "u", n: 2 })).toBe(false);
    finish.get(1)?.({ kind: "committed", planVersion: 2 });
    await closing;
    expect(await runner.pending()).toEqual({ queued: 0, running: 0, failed: 0 });
  });
});
