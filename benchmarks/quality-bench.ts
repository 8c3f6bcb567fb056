/**
 * Retention: what the model still sees after compaction. Every shared trajectory gets 16 planted facts and a
 * pinned constraint, then is replayed call by call through context-ledger (engine with idle() awaited and
 * never awaited, and the default pipeline) and the peers (LangChain.js trimMessages, Mastra
 * TokenLimiterProcessor, AI SDK pruneMessages, a keep-newest window), all in this process on the same data and
 * judged by one counter (o200k, OpenAI framing) on the OpenAI Chat request each would send.
 *
 * Quick by default (every trajectory at the 25 % budget); `--full` runs 50 %, 25 % and 10 %. Prints the table
 * and the ratios to the best valid peer, writes benchmarks/results/quality.json and quality.svg. While working on
 * a strategy, `--shares 0.1,0.25` and `--systems engine-idle,langchain` run a part (nothing is written then).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseTranscript } from "../src/log/import-jsonl.js";
import { repoRoot } from "../test/support/repo-root.js";
import { listTrajectories } from "../test/support/trajectories.js";
import { benchCounter } from "./support/bench-counter.js";
import { qualityChart } from "./support/quality-chart.js";
import { plantFacts } from "./support/quality-facts.js";
import { inputAt, MIN_BUDGET, seedOf } from "./support/quality-input.js";
import { ChatCounter } from "./support/quality-judge.js";
import { aiSdkSystem, keepNewestSystem, langChainSystem, mastraSystem } from "./support/quality-peers.js";
import { replay } from "./support/quality-replay.js";
import { type QualityRow, qualityTable, ratios, ratioTable, rowOf } from "./support/quality-report.js";
import { engineSystem, pipelineSystem, type QualitySystem } from "./support/quality-systems.js";
import { addTallies, emptyTally, type RunTally } from "./support/quality-tally.js";
import { versionOf } from "./support/quality-versions.js";

const FULL = process.argv.includes("--full");

/** The value after `flag` on the command line, if any. */
function flagValue(flag: string): string | undefined {
  const at = process.argv.indexOf(flag);
  return at < 0 ? undefined : process.argv[at + 1];
}

/** `--shares 0.1,0.25` picks budgets (shares of the uncompacted final request) instead of the mode's. */
const SHARES = flagValue("--shares")?.split(",").map(Number) ?? (FULL ? [0.5, 0.25, 0.1] : [0.25]);
if (SHARES.some((s) => !(s > 0 && s <= 1)))
  throw new Error("--shares takes shares in (0, 1], comma-separated");

const ALL_SYSTEMS: ReadonlyArray<QualitySystem> = [
  engineSystem(true),
  engineSystem(false),
  pipelineSystem(),
  langChainSystem(),
  mastraSystem(1),
  mastraSystem(0.95),
  aiSdkSystem(),
  keepNewestSystem(),
];

/** `--systems engine-idle,langchain` runs only those (keys as in quality.json); the default runs all. */
const picked = flagValue("--systems")?.split(",");
const SYSTEMS = picked === undefined ? ALL_SYSTEMS : ALL_SYSTEMS.filter((s) => picked.includes(s.key));
if (SYSTEMS.length === 0) {
  throw new Error(`--systems names none of ${ALL_SYSTEMS.map((s) => s.key).join(", ")}`);
}

interface RunRecord {
  readonly trajectory: string;
  readonly share: number;
  readonly budget: number;
  readonly fullTokens: number;
  readonly system: string;
  readonly tally: RunTally;
}

async function runAll(): Promise<RunRecord[]> {
  const counter = benchCounter();
  const records: RunRecord[] = [];
  for (const file of listTrajectories()) {
    const run = plantFacts(parseTranscript(file.text), seedOf(file.name));
    const chat = new ChatCounter(counter);
    for (const share of SHARES) {
      const { input, fullTokens } = inputAt(run, share, counter, chat);
      for (const system of SYSTEMS) {
        const tally = await replay(system, input);
        records.push({
          trajectory: file.name,
          share,
          budget: input.budget,
          fullTokens,
          system: system.key,
          tally,
        });
      }
    }
    process.stderr.write(".");
  }
  process.stderr.write("\n");
  return records;
}

function aggregate(records: ReadonlyArray<RunRecord>): QualityRow[] {
  const rows: QualityRow[] = [];
  for (const share of SHARES) {
    for (const system of SYSTEMS) {
      const tally = records
        .filter((r) => r.share === share && r.system === system.key)
        .reduce((sum, r) => addTallies(sum, r.tally), emptyTally());
      rows.push(rowOf(system, share, tally));
    }
  }
  return rows;
}

function perRun(records: ReadonlyArray<RunRecord>) {
  return records.map((r) => {
    const system = SYSTEMS.find((s) => s.key === r.system)!;
    const { notes, ...row } = rowOf(system, r.share, r.tally);
    return { trajectory: r.trajectory, budget: r.budget, fullTokens: r.fullTokens, ...row, notes };
  });
}

async function main(): Promise<void> {
  if (listTrajectories().length === 0) {
    console.log("no trajectories found (../shared/data/trajectories); nothing to measure");
    return;
  }
  const started = performance.now();
  const records = await runAll();
  const seconds = (performance.now() - started) / 1000;
  const rows = aggregate(records);
  const ratioRows = ratios(rows);
  console.log(
    `retention, ${FULL ? "full" : "quick"} mode, ${listTrajectories().length} trajectories, ${seconds.toFixed(0)} s\n`,
  );
  console.log(qualityTable(rows));
  console.log("\nratio of context-ledger to the best peer with 0 requests over budget and 0 invalid:\n");
  console.log(ratioTable(ratioRows));
  for (const row of rows)
    for (const n of row.notes.slice(0, 2)) console.log(`  ${row.label} @ ${row.share * 100} %: ${n}`);
  const out = {
    mode: FULL ? "full" : "quick",
    node: process.version,
    seconds,
    minBudget: MIN_BUDGET,
    shares: SHARES,
    versions: versionOf(),
    systems: SYSTEMS.map(({ key, label, family, setting }) => ({ key, label, family, setting })),
    rows,
    ratios: ratioRows,
    runs: perRun(records),
  };
  // A partial run (some budgets or systems) is for development: it does not replace the recorded results.
  if (flagValue("--shares") !== undefined || picked !== undefined) return;
  const dir = join(repoRoot, "benchmarks/results");
  writeFileSync(join(dir, "quality.json"), `${JSON.stringify(out, null, 2)}\n`);
  writeFileSync(join(dir, "quality.svg"), qualityChart(rows, `Retention (bench:quality, ${out.mode})`));
}

await main();
