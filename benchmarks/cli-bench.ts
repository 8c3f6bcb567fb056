/**
 * CLI start-up: how long a whole `context-ledger` process takes, as a multiple of a bare `node -e 0` timed in the
 * same rounds (the floor every Node command pays). Runs the built executable (`dist/cli/bin.cjs`: the bundle with
 * its per-user compile and vocabulary cache) warm, with the cache off, and the unbundled modules
 * (`dist/cli/main.js`, what the executable was before the bundle), on a real trajectory ingested into a temporary
 * SQLite file and compacted once (so explain, render and replay have cleared and summarized messages to show).
 *
 * Each round runs the floor and every variant once, in a shuffled order; the ratio is taken per round, then the
 * median over rounds (a neighbour's burst moves one round, not the median). Where `NODE_EXTRA_CA_CERTS` is set
 * (it makes every Node process, `node -e 0` included, parse a certificate bundle at start) the warm bundle also
 * runs without it, against a floor without it: the figure a machine that does not set it sees.
 *
 * `--instructions` also counts the instructions of one warm run of each command and of `node -e 0` under
 * valgrind (callgrind): a figure a busy machine does not move, for comparing changes when wall time is too noisy.
 *
 * `npm run bench:cli [-- --full] [-- --instructions]` (builds first: the executable must exist)
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repoRoot } from "../test/support/repo-root.js";
import { listTrajectories } from "../test/support/trajectories.js";
import { ms, summarize, type Timing } from "./support/stats.js";

const FULL = process.argv.includes("--full");
const INSTRUCTIONS = process.argv.includes("--instructions");
const ROUNDS = FULL ? 31 : 11;
const bin = join(repoRoot, "dist/cli/bin.cjs");
const unbundled = join(repoRoot, "dist/cli/main.js");
if (!existsSync(bin) || !existsSync(join(repoRoot, "dist/cli/context-ledger.cjs"))) {
  throw new Error("no built executable: run `npm run build` first (`npm run bench:cli` does)");
}

const work = mkdtempSync(join(tmpdir(), "cli-bench-"));
const db = join(work, "ledger.db");
const cacheDir = join(work, "cache");
mkdirSync(cacheDir, { mode: 0o700 });

/**
 * Node reads the certificates `NODE_EXTRA_CA_CERTS` names (and builds its root store) at the start of every
 * process, before any script: where it is set (this sandbox sets it to the system bundle) it makes `node -e 0`
 * itself some 40 ms slower and every ratio smaller. The variants marked "no extra CA" run the command and their own
 * floor without it, as on a machine that does not set it.
 */
const EXTRA_CA = process.env.NODE_EXTRA_CA_CERTS !== undefined && process.env.NODE_EXTRA_CA_CERTS !== "";

function environment(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...process.env, CONTEXT_LEDGER_CACHE_DIR: cacheDir };
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete out[name];
    else out[name] = value;
  }
  return out;
}

function run(args: ReadonlyArray<string>, env: Record<string, string | undefined> = {}): string {
  const result = spawnSync(process.execPath, args, { encoding: "utf8", env: environment(env) });
  if (result.status !== 0) throw new Error(`${args.join(" ")} exited ${result.status}: ${result.stderr}`);
  return result.stdout;
}

// A real run of a few hundred messages (the example thread had 144), compacted at 25 % of its size.
const trajectory =
  listTrajectories().find((t) => t.name.endsWith("django__django-14349.jsonl")) ?? listTrajectories()[0];
if (trajectory === undefined) throw new Error("no trajectories found (../shared/data/trajectories)");
run([bin, "ingest", trajectory.path, "--thread", "t", "--db", db]);
const explained = JSON.parse(run([bin, "explain", "--thread", "t", "--json", "--db", db])) as {
  totals: Record<string, { tokens: number }>;
  logSeq: number;
};
const total = Object.values(explained.totals).reduce((sum, t) => sum + t.tokens, 0);
const budget = String(Math.round(total / 4));
const prepared = JSON.parse(
  run([bin, "prepare", "--thread", "t", "--budget", budget, "--json", "--db", db]),
) as {
  callId: string;
};

