/**
 * `context-ledger jobs`, `worker` and `explain` on a PostgreSQL database's durable queue: a summary a harness
 * queued shows as pending (`jobs --json` prints exactly the three counts, `explain` says a summary is pending); a
 * `worker` process runs it, and on SIGTERM closes gracefully and exits 0. Skipped without PostgreSQL server binaries,
 * except in CI.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import type { MessageInput } from "../src/log/message.js";
import { openPostgresStores } from "../src/stores/postgres/index.js";
import type { Summarizer } from "../src/strategies/summarizer.js";
import { jsonOf, runInProcess } from "./support/cli-run.js";
import { describeOnPostgres } from "./support/postgres-cluster.js";
import { repoRoot } from "./support/repo-root.js";

const modelLike: Summarizer = {
  id: "test-model",
  promptVersion: "1",
  summarize: async (input) => ({ text: `summary of ${input.messages.length} messages`, structured: {} }),
};

function chat(n: number): MessageInput[] {
  return Array.from({ length: n }, (_, i): MessageInput[] => [
    { id: `u${i}`, role: "user", parts: [{ type: "text", text: `question ${i} ${"word ".repeat(60)}` }] },
    { id: `a${i}`, role: "assistant", parts: [{ type: "text", text: `answer ${i} ${"text ".repeat(60)}` }] },
  ]).flat();
}

/** A harness turn on `thread` that queues a summary for a worker (it takes no job itself). */
async function queueSummary(db: string, thread: string): Promise<void> {
  const stores = await openPostgresStores({ connectionString: db });
  const engine = createContextEngine({
    stores,
    budget: { contextWindow: 100_000, reserveOutput: 0, safetyMargin: 0 },
    summarizer: modelLike,
    jobs: { work: false },
  });
  try {
    await engine.append(thread, chat(20));
    const turn = await engine.prepareTurn(thread, { format: "openai", budget: 1_200 });
    expect(turn.stats.backgroundScheduled).toBe(true);
  } finally {
    await engine.close();
    await stores.close();
  }
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describeOnPostgres("jobs and worker commands on PostgreSQL", "CLI jobs PostgreSQL test", (server) => {
  it("jobs --json counts a queued summary, explain says it is pending, worker runs it", {
    timeout: 60_000,
  }, async () => {
    const db = server().connectionString;
    const empty = await runInProcess(["jobs", "--db", db, "--json"]);
    expect(empty.code, empty.stderr).toBe(0);
    expect(empty.stdout).toBe('{"queued": 0, "running": 0, "failed": 0}\n');
    await queueSummary(db, "t");
    const queued = await runInProcess(["jobs", "--thread", "t", "--db", db, "--json"]);
    expect(jsonOf(queued)).toEqual({ queued: 1, running: 0, failed: 0 });
    expect(Object.keys(jsonOf(queued))).toEqual(["queued", "running", "failed"]);
    const text = await runInProcess(["jobs", "--db", db]);
    expect(text.stdout).toBe("1 queued, 0 running, 0 failed\n");
    const explain = await runInProcess(["explain", "--thread", "t", "--db", db]);
    expect(explain.code, explain.stderr).toBe(0);
    expect(explain.stdout).toMatch(/summary pending: 1 job\(s\) queued, 0 running/);
    expect(
      jsonOf<{ pendingJobs: unknown }>(await runInProcess(["explain", "--thread", "t", "--db", db, "--json"]))
        .pendingJobs,
    ).toEqual({ queued: 1, running: 0, failed: 0 });

    let stop!: (signal: string) => void;
    const stopped = new Promise<string>((resolve) => {
      stop = resolve;
    });
    const worker = runInProcess(["worker", "--db", db], { stopRequested: () => stopped });
    await until("the worker to run the job", async () => {
      const run = await runInProcess(["jobs", "--thread", "t", "--db", db, "--json"]);
      const c = jsonOf<{ queued: number; running: number }>(run);
      return c.queued + c.running === 0;
    });
    stop("SIGTERM");
    const done = await worker;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stderr).toMatch(/committed t\/v1: plan v2/);
    expect(done.stderr).toMatch(/worker: SIGTERM, finishing running jobs\nworker: stopped/);
    const after = await runInProcess(["explain", "--thread", "t", "--db", db]);
    expect(after.stdout).not.toMatch(/summary pending/);
    expect(after.stdout).toMatch(/summarized/);
  });

  it("a worker process stops gracefully on SIGTERM; worker refuses a SQLite database", {
    timeout: 60_000,
  }, async () => {
    const db = server().connectionString;
    await queueSummary(db, "p");
    const child: ChildProcess = spawn(
      process.execPath,
      ["--import", "tsx", "src/cli/main.ts", "worker", "--db", db],
      {
        cwd: repoRoot,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stderr = "";
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    await until("the worker process to commit the summary", async () => /committed p\/v1/.test(stderr));
    child.kill("SIGTERM");
    expect(await exited, stderr).toBe(0);
    expect(stderr).toMatch(/worker: stopped/);
    const sqlite = await runInProcess(["worker", "--db", "./nowhere.db"]);
    expect(sqlite.code).not.toBe(0);
    expect(sqlite.stderr).toMatch(/worker needs a PostgreSQL database/);
  });
});
