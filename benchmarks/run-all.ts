/**
 * Runs every benchmark script one after another, each in its own process so they do not disturb each other.
 * `npm run bench` compiles with tsc first and runs plain node on the output: what users run, without tsx's
 * keep-names wrappers (measured to double the cold render path). Pass `--full` for the longer runs.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { extname, join } from "node:path";

const compiled = extname(import.meta.filename) === ".js";
const scripts = [
  "tokenizer-bench",
  "render-bench",
  "peers-bench",
  "pipeline-bench",
  "engine-bench",
  "quality-bench",
  "fleet-bench",
];
const extra = process.argv.slice(2);
let failed = 0;
for (const name of scripts) {
  const path = join(import.meta.dirname, `${name}${compiled ? ".js" : ".ts"}`);
  if (!existsSync(path)) continue;
  console.log(`\n## ${name}\n`);
  // --expose-gc: the engine benchmark collects the heap between configurations.
  const args = compiled
    ? ["--expose-gc", path, ...extra]
    : ["--expose-gc", "--import", "tsx", path, ...extra];
  const run = spawnSync(process.execPath, args, { stdio: "inherit" });
  if (run.status !== 0) {
    failed++;
    console.error(`${name} exited with ${run.status}`);
  }
}
process.exitCode = failed === 0 ? 0 : 1;
