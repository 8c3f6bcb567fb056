/**
 * Access to the real agent trajectories in `../shared/data/trajectories` (outside the repo, never copied into it).
 * Tests use `describe.skipIf(!trajectoriesAvailable)` so a plain clone without that folder still passes.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { repoRoot } from "./repo-root.js";

/** One trajectory file: `name` is its path relative to the trajectories folder, e.g. `tau-bench/x.jsonl`. */
export interface TrajectoryFile {
  readonly name: string;
  readonly path: string;
  readonly text: string;
}

/** One row of the table in `SOURCES.md`. */
export interface TrajectorySource {
  readonly name: string;
  readonly messages: number;
  readonly toolCalls: number;
  /** Ids of the calls left without a result (the "unanswered calls" column; `-` means none). */
  readonly unansweredCalls: ReadonlyArray<string>;
}

/** The trajectories folder: `$CONTEXT_LEDGER_TRAJECTORIES`, else `../shared/data/trajectories` from the repo root. */
export const trajectoriesDir: string = resolve(
  repoRoot,
  process.env.CONTEXT_LEDGER_TRAJECTORIES ?? "../shared/data/trajectories",
);

function findProblem(): string | undefined {
  if (!existsSync(trajectoriesDir) || !statSync(trajectoriesDir).isDirectory()) {
    return `folder ${trajectoriesDir} not found`;
  }
  if (listJsonl(trajectoriesDir).length === 0) return `no .jsonl files under ${trajectoriesDir}`;
  return undefined;
}

function listJsonl(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listJsonl(full));
    else if (entry.isFile() && entry.name.endsWith(".jsonl")) out.push(full);
  }
  return out;
}

const problem = findProblem();

/** True when the shared trajectory files can be read. */
export const trajectoriesAvailable: boolean = problem === undefined;

/** Why the trajectory tests are skipped, or undefined when they run. */
export const trajectoriesSkipReason: string | undefined =
  problem === undefined
    ? undefined
    : `real-trajectory tests skipped: ${problem} (set CONTEXT_LEDGER_TRAJECTORIES to the folder holding the JSONL files)`;

// Print the reason once per worker process, not once per test file that imports this module.
const announced = Symbol.for("context-ledger.trajectories.skip-announced");
const globals = globalThis as { [announced]?: boolean };
if (trajectoriesSkipReason !== undefined && globals[announced] !== true) {
  globals[announced] = true;
  console.warn(trajectoriesSkipReason);
}

let cache: ReadonlyArray<TrajectoryFile> | undefined;

/** Every trajectory file, sorted by name, with its text (read once). Empty when the folder is absent. */
export function listTrajectories(): ReadonlyArray<TrajectoryFile> {
  if (!trajectoriesAvailable) return [];
  cache ??= listJsonl(trajectoriesDir)
    .map((path) => ({
      name: relative(trajectoriesDir, path).split("\\").join("/"),
      path,
      text: readFileSync(path, "utf8"),
    }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return cache;
}

/** The trajectory with a given name (relative path); throws when it does not exist. */
export function trajectory(name: string): TrajectoryFile {
  const found = listTrajectories().find((t) => t.name === name);
  if (found === undefined) throw new Error(`trajectory ${name} not found under ${trajectoriesDir}`);
  return found;
}

/** The file table of `SOURCES.md`, by file name; empty when the folder or the file is absent. */
export function readSourcesTable(): ReadonlyMap<string, TrajectorySource> {
  const path = join(trajectoriesDir, "SOURCES.md");
  const out = new Map<string, TrajectorySource>();
  if (!existsSync(path)) return out;
  for (const row of readFileSync(path, "utf8").split("\n")) {
    const cells = row.split("|").map((c) => c.trim());
    // | `file` | msgs | tool calls | total chars | biggest | bytes | unanswered calls | ...
    const name = /^`(.+\.jsonl)`$/.exec(cells[1] ?? "")?.[1];
    if (name === undefined) continue;
    const unanswered = cells[7] ?? "-";
    out.set(name, {
      name,
      messages: Number((cells[2] ?? "").replaceAll(",", "")),
      toolCalls: Number((cells[3] ?? "").replaceAll(",", "")),
      unansweredCalls:
        unanswered === "-" || unanswered === ""
          ? []
          : unanswered.split(",").map((id) => id.trim().replaceAll("`", "")),
    });
  }
  return out;
}
