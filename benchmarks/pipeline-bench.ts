/**
 * The default compaction pipeline on every shared trajectory, simulated turn by turn (one request per model
 * call) at 50 %, 25 % and 10 % of the trajectory's full rendered size. Reports per run: requests, how many
 * changed the plan, failures (the fallback's protected content alone over budget), tokens saved, and how much
 * of each request's leading tokens is unchanged from the previous request (prompt-cache stability).
 *
 * Writes benchmarks/results/pipeline.json and prints a markdown table (pasted into benchmarks/README.md).
 * `--protect lastUserMessage` runs the variant whose fallback may drop older calls of the current turn.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createDefaultPipeline } from "../src/compaction/default-pipeline.js";
import { parseTranscript } from "../src/log/import-jsonl.js";
import { createTokenizer } from "../src/tokens/create-tokenizer.js";
import { createMessageCounter } from "../src/tokens/message-counter.js";
import { repoRoot } from "../test/support/repo-root.js";
import { listTrajectories } from "../test/support/trajectories.js";
import { type SimulationResult, simulateTurns } from "./support/simulate-turns.js";

const SHARES = [0.5, 0.25, 0.1] as const;
const protectArg = process.argv.indexOf("--protect");
const protect =
  protectArg >= 0 ? (process.argv[protectArg + 1] as "lastTurn" | "lastUserMessage") : "lastTurn";

interface Row {
  readonly trajectory: string;
  readonly share: number;
  readonly result: SimulationResult;
}

const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;

function line(row: Row): string {
  const r = row.result;
  const sent = r.requests - r.failures;
  const stable = r.pairs === 0 ? "–" : pct(r.stableOfCurrent);
  const stablePrev = r.pairs === 0 ? "–" : pct(r.stableOfPrevious);
  return `| ${row.trajectory} | ${row.share * 100} % | ${r.budget} | ${r.requests} | ${sent} | ${r.failures} | ${r.compactions} | ${pct(r.savedShare)} | ${stablePrev} | ${stable} | ${(r.durationMs / Math.max(1, r.requests)).toFixed(1)} |`;
}

async function main(): Promise<void> {
  const files = listTrajectories();
  if (files.length === 0) {
    console.log("no trajectories found (../shared/data/trajectories); nothing to measure");
    return;
  }
  const counter = createMessageCounter(createTokenizer({ model: "gpt-4o" }), "openai");
  const rows: Row[] = [];
  for (const file of files) {
    const messages = parseTranscript(file.text);
    for (const share of SHARES) {
      const result = await simulateTurns({
        messages,
        counter,
        pipeline: createDefaultPipeline({ protect }),
        share,
      });
      rows.push({ trajectory: file.name, share, result });
    }
  }
  console.log(`default pipeline, fallback protects ${protect}; gpt-4o tokenizer, OpenAI framing\n`);
  console.log(
    "| trajectory | budget | tokens | requests | sent | failed | compactions | saved | stable, of previous | stable, of request | ms/request |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|---|");
  for (const row of rows) console.log(line(row));
  console.log(
    "\n| budget | requests | sent | failed (of which nothing at all could fit) | over budget or invalid | stable, of previous request | stable, of request | ceiling, of request | saved |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const share of SHARES) {
    const of = rows.filter((r) => r.share === share).map((r) => r.result);
    const withPairs = of.filter((r) => r.pairs > 0);
    const mean = (f: (r: SimulationResult) => number, list = withPairs) =>
      list.reduce((a, r) => a + f(r), 0) / Math.max(1, list.length);
    const sum = (f: (r: SimulationResult) => number) => of.reduce((a, r) => a + f(r), 0);
    console.log(
      `| ${share * 100} % | ${sum((r) => r.requests)} | ${sum((r) => r.requests - r.failures)} | ${sum((r) => r.failures)} (${sum((r) => r.unavoidable)}) | ${sum((r) => r.violations.length)} | ${pct(mean((r) => r.stableOfPrevious))} | ${pct(mean((r) => r.stableOfCurrent))} | ${pct(mean((r) => r.stableCeiling))} | ${pct(
        mean(
          (r) => r.savedShare,
          of.filter((r) => r.requests > r.failures),
        ),
      )} |`,
    );
  }
  const out = rows.map((r) => ({ trajectory: r.trajectory, share: r.share, ...r.result }));
  const name = protect === "lastTurn" ? "pipeline.json" : `pipeline-${protect}.json`;
  writeFileSync(join(repoRoot, "benchmarks/results", name), `${JSON.stringify(out, null, 2)}\n`);
}

await main();
