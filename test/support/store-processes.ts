import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { join } from "node:path";
import { repoRoot } from "./repo-root.js";
import type { WorkerSpec } from "./store-worker.js";
import type { WriterEvent } from "./store-writer.js";

const WORKER = join(repoRoot, "test", "support", "store-worker.ts");

/** A writer running in a child process, seen through the events it prints. */
export interface WorkerHandle {
  readonly events: ReadonlyArray<WriterEvent>;
  /** Resolves with the first event (already seen or future) matching `test`; rejects if the worker exits first. */
  waitFor(test: (event: WriterEvent) => boolean): Promise<WriterEvent>;
  go(): void;
  kill(): void;
  /** Resolves when the process has exited, with its exit code or signal and everything it wrote to stderr. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

/** Starts `store-worker.ts` under tsx with a spec. */
export function spawnWorker(spec: WorkerSpec): WorkerHandle {
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    ["--import", "tsx", WORKER, JSON.stringify(spec)],
    { cwd: repoRoot, stdio: ["pipe", "pipe", "pipe"] },
  );
  const events: WriterEvent[] = [];
  const waiters: { test: (e: WriterEvent) => boolean; resolve: (e: WriterEvent) => void }[] = [];
  let stderr = "";
  let pending = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    pending += chunk;
    for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
      const event = JSON.parse(pending.slice(0, nl)) as WriterEvent;
      pending = pending.slice(nl + 1);
      events.push(event);
      for (const w of waiters.filter((x) => x.test(event))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(event);
      }
    }
  });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => {
    stderr += chunk;
  });
  child.stdin.on("error", () => {}); // the worker may exit before reading stdin
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>(
    (resolve) => {
      child.on("close", (code, signal) => resolve({ code, signal, stderr }));
    },
  );
  return {
    events,
    waitFor: (test) => {
      const seen = events.find(test);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        waiters.push({ test, resolve });
        void exited.then(({ code, signal, stderr: err }) =>
          reject(
            new Error(
              `worker exited (${code ?? signal}) before the awaited event: ${err}${JSON.stringify(events.at(-1))}`,
            ),
          ),
        );
      });
    },
    go: () => child.stdin.write("go\n"),
    kill: () => child.kill("SIGKILL"),
    exited,
  };
}
