/**
 * A fleet of worker processes on one PostgreSQL database (`fleet-worker.ts`), driven like a harness behind a load
 * balancer: threads advance call by call, each call on a random live worker; optionally workers are SIGKILLed at
 * random moments and replaced. Shared by the fleet test and the fleet benchmark.
 */

import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { join } from "node:path";
import { createContextEngine } from "../../src/context-engine.js";
import type { ContextEngine } from "../../src/engine/context-engine.js";
import type { EngineEvent } from "../../src/engine/engine-events.js";
import { parseTranscript } from "../../src/log/import-jsonl.js";
import type { MessageInput } from "../../src/log/message.js";
import { splitAtReplies } from "../../src/log/reply-batches.js";
import type { ProviderFormat } from "../../src/render/provider-rules.js";
import { openPostgresStores } from "../../src/stores/postgres/index.js";
import type { Stores } from "../../src/stores/stores.js";
import type { FleetCall, FleetLine, FleetWorkerSpec } from "./fleet-worker.js";
import { repoRoot } from "./repo-root.js";
import { seeded } from "./seeded.js";
import { simpleCounter } from "./simple-counter.js";
import { listTrajectories } from "./trajectories.js";

const WORKER = join(repoRoot, "test", "support", "fleet-worker.ts");
const FORMATS: ReadonlyArray<ProviderFormat> = ["openai", "anthropic", "responses"];

/** One thread of the run: its batches (one per model call) and the request budget of every call. */
export interface FleetThread {
  readonly threadId: string;
  readonly batches: ReadonlyArray<ReadonlyArray<MessageInput>>;
  readonly budget: number;
}

export interface FleetOptions {
  readonly spec: FleetWorkerSpec;
  readonly workers: number;
  readonly threads: ReadonlyArray<FleetThread>;
  /** Kill a random worker every [min, max] ms while the threads run (and start another at once). */
  readonly killEveryMs?: readonly [number, number];
  readonly seed: number;
}

export type FleetAnswer = Extract<FleetLine, { type: "answer"; ok: true }> & {
  readonly threadId: string;
  readonly budget: number;
};

export interface FleetRun {
  readonly answers: ReadonlyArray<FleetAnswer>;
  /** Calls a worker answered with an error. */
  readonly failures: ReadonlyArray<string>;
  /** Calls sent again because their worker died first. */
  readonly resent: number;
  readonly kills: number;
  readonly events: ReadonlyArray<EngineEvent>;
  readonly durationMs: number;
  /** Worker exits other than by our SIGKILL or SIGTERM, with their stderr. */
  readonly crashes: ReadonlyArray<string>;
  /** Stops the workers (SIGTERM: a graceful close); resolves with their exit codes. */
  stop(): Promise<ReadonlyArray<number | null>>;
}

class WorkerProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly ready: Promise<void>;
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  readonly #waiting = new Map<number, { resolve: (a: FleetLine) => void; reject: (e: Error) => void }>();
  stderr = "";
  alive = true;
  killed = false;

  constructor(spec: FleetWorkerSpec, onEvent: (e: EngineEvent) => void) {
    this.child = spawn(process.execPath, ["--import", "tsx", WORKER, JSON.stringify(spec)], {
      cwd: repoRoot,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let markReady!: () => void;
    this.ready = new Promise((resolve) => {
      markReady = resolve;
    });
    let pending = "";
    this.child.stdout.setEncoding("utf8");
    this.child.stdout.on("data", (chunk: string) => {
      pending += chunk;
      for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
        const line = JSON.parse(pending.slice(0, nl)) as FleetLine;
        pending = pending.slice(nl + 1);
        if (line.type === "ready") markReady();
        else if (line.type === "event") onEvent(line.event);
        else {
          this.#waiting.get(line.id)?.resolve(line);
          this.#waiting.delete(line.id);
        }
      }
    });
    this.child.stderr.setEncoding("utf8");
    this.child.stderr.on("data", (chunk: string) => {
      this.stderr += chunk;
    });
    this.child.stdin.on("error", () => {});
    this.exited = new Promise((resolve) => {
      this.child.on("close", (code, signal) => {
        this.alive = false;
        for (const w of this.#waiting.values()) w.reject(new Error("worker died"));
        this.#waiting.clear();
        resolve({ code, signal });
      });
    });
  }

  call(call: FleetCall): Promise<FleetLine> {
    return new Promise((resolve, reject) => {
      if (!this.alive) return reject(new Error("worker died"));
      this.#waiting.set(call.id, { resolve, reject });
      this.child.stdin.write(`${JSON.stringify(call)}\n`);
    });
  }
}

/** Runs the threads on a fleet; the workers keep running (to drain the queue) until `stop`. */
export async function runFleet(options: FleetOptions): Promise<FleetRun> {
  const random = seeded(options.seed);
  const events: EngineEvent[] = [];
  const crashes: string[] = [];
  const all: WorkerProcess[] = [];
  let live: WorkerProcess[] = [];
  const start = () => {
    const w = new WorkerProcess(options.spec, (e) => events.push(e));
    all.push(w);
    live.push(w);
    void w.exited.then(({ code, signal }) => {
      live = live.filter((x) => x !== w);
      if (!w.killed) crashes.push(`worker exited ${code ?? signal}: ${w.stderr}`);
    });
    return w;
  };
  for (let i = 0; i < options.workers; i++) start();
  // A worker that fails to start fails the run (rather than leaving it waiting for a worker that is gone).
  await Promise.all(
    live.map((w) =>
      Promise.race([
        w.ready,
        w.exited.then(({ code, signal }) => {
          if (!w.killed) throw new Error(`a worker failed to start (${code ?? signal}): ${w.stderr}`);
        }),
      ]),
    ),
  );

  const t0 = performance.now();
  let kills = 0;
  let running = true;
  const chaos = (async () => {
    if (options.killEveryMs === undefined) return;
    const [min, max] = options.killEveryMs;
    while (running) {
      await new Promise((r) => setTimeout(r, min + random() * (max - min)));
      if (!running) break;
      const victim = live[Math.floor(random() * live.length)];
      if (victim === undefined) continue;
      victim.killed = true;
      victim.child.kill("SIGKILL");
      kills++;
      start();
    }
  })();

  const answers: FleetAnswer[] = [];
  const debug =
    process.env.FLEET_DEBUG === undefined
      ? undefined
      : setInterval(() => {
          const inFlight = live.map((w) => `${w.child.pid}:${w.alive ? "up" : "down"}`).join(" ");
          process.stderr.write(`fleet: ${answers.length} answers, ${kills} kills, workers ${inFlight}\n`);
        }, 2_000);
  const failures: string[] = [];
  let resent = 0;
  let nextId = 0;
  const pickReady = async (): Promise<WorkerProcess> => {
    for (;;) {
      const candidates = live.filter((w) => w.alive);
      const w = candidates[Math.floor(random() * candidates.length)];
      if (w !== undefined) {
        // A worker killed before it was ready never becomes ready: wait for whichever comes first.
        await Promise.race([w.ready, w.exited]);
        if (w.alive) return w;
      } else await new Promise((r) => setTimeout(r, 50));
    }
  };
  await Promise.all(
    options.threads.map(async (thread) => {
      for (const [n, batch] of thread.batches.entries()) {
        const call: FleetCall = {
          id: nextId++,
          threadId: thread.threadId,
          messages: batch,
          budget: thread.budget,
          format: FORMATS[n % FORMATS.length]!,
        };
        for (;;) {
          const worker = await pickReady();
          let line: FleetLine;
          try {
            line = await worker.call(call);
          } catch {
            resent++;
            continue;
          }
          if (line.type === "answer" && line.ok) {
            answers.push({ ...line, threadId: thread.threadId, budget: thread.budget });
          } else if (line.type === "answer") failures.push(`${thread.threadId} call ${n}: ${line.error}`);
          break;
        }
      }
    }),
  );
  running = false;
  if (debug !== undefined) clearInterval(debug);
  await chaos;
  const durationMs = performance.now() - t0;
  return {
    answers,
    failures,
    resent,
    kills,
    events,
    durationMs,
    crashes,
    stop: async () => {
      // A worker started by the last kill may not be up yet: let it come up (or die) before asking it to stop.
      await Promise.all(live.map((w) => Promise.race([w.ready, w.exited])));
      const stopping = live.filter((w) => w.alive);
      for (const w of stopping) {
        w.killed = true;
        w.child.kill("SIGTERM");
      }
      const exits = await Promise.all(stopping.map((w) => w.exited));
      for (const w of all) if (w.alive) w.child.kill("SIGKILL");
      return exits.map((e) => e.code);
    },
  };
}

/** `count` threads cycling over the real trajectories, each cut to its first calls, at ~40 % of what those calls hold. */
export function fleetThreads(count: number, calls: number): FleetThread[] {
  const counter = simpleCounter();
  const files = listTrajectories();
  return Array.from({ length: count }, (_, i) => {
    const file = files[i % files.length]!;
    // Ids fixed here, so a worker that takes over a call appends only what a dead one did not.
    const inputs = parseTranscript(file.text).map((m, k) => ({ ...m, id: m.id ?? `m${k}` }));
    const batches = splitAtReplies(inputs).slice(0, calls);
    const tokens = batches.flat().reduce((n, m) => n + counter.countMessage(m as never), 0);
    return { threadId: `fleet-${i}`, batches, budget: Math.max(2_500, Math.round(tokens * 0.4)) };
  });
}

/**
 * An engine on the fleet's database that takes no job (`jobs.work: false`): what a test or benchmark reads the
 * fleet's queue, plans and calls through once it has run. Close the engine, then the stores.
 */
export async function openObserver(
  connectionString: string,
  schema: string,
): Promise<{ readonly stores: Stores; readonly engine: ContextEngine }> {
  const stores = await openPostgresStores({ connectionString, schema });
  const engine = createContextEngine({
    stores,
    counter: simpleCounter(),
    budget: { contextWindow: 1_000_000 },
    jobs: { work: false },
  });
  return { stores, engine };
}