const COMMANDS: ReadonlyArray<{ readonly name: string; readonly args: ReadonlyArray<string> }> = [
  { name: "--help", args: ["--help"] },
  { name: "explain", args: ["explain", "--thread", "t", "--db", db] },
  { name: "render", args: ["render", "--thread", "t", "--db", db] },
  { name: "replay --verify", args: ["replay", "--call", prepared.callId, "--verify", "--db", db] },
  { name: "diff", args: ["diff", "--thread", "t", "0", "1", "--db", db] },
];
const NO_EXTRA_CA = { NODE_EXTRA_CA_CERTS: undefined };
const VARIANTS: ReadonlyArray<{
  readonly name: string;
  readonly entry: string;
  readonly env: Record<string, string | undefined>;
  /** The floor the variant is divided by: `node -e 0` in the same environment. */
  readonly floor: "floor" | "floor, no extra CA";
}> = [
  { name: "bundle, cache warm", entry: bin, env: {}, floor: "floor" },
  { name: "bundle, cache off", entry: bin, env: { CONTEXT_LEDGER_CACHE: "off" }, floor: "floor" },
  { name: "unbundled, cache off", entry: unbundled, env: { CONTEXT_LEDGER_CACHE: "off" }, floor: "floor" },
  ...(EXTRA_CA
    ? [
        {
          name: "bundle, cache warm, no extra CA",
          entry: bin,
          env: NO_EXTRA_CA,
          floor: "floor, no extra CA" as const,
        },
      ]
    : []),
];
const FLOORS: ReadonlyArray<{ readonly name: string; readonly env: Record<string, string | undefined> }> = [
  { name: "floor", env: {} },
  ...(EXTRA_CA ? [{ name: "floor, no extra CA", env: NO_EXTRA_CA }] : []),
];

function timed(args: ReadonlyArray<string>, env: Record<string, string | undefined> = {}): number {
  const start = performance.now();
  run(args, env);
  return performance.now() - start;
}

function shuffled<T>(items: ReadonlyArray<T>, seed: number): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

interface Row {
  readonly command: string;
  readonly variant: string;
  readonly ms: Timing;
  readonly ratio: Timing;
}

