/**
 * Reachability: of the tool results compaction takes out of a request, how many the model could still have back.
 * Every shared trajectory (planted as for bench:quality, at the same budgets) is replayed call by call through
 * `createContextEngine` with memory stores and a pipeline with externalization on; at each call, every tool result
 * the committed plan clears, summarizes, externalizes or drops is judged (support/reachability-judge.ts): reachable
 * when the request carries a pointer to it and `engine.recall` brings it back. The request's tokens are also
 * rendered under cl-render/4 (no way back named) to measure what the cl-render/5 texts cost.
 *
 * Quick by default (25 % and 10 %, every trajectory, every call); `--full` adds 50 %. `--shares 0.1` runs a part
 * (nothing is written then). Writes benchmarks/results/reachability.json.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_PIPELINE_CONFIG } from "../src/compaction/default-pipeline.js";
import type { PipelineConfig } from "../src/compaction/pipeline-config.js";
import { createContextEngine } from "../src/context-engine.js";
import { parseTranscript } from "../src/log/import-jsonl.js";
import type { MessageInput } from "../src/log/message.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import type { MessageCounter } from "../src/tokens/tokenizer.js";
import { repoRoot } from "../test/support/repo-root.js";
import { listTrajectories } from "../test/support/trajectories.js";
import { benchCounter } from "./support/bench-counter.js";
import { plantFacts } from "./support/quality-facts.js";
import { inputAt, seedOf } from "./support/quality-input.js";
import { ChatCounter } from "./support/quality-judge.js";
import { callPoints } from "./support/quality-replay.js";
import { benchBudget } from "./support/quality-systems.js";
import {
  addReachTallies,
  emptyReachTally,
  FATES,
  judgeRequest,
  type Miss,
  type ReachTally,
  type Route,
  WordRarity,
} from "./support/reachability-judge.js";

const FULL = process.argv.includes("--full");
const sharesFlag = process.argv.indexOf("--shares");
const SHARES =
  sharesFlag >= 0
    ? (process.argv[sharesFlag + 1] ?? "").split(",").map(Number)
    : FULL
      ? [0.5, 0.25, 0.1]
      : [0.25, 0.1];
if (SHARES.some((s) => !(s > 0 && s <= 1)))
  throw new Error("--shares takes shares in (0, 1], comma-separated");

/**
 * The default pipeline with externalization on, as a user with an artifact store would set it: results of more
 * than 4,000 characters (about 1,000 tokens) that retention has not stubbed go to the store, before oversized
 * results are cut and before anything is summarized.
 */
export const REACH_PIPELINE: PipelineConfig = {
  ...DEFAULT_PIPELINE_CONFIG,
  strategies: [
    { use: "toolResultRetention" },
    { use: "externalize", minChars: 4_000 },
    { use: "oversizedExcerpt", share: 0.5 },
    { use: "summarize", minKeepGroups: 1 },
  ],
};

/** What the cl-render/5 texts cost: request tokens against the same log and plan rendered as cl-render/4. */
interface TextCost {
  requests: number;
  tokens: number;
  tokensV4: number;
  /** Cleared tool results and summaries shown (each carries a longer text under cl-render/5). */
  placeholders: number;
}

interface RunRecord {
  readonly trajectory: string;
  readonly share: number;
  readonly budget: number;
  readonly calls: number;
  readonly failedCalls: number;
  readonly tally: ReachTally;
  readonly cost: TextCost;
  readonly misses: ReadonlyArray<Miss>;
  /** Unreachable results by kind of miss. */
  readonly missKinds: Readonly<Record<string, number>>;
  /** Reachable results by the way they came back. */
  readonly routes: Readonly<Record<string, number>>;
}

function countPlaceholders(prompt: { readonly messages: ReadonlyArray<{ provenance: { kind: string } }> }) {
  return prompt.messages.filter(
    (m) =>
      m.provenance.kind === "cleared" ||
      m.provenance.kind === "summary" ||
      m.provenance.kind === "drop_marker",
  ).length;
}

