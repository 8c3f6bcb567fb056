import { expect, it } from "vitest";
import type { Stores } from "../../src/stores/stores.js";
import type { StoreBackend, StoreOpener } from "./store-backends.js";
import { batch, dropPlan } from "./store-fixtures.js";
import { spawnWorker, type WorkerHandle } from "./store-processes.js";
import { type ContendOptions, contend, type WriterEvent } from "./store-writer.js";

const WORKERS = 4;
const options = (k: number): ContendOptions => ({
  threadId: "shared",
  workerId: `w${k}`,
  appends: 16,
  commitEvery: 4,
  batchMax: 3,
  jitterMs: 3,
});

type Acked = Extract<WriterEvent, { type: "append" }>;

/** Checks the log is gap-free and holds exactly the acknowledged appends, each where its writer was told. */
async function checkLog(stores: Stores, threadId: string, acked: ReadonlyArray<Acked>): Promise<void> {
  const log = await stores.log.read(threadId);
  expect(log.map((e) => e.message.seq)).toEqual(log.map((_, i) => i));
  expect(await stores.log.length(threadId)).toBe(log.length);
  for (const { seq, ids } of acked) {
    expect(log.slice(seq, seq + ids.length).map((e) => e.message.id)).toEqual(ids);
  }
  expect(new Set(log.map((e) => e.message.id)).size).toBe(log.length);
}

/** Checks plan versions are 1..V and each acknowledged version holds the plan its writer committed. */
async function checkPlans(
  stores: Stores,
  threadId: string,
  acked: ReadonlyMap<number, string>,
): Promise<number> {
  const versions = await stores.plans.versions(threadId);
  expect(versions).toEqual(versions.map((_, i) => i + 1));
  for (const [version, writer] of acked) {
    expect((await stores.plans.get(threadId, version)).actions[0]?.strategy).toBe(writer);
  }
  return versions.length;
}

/** Verifies a contention run: every append exactly once, no gaps, one winner per plan version, conflicts typed. */
async function verifyContention(stores: Stores, eventsByWorker: ReadonlyArray<ReadonlyArray<WriterEvent>>) {
  const all = eventsByWorker.flat();
  expect(all.filter((e) => e.type === "error")).toEqual([]);
  const appends = all.filter((e): e is Acked => e.type === "append");
  expect(appends).toHaveLength(WORKERS * options(0).appends);
  await checkLog(stores, "shared", appends);
  const total = appends.reduce((n, e) => n + e.ids.length, 0);
  expect(await stores.log.length("shared")).toBe(total);
  const commits = new Map<number, string>();
  eventsByWorker.forEach((events, k) => {
    for (const e of events) {
      if (e.type !== "commit") continue;
      expect(commits.has(e.version)).toBe(false);
      commits.set(e.version, `w${k}`);
    }
  });
  expect(await checkPlans(stores, "shared", commits)).toBe(commits.size);
  expect(commits.size).toBe(WORKERS * (options(0).appends / options(0).commitEvery));
  const conflicts = all.filter((e) => e.type === "conflict");
  for (const c of conflicts) {
    expect(c.name).toBe("VersionConflictError");
    expect(c.actual).toBeGreaterThan(c.expected);
  }
  expect(conflicts.length).toBeGreaterThan(0);
  return { messages: total, commits: commits.size, conflicts: conflicts.length };
}

async function contendInProcess(stores: Stores) {
  const events: WriterEvent[][] = Array.from({ length: WORKERS }, () => []);
  await Promise.all(events.map((out, k) => contend(stores, options(k), (e) => out.push(e))));
  return events;
}

async function contendInProcesses(workers: ReadonlyArray<WorkerHandle>) {
  await Promise.all(workers.map((w) => w.waitFor((e) => e.type === "ready")));
  for (const w of workers) w.go();
  const exits = await Promise.all(workers.map((w) => w.exited));
  expect(exits.map((x) => (x.code === 0 ? "" : `${x.code}: ${x.stderr}`))).toEqual(workers.map(() => ""));
  return workers.map((w) => w.events);
}