const rows: Row[] = [];
const floorTimes = new Map<string, number[]>(FLOORS.map((f) => [f.name, []]));
for (const command of COMMANDS) {
  for (const v of VARIANTS) run([v.entry, ...command.args], v.env); // warm-up: fills the cache, the page cache
  const times = new Map<string, number[]>(VARIANTS.map((v) => [v.name, []]));
  const ratios = new Map<string, number[]>(VARIANTS.map((v) => [v.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const order = shuffled([...FLOORS.map((f) => f.name), ...VARIANTS.map((v) => v.name)], round + 1);
    const took = new Map<string, number>();
    for (const name of order) {
      const variant = VARIANTS.find((v) => v.name === name);
      const floor = FLOORS.find((f) => f.name === name);
      took.set(
        name,
        variant === undefined
          ? timed(["-e", "0"], floor!.env)
          : timed([variant.entry, ...command.args], variant.env),
      );
    }
    for (const f of FLOORS) floorTimes.get(f.name)!.push(took.get(f.name)!);
    for (const v of VARIANTS) {
      times.get(v.name)!.push(took.get(v.name)!);
      ratios.get(v.name)!.push(took.get(v.name)! / took.get(v.floor)!);
    }
  }
  for (const v of VARIANTS) {
    rows.push({
      command: command.name,
      variant: v.name,
      ms: summarize(times.get(v.name)!),
      ratio: summarize(ratios.get(v.name)!),
    });
  }
}

const floor = summarize(floorTimes.get("floor")!);
const cleanTimes = floorTimes.get("floor, no extra CA");
const clean = cleanTimes === undefined ? undefined : summarize(cleanTimes);
console.log(
  `CLI start-up on ${trajectory.name} (${explained.logSeq} messages, compacted to ${budget} tokens), ` +
    `${ROUNDS} rounds; node -e 0: ${ms(floor.median)} ms (${ms(floor.min)}–${ms(floor.max)})` +
    (clean === undefined
      ? ""
      : `; without NODE_EXTRA_CA_CERTS: ${ms(clean.median)} ms (${ms(clean.min)}–${ms(clean.max)})`),
);
console.log("| command | variant | ms median (min–max) | × node -e 0 (median of rounds) |");
console.log("|---|---|---:|---:|");
for (const r of rows) {
  console.log(
    `| ${r.command} | ${r.variant} | ${ms(r.ms.median)} (${ms(r.ms.min)}–${ms(r.ms.max)}) | ${r.ratio.median.toFixed(2)}× |`,
  );
}
/** Instructions (millions) of one run under callgrind, or undefined when valgrind is not installed. */
function instructions(
  args: ReadonlyArray<string>,
  env: Record<string, string | undefined> = {},
): number | undefined {
  const result = spawnSync(
    "valgrind",
    ["--tool=callgrind", "--callgrind-out-file=/dev/null", process.execPath, ...args],
    { encoding: "utf8", env: environment(env) },
  );
  const refs = /I\s+refs:\s+([\d,]+)/.exec(result.stderr ?? "")?.[1];
  return result.error !== undefined || refs === undefined
    ? undefined
    : Number(refs.replaceAll(",", "")) / 1e6;
}

const counted: Array<{
  readonly command: string;
  readonly millions: number;
  readonly ratio: number;
  readonly withoutExtraCa?: { readonly millions: number; readonly ratio: number };
}> = [];
if (INSTRUCTIONS) {
  const base = instructions(["-e", "0"]);
  const cleanBase = EXTRA_CA ? instructions(["-e", "0"], NO_EXTRA_CA) : undefined;
  if (base === undefined) {
    console.log("\n--instructions: valgrind is not installed, no instruction counts");
  } else {
    for (const command of COMMANDS) {
      const millions = instructions([bin, ...command.args]);
      const cleanMillions =
        cleanBase === undefined ? undefined : instructions([bin, ...command.args], NO_EXTRA_CA);
      if (millions === undefined) continue;
      counted.push({
        command: command.name,
        millions,
        ratio: millions / base,
        ...(cleanMillions === undefined || cleanBase === undefined
          ? {}
          : { withoutExtraCa: { millions: cleanMillions, ratio: cleanMillions / cleanBase } }),
      });
    }
    const cleanHead =
      cleanBase === undefined ? "" : ` | without NODE_EXTRA_CA_CERTS (node -e 0: ${cleanBase.toFixed(0)} M)`;
    console.log(`\nInstructions of one warm run (callgrind; node -e 0: ${base.toFixed(0)} M)`);
    console.log(`| command | instructions | × node -e 0${cleanHead} |`);
    console.log(`|---|---:|---:${cleanBase === undefined ? "" : "|---:"}|`);
    for (const c of counted) {
      const cleanCell =
        c.withoutExtraCa === undefined
          ? ""
          : ` | ${c.withoutExtraCa.millions.toFixed(0)} M (${c.withoutExtraCa.ratio.toFixed(2)}×)`;
      console.log(`| ${c.command} | ${c.millions.toFixed(0)} M | ${c.ratio.toFixed(2)}×${cleanCell} |`);
    }
  }
}

mkdirSync(join(repoRoot, "benchmarks/results"), { recursive: true });
writeFileSync(
  join(repoRoot, "benchmarks/results/cli.json"),
  `${JSON.stringify({ trajectory: trajectory.name, messages: explained.logSeq, budget, rounds: ROUNDS, floor, ...(clean === undefined ? {} : { floorWithoutExtraCa: clean }), rows, instructions: counted }, null, 2)}\n`,
);
rmSync(work, { recursive: true, force: true });
