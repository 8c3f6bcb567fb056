/**
 * Runs every benchmark script, one after another in its own process so they do not disturb each other.
 * Pass `--full` for the longer runs. Results land in benchmarks/results/*.json; tables are printed.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

const scripts = ["tokenizer-bench.ts", "render-bench.ts", "peers-bench.ts"];
const extra = process.argv.slice(2);
let failed = 0;
for (const script of scripts) {
  const path = join(import.meta.dirname, script);
  if (!existsSync(path)) continue;
  console.log(`\n## ${script}\n`);
  const run = spawnSync(process.execPath, ["--import", "tsx", path, ...extra], { stdio: "inherit" });
  if (run.status !== 0) {
    failed++;
    console.error(`${script} exited with ${run.status}`);
  }
}
process.exitCode = failed === 0 ? 0 : 1;
