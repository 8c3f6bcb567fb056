/**
 * Running the `context-ledger` CLI from tests: in-process (fast, captured streams, the same dispatcher the
 * executable uses) or as a real child process (the executable, its exit code and its streams).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../src/cli/cli.js";
import type { CliIo } from "../../src/cli/cli-io.js";
import { exportTranscript, ThreadLog } from "../../src/index.js";
import { generateSampleSession } from "../../src/sample/index.js";
import { repoRoot } from "./repo-root.js";

/** What a CLI run printed and returned. */
export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of a CLI run. */
export interface CliRunOptions {
  /** Standard input (for `ingest -`). */
  readonly stdin?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Pretend standard error is a terminal (progress bars draw). */
  readonly errIsTTY?: boolean;
  /** What `worker` waits for before it stops (the process's SIGINT/SIGTERM in the real CLI). */
  readonly stopRequested?: () => Promise<string>;
}

/** Runs the CLI in this process with captured streams. */
export async function runInProcess(
  argv: ReadonlyArray<string>,
  options: CliRunOptions = {},
): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const io: CliIo = {
    out: (text) => {
      stdout += text;
    },
    err: (text) => {
      stderr += text;
    },
    readStdin: async () => options.stdin ?? "",
    errIsTTY: options.errIsTTY ?? false,
    env: options.env ?? {},
    ...(options.stopRequested === undefined ? {} : { stopRequested: options.stopRequested }),
  };
  const code = await runCli(argv, io);
  return { code, stdout, stderr };
}

/** Runs `node --import tsx src/cli/main.ts …` from the repository root, as `npm run cli -- …` does. */
export function runChild(argv: ReadonlyArray<string>, options: CliRunOptions = {}): CliRun {
  const result = spawnSync(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...argv], {
    cwd: repoRoot,
    encoding: "utf8",
    input: options.stdin ?? "",
    env: { ...process.env, ...options.env },
    timeout: 60_000,
  });
  if (result.error !== undefined) throw result.error;
  return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/** Parses a run's stdout as JSON, failing with the run's streams when it is not. */
export function jsonOf<T = Record<string, unknown>>(run: CliRun): T {
  try {
    return JSON.parse(run.stdout) as T;
  } catch {
    throw new Error(`stdout is not JSON (exit ${run.code}):\n${run.stdout}\nstderr:\n${run.stderr}`);
  }
}

/** A temporary folder for databases, removed by the returned `remove`. */
export function tempDir(prefix: string): { readonly path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** A temporary folder handing out fresh database paths and transcript files. */
export interface CliSandbox {
  /** The folder itself. */
  readonly dir: string;
  /** A database path not used before. */
  db(): string;
  /** Writes a file into the folder and returns its path. */
  file(name: string, text: string): string;
  remove(): void;
}

/** Creates a {@link CliSandbox} under the system's temporary folder. */
export function cliSandbox(prefix: string): CliSandbox {
  const dir = tempDir(prefix);
  let databases = 0;
  return {
    dir: dir.path,
    db: () => join(dir.path, `ledger-${databases++}.db`),
    file: (name, text) => {
      const path = join(dir.path, name);
      writeFileSync(path, text);
      return path;
    },
    remove: dir.remove,
  };
}

/** Runs a command in-process on the given database (`--db` appended). */
export function cliOn(db: string, ...argv: string[]): Promise<CliRun> {
  return runInProcess([...argv, "--db", db]);
}

/** Log length and plan version of a thread, as `explain --json` reports them (throws when explain fails). */
export async function threadState(
  db: string,
  thread: string,
): Promise<{ logSeq: number; planVersion: number }> {
  const run = await cliOn(db, "explain", "--thread", thread, "--json");
  if (run.code !== 0) throw new Error(`explain failed (exit ${run.code}): ${run.stderr}`);
  const { logSeq, planVersion } = jsonOf<{ logSeq: number; planVersion: number }>(run);
  return { logSeq, planVersion };
}

/** A generated session as a JSONL transcript (deterministic for a seed). */
export function sampleTranscript(messages: number, seed: number): string {
  return exportTranscript(ThreadLog.from("sample", generateSampleSession({ messages, seed })));
}
