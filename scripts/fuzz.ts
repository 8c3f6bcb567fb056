/**
 * `npm run fuzz`: the fuzz campaign (see test/support/fuzz-inputs.ts and fuzz-check.ts). Quick by default
 * (2,000 iterations); `--full` runs 100,000; `--iterations N` any number; `--seed N` picks the first case's seed
 * (case i uses seed N + i, so a finding's seed reruns it alone with `--seed S --iterations 1`). Prints the figures
 * and every finding with its seed and minimal input; exits 1 when there is a finding.
 */
import { runCampaign } from "../test/support/fuzz-check.js";

function option(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

function integer(name: string, fallback: number): number {
  const raw = option(name);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) {
    process.stderr.write(`fuzz: ${name} takes a non-negative integer, got ${JSON.stringify(raw)}\n`);
    process.exit(2);
  }
  return n;
}

const iterations = integer("--iterations", process.argv.includes("--full") ? 100_000 : 2_000);
const seed = integer("--seed", 1);
const started = performance.now();
let lastPrint = started;

const figures = await runCampaign(seed, iterations, (done, f) => {
  const now = performance.now();
  if (process.stderr.isTTY && now - lastPrint > 1_000) {
    lastPrint = now;
    process.stderr.write(`\r${done}/${iterations} cases, ${f.findings.length} findings`);
  } else if (!process.stderr.isTTY && done % 5_000 === 0) {
    process.stderr.write(
      `${done}/${iterations} cases, ${f.findings.length} findings, ${((now - started) / 1000).toFixed(0)} s\n`,
    );
  }
});
if (process.stderr.isTTY) process.stderr.write("\n");

const seconds = (performance.now() - started) / 1000;
const rejected = [...figures.rejected.values()].reduce((a, b) => a + b, 0);
const lines = [
  `fuzz: seeds ${seed}..${seed + iterations - 1}, ${seconds.toFixed(1)} s`,
  `iterations           ${figures.iterations}`,
  `accepted             ${figures.accepted}`,
  ...[...figures.refusedTurns.entries()].map(([k, v]) => `  with a turn refused by ${k.padEnd(28)} ${v}`),
  `rejected             ${rejected}`,
  ...[...figures.rejected.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => `  ${k.padEnd(36)} ${v}`),
  `invariant violations ${figures.findings.length}`,
];
for (const f of figures.findings) {
  lines.push(
    `  seed ${f.seed}: ${f.finding}`,
    `    ${f.detail}`,
    `    mutations: ${f.mutations.join(" | ") || "none"}`,
    `    minimal input: ${f.input}`,
    `    rerun: npm run fuzz -- --seed ${f.seed} --iterations 1`,
  );
}
process.stdout.write(`${lines.join("\n")}\n`);
process.exitCode = figures.findings.length > 0 ? 1 : 0;