async function replayRun(
  name: string,
  messages: ReadonlyArray<MessageInput>,
  budget: number,
  counter: MessageCounter,
) {
  const stores = createMemoryStores();
  const engine = createContextEngine({
    stores,
    counter,
    budget: benchBudget(budget),
    pipeline: REACH_PIPELINE,
  });
  const thread = "reach";
  const byId = new Map<string, MessageInput>();
  const rarity = new WordRarity();
  let mirror = ThreadLog.empty(thread);
  const tally = emptyReachTally();
  const cost: TextCost = { requests: 0, tokens: 0, tokensV4: 0, placeholders: 0 };
  const misses: Miss[] = [];
  const kinds = new Map<string, number>();
  const routes = new Map<Route, number>();
  let from = 0;
  let call = 0;
  let failedCalls = 0;
  for (const point of callPoints(messages)) {
    call++;
    const fresh = messages.slice(from, point);
    from = point;
    if (fresh.length > 0) {
      const { ids } = await engine.append(thread, fresh);
      const named = fresh.map((m, i) => ({ ...m, id: ids[i]! }));
      for (const m of named) {
        byId.set(m.id, m);
        rarity.add(m);
      }
      mirror = mirror.append(named);
    }
    let turn: Awaited<ReturnType<typeof engine.prepareTurn<"openai">>>;
    try {
      turn = await engine.prepareTurn(thread, { format: "openai" });
    } catch (error) {
      failedCalls++;
      if (misses.length < 5)
        misses.push({ call, fate: "dropped", callId: "-", why: `prepareTurn failed: ${error}` });
      continue;
    }
    await engine.idle();
    const planVersion = turn.stats.planVersion;
    const plan = await stores.plans.get(thread, planVersion);
    const v4 = renderPrompt(mirror, plan, { counter, formatVersion: "cl-render/4", validatePlan: false });
    const v5 = renderPrompt(mirror, plan, { counter, validatePlan: false });
    if (v5.hash !== turn.prompt.hash)
      throw new Error(`${name} call ${call}: the mirror log renders another request`);
    cost.requests++;
    cost.tokens += v5.tokenCount;
    cost.tokensV4 += v4.tokenCount;
    cost.placeholders += countPlaceholders(v5);
    if (planVersion === 0) continue;
    const explanation = await engine.explain(thread, { planVersion });
    await judgeRequest(
      {
        engine,
        threadId: thread,
        call,
        prompt: turn.prompt,
        explanation,
        plan,
        messages: byId,
        log: mirror,
        rarity,
      },
      tally,
      misses,
      8,
      kinds,
      routes,
    );
  }
  await engine.idle();
  return {
    calls: call,
    failedCalls,
    tally,
    cost,
    misses,
    missKinds: Object.fromEntries(kinds),
    routes: Object.fromEntries(routes),
  };
}

async function runAll(): Promise<RunRecord[]> {
  const counter = benchCounter();
  const records: RunRecord[] = [];
  for (const file of listTrajectories()) {
    const run = plantFacts(parseTranscript(file.text), seedOf(file.name));
    const chat = new ChatCounter(counter);
    for (const share of SHARES) {
      const { input } = inputAt(run, share, counter, chat);
      const out = await replayRun(file.name, run.messages, input.budget, counter);
      records.push({ trajectory: file.name, share, budget: input.budget, ...out });
    }
    process.stderr.write(".");
  }
  process.stderr.write("\n");
  return records;
}

const pct = (n: number, d: number) => (d === 0 ? "-" : `${((100 * n) / d).toFixed(1)} %`);

