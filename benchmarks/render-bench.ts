/**
 * Rendering under a 100,000-token budget for threads of 1k, 10k and 100k messages, cold (counts known, nothing
 * else cached) and warm (previous render cached, +10 messages), against the floor: a plain loop over cached
 * counts that cuts the tail, counts the new messages and JSON.stringifies the result. Every figure is reported as
 * a ratio to the floor measured in the same run. `--full` runs more rounds.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Message, MessageInput } from "../src/log/message.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { type CompactionPlan, emptyPlan } from "../src/plan/compaction-plan.js";
import { toOpenAIChat } from "../src/render/openai-chat-adapter.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import type { RenderedPrompt } from "../src/render/rendered-prompt.js";
import { dropOldestToFit } from "../src/strategies/drop-oldest-to-fit.js";
import type { MessageCounter } from "../src/tokens/tokenizer.js";
import { repoRoot } from "../test/support/repo-root.js";
import { benchCounter } from "./support/bench-counter.js";
import { generatedMessages, trajectoryMessages } from "./support/datasets.js";
import { floorStep } from "./support/floor.js";
import { ms, type Sample, sinkValue, summarize, type Timing, timeBoth } from "./support/stats.js";

const FULL = process.argv.includes("--full");
const BUDGET = 100_000;
const ROUNDS = FULL ? 15 : 7;
const SIZES = [1_000, 10_000, 100_000];

function chatShape(m: Message): object {
  return { role: m.role, parts: m.parts };
}

interface Row {
  dataset: string;
  messages: number;
  floor: Timing;
  cold: Timing;
  warm: Timing;
  coldRatio: number;
  warmRatio: number;
  /** The same three in CPU time. */
  cpu: { floor: Timing; cold: Timing; warm: Timing; coldRatio: number; warmRatio: number };
  renderedTokens: number;
  renderedMessages: number;
}

function runSize(dataset: string, all: MessageInput[], size: number, makeCounter: () => MessageCounter): Row {
  const counter = makeCounter();
  let log = ThreadLog.from(`bench-${dataset}-${size}`, all.slice(0, size));
  const counts = log.messages.map((m) => counter.countMessage(m, m.hash)); // counts known
  const chat = log.messages.map(chatShape);
  let plan: CompactionPlan = dropOldestToFit(log, emptyPlan(log.threadId), { counter, budget: BUDGET });
  let previous: RenderedPrompt = renderPrompt(log, plan, { counter });
  const floor: Sample[] = [];
  const cold: Sample[] = [];
  const warm: Sample[] = [];
  for (let round = 0; round < ROUNDS + 2; round++) {
    const fresh = all.slice(size + round * 10, size + round * 10 + 10);
    const next = log.append(fresh);
    const added = next.messages.slice(log.length);
    for (const m of added) chat.push(chatShape(m));
    const tFloor = timeBoth(() => floorStep(chat, counts, added, counter, BUDGET));
    const tWarm = timeBoth(() => {
      plan = dropOldestToFit(next, plan, { counter, budget: BUDGET });
      previous = renderPrompt(next, plan, { counter, previous });
      // The hash is computed when first read; a turn reads it (the call record names the request by it).
      return JSON.stringify(toOpenAIChat(previous)) + previous.hash;
    });
    // Cold: a counter object with the same count cache but no render memo, and a plan built from scratch.
    const coldCounter = Object.create(counter) as MessageCounter;
    const tCold = timeBoth(() => {
      const p = dropOldestToFit(next, emptyPlan(next.threadId), { counter: coldCounter, budget: BUDGET });
      const prompt = renderPrompt(next, p, { counter: coldCounter });
      return JSON.stringify(toOpenAIChat(prompt)) + prompt.hash;
    });
    log = next;
    if (round < 2) continue; // warm-up
    floor.push(tFloor);
    warm.push(tWarm);
    cold.push(tCold);
  }
  if (previous.tokenCount > BUDGET) throw new Error(`budget violated: ${previous.tokenCount} > ${BUDGET}`);
  const f = summarize(floor.map((x) => x.wall));
  const c = summarize(cold.map((x) => x.wall));
  const w = summarize(warm.map((x) => x.wall));
  const fc = summarize(floor.map((x) => x.cpu));
  const cc = summarize(cold.map((x) => x.cpu));
  const wc = summarize(warm.map((x) => x.cpu));
  return {
    dataset,
    messages: size,
    floor: f,
    cold: c,
    warm: w,
    coldRatio: c.median / f.median,
    warmRatio: w.median / f.median,
    cpu: {
      floor: fc,
      cold: cc,
      warm: wc,
      coldRatio: cc.median / fc.median,
      warmRatio: wc.median / fc.median,
    },
    renderedTokens: previous.tokenCount,
    renderedMessages: previous.messages.length,
  };
}

function main(): void {
  const rows: Row[] = [];
  const need = SIZES[SIZES.length - 1]! + (ROUNDS + 2) * 10;
  const datasets: [string, MessageInput[] | undefined][] = [
    ["generated", generatedMessages(need)],
    ["trajectories", trajectoryMessages(need)],
  ];
  for (const [name, all] of datasets) {
    if (all === undefined) {
      console.log(`(${name}: shared trajectories not found, skipped)`);
      continue;
    }
    for (const size of SIZES) {
      const row = runSize(name, all, size, benchCounter);
      rows.push(row);
      console.error(
        `${name} ${size}: floor ${ms(row.floor.median)} ms, cold ×${row.coldRatio.toFixed(1)}, warm ×${row.warmRatio.toFixed(1)} (CPU: cold ×${row.cpu.coldRatio.toFixed(1)}, warm ×${row.cpu.warmRatio.toFixed(1)})`,
      );
    }
  }
  const table = [
    "| dataset | messages | floor ms (min–max) | cold ms | warm ms | cold / floor | warm / floor | CPU: cold / floor | CPU: warm / floor | rendered msgs / tokens |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...rows.map(
      (r) =>
        `| ${r.dataset} | ${r.messages.toLocaleString("en")} | ${ms(r.floor.median)} (${ms(r.floor.min)}–${ms(r.floor.max)}) | ${ms(r.cold.median)} | ${ms(r.warm.median)} | ${r.coldRatio.toFixed(1)}× | ${r.warmRatio.toFixed(1)}× | ${r.cpu.coldRatio.toFixed(1)}× | ${r.cpu.warmRatio.toFixed(1)}× | ${r.renderedMessages} / ${r.renderedTokens} |`,
    ),
  ].join("\n");
  console.log(table);
  writeFileSync(
    join(repoRoot, "benchmarks/results/render.json"),
    `${JSON.stringify({ budget: BUDGET, rounds: ROUNDS, rows, node: process.version }, null, 2)}\n`,
  );
  console.error(`(sink ${sinkValue()})`);
}

main();