/** Lets a crash writer make a dozen acknowledged writes, then kills it right after it announces a write of kind `op`. */
async function killMidWrite(worker: WorkerHandle, op: "append" | "commit"): Promise<void> {
  let acks = 0;
  await worker.waitFor((e) => (e.type === "append" || e.type === "commit") && ++acks >= 12);
  const from = worker.events.length;
  await worker.waitFor((e) => e.type === "begin" && e.op === op && worker.events.indexOf(e) >= from);
  worker.kill();
  expect((await worker.exited).signal).toBe("SIGKILL");
}

/** Concurrency and crash-safety cases. */
export function processCases(backend: StoreBackend, opener: StoreOpener, title: (t: string) => string): void {
  const how = backend.durable ? `${WORKERS} worker processes` : `${WORKERS} concurrent async writers`;
  it(
    title(
      `${how} appending to one thread and committing plans: no gaps, no duplicates, every conflict reported`,
    ),
    async () => {
      const target = backend.newTarget();
      if (!backend.durable) {
        const stores = await opener.at(target);
        await verifyContention(stores, await contendInProcess(stores));
        return;
      }
      // The parent opens nothing first: the workers also race to create and migrate the database.
      const workers = Array.from({ length: WORKERS }, (_, k) =>
        spawnWorker({ role: "contend", target, options: options(k) }),
      );
      try {
        const events = await contendInProcesses(workers);
        await verifyContention(await opener.at(target), events);
      } finally {
        for (const w of workers) w.kill();
      }
    },
  );

  if (!backend.durable) {
    it.skip(title("crash safety: not applicable, in-memory stores do not outlive their process"), () => {});
    return;
  }
  it(
    title(
      "a writer killed with SIGKILL mid-append, then one mid-commit, leave every acknowledged write readable",
    ),
    async () => {
      const target = backend.newTarget();
      const writers: { op: "append" | "commit"; worker: WorkerHandle }[] = [];
      try {
        for (const op of ["append", "commit"] as const) {
          const worker = spawnWorker({ role: "crash", target, threadId: "t", workerId: `crash-${op}` });
          writers.push({ op, worker });
          await killMidWrite(worker, op);
        }
      } finally {
        for (const w of writers) w.worker.kill();
      }
      const stores = await opener.at(target);
      const events = writers.flatMap((w) => w.worker.events);
      await checkLog(
        stores,
        "t",
        events.filter((e): e is Acked => e.type === "append"),
      );
      const commits = new Map<number, string>();
      for (const { op, worker } of writers) {
        for (const e of worker.events) if (e.type === "commit") commits.set(e.version, `crash-${op}`);
      }
      expect(await checkPlans(stores, "t", commits)).toBeGreaterThanOrEqual(commits.size);
      for (const w of writers) await checkInFlight(stores, w.worker.events);
      const length = await stores.log.length("t");
      await stores.log.append("t", length, batch(length, ["after-crash"]));
      const latest = await stores.plans.latest("t");
      await stores.plans.commit(
        dropPlan("t", latest.version + 1, length + 1, ["after-crash"], "after"),
        latest.version,
      );
    },
  );
}

/** The write a killed writer had begun but not acknowledged is there entirely or not at all. */
async function checkInFlight(stores: Stores, events: ReadonlyArray<WriterEvent>): Promise<void> {
  const last = events.at(-1);
  if (last?.type !== "begin") return;
  if (last.op === "append") {
    const found = await stores.log.seqsOf("t", last.ids);
    expect([0, last.ids.length]).toContain(found.size);
    if (found.size > 0) expect(found.get(last.ids[0]!)).toBe(last.seq);
  } else {
    expect([last.version - 1, last.version]).toContain((await stores.plans.versions("t")).length);
  }
}