function rowOf(share: number, records: ReadonlyArray<RunRecord>) {
  const mine = records.filter((r) => r.share === share);
  const tally = mine.reduce((sum, r) => addReachTallies(sum, r.tally), emptyReachTally());
  const compacted = FATES.reduce((n, f) => n + tally[f].compacted, 0);
  const reachable = FATES.reduce((n, f) => n + tally[f].reachable, 0);
  const cost = mine.reduce(
    (sum, r) => ({
      requests: sum.requests + r.cost.requests,
      tokens: sum.tokens + r.cost.tokens,
      tokensV4: sum.tokensV4 + r.cost.tokensV4,
      placeholders: sum.placeholders + r.cost.placeholders,
    }),
    { requests: 0, tokens: 0, tokensV4: 0, placeholders: 0 },
  );
  const extra = cost.tokens - cost.tokensV4;
  const missKinds: Record<string, number> = {};
  const routes: Record<string, number> = {};
  for (const r of mine) {
    for (const [k, n] of Object.entries(r.missKinds)) missKinds[k] = (missKinds[k] ?? 0) + n;
    for (const [k, n] of Object.entries(r.routes)) routes[k] = (routes[k] ?? 0) + n;
  }
  return {
    share,
    calls: mine.reduce((n, r) => n + r.calls, 0),
    failedCalls: mine.reduce((n, r) => n + r.failedCalls, 0),
    compacted,
    reachable,
    reachableShare: compacted === 0 ? 1 : reachable / compacted,
    byFate: tally,
    missKinds,
    routes,
    textCost: {
      ...cost,
      extraTokens: extra,
      extraPerRequest: cost.requests === 0 ? 0 : extra / cost.requests,
      extraPerPlaceholder: cost.placeholders === 0 ? 0 : extra / cost.placeholders,
      extraShareOfRequest: cost.tokensV4 === 0 ? 0 : extra / cost.tokensV4,
    },
  };
}

function table(rows: ReadonlyArray<ReturnType<typeof rowOf>>): string {
  const head =
    "| budget | compacted | reachable | cleared | summarized | externalized | dropped | cl-render/5 text cost |";
  const lines = [head, "|---|---|---|---|---|---|---|---|"];
  for (const r of rows) {
    const fate = (f: (typeof FATES)[number]) => {
      const t = r.byFate[f];
      return t.compacted === 0 ? "-" : `${t.reachable} / ${t.compacted} (${pct(t.reachable, t.compacted)})`;
    };
    const c = r.textCost;
    const cost = `+${c.extraPerRequest.toFixed(1)} tokens/request (${pct(c.extraTokens, c.tokensV4)}), +${c.extraPerPlaceholder.toFixed(1)}/placeholder`;
    lines.push(
      `| ${r.share * 100} % | ${r.compacted} | ${r.reachable} (${pct(r.reachable, r.compacted)}) | ${fate("cleared")} | ${fate("summarized")} | ${fate("externalized")} | ${fate("dropped")} | ${cost} |`,
    );
  }
  return lines.join("\n");
}

async function main(): Promise<void> {
  if (listTrajectories().length === 0) {
    console.log("no trajectories found (../shared/data/trajectories); nothing to measure");
    return;
  }
  const started = performance.now();
  const records = await runAll();
  const seconds = (performance.now() - started) / 1000;
  const rows = SHARES.map((share) => rowOf(share, records));
  console.log(
    `reachability, ${FULL ? "full" : "quick"} mode, ${listTrajectories().length} trajectories, ${seconds.toFixed(0)} s\n`,
  );
  console.log(table(rows));
  for (const r of rows) {
    const ways = Object.entries(r.routes).map(([route, n]) => `${route} ${n}`);
    console.log(`  ${r.share * 100} %: reachable by ${ways.join(", ")}`);
    for (const [kind, n] of Object.entries(r.missKinds)) console.log(`  ${r.share * 100} %: ${n} × ${kind}`);
  }
  for (const r of records) {
    for (const m of r.misses.slice(0, 2)) {
      console.log(`  ${r.trajectory} @ ${r.share * 100} % call ${m.call} (${m.fate} ${m.callId}): ${m.why}`);
    }
  }
  if (sharesFlag >= 0) return;
  const out = {
    mode: FULL ? "full" : "quick",
    node: process.version,
    seconds,
    shares: SHARES,
    pipeline: REACH_PIPELINE,
    rows,
    runs: records.map(({ misses, ...r }) => ({ ...r, misses })),
  };
  writeFileSync(join(repoRoot, "benchmarks/results/reachability.json"), `${JSON.stringify(out, null, 2)}\n`);
}

await main();
