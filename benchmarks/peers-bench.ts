/**
 * Peers side by side with context-ledger: the same seeded threads (1k, 10k and 100k messages), the same
 * 100,000-token budget and the same tokenizer (`createTokenizer({ model: "gpt-4o" })` with OpenAI's message
 * framing) for everyone, measured in one process run and reported as ratios to the floor measured in that run.
 * Cold = the first call on a thread with no counts cached; warm = the same thread +10 messages, with whatever
 * the peer (or a sensible user-side memo) kept from the previous call. A call projected to take longer than a
 * few seconds runs once in a child process with a timeout instead of hanging the run. Every output is checked:
 * fits the budget by our counter, call/result pairs split, OpenAI Chat rules; a sweep over many cut positions
 * (untimed) gives those checks a real sample. `--full` runs more rounds and sweep positions, allows longer calls
 * and also times the shared real trajectories.
 */
import { type ChildProcess, fork } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type BaseMessage, trimMessages } from "@langchain/core/messages";
import { type ModelMessage, pruneMessages } from "ai";
import type { MessageInput } from "../src/log/message.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { type CompactionPlan, emptyPlan } from "../src/plan/compaction-plan.js";
import { type OpenAIChatRequest, toOpenAIChat } from "../src/render/openai-chat-adapter.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import type { RenderedPrompt } from "../src/render/rendered-prompt.js";
import { dropOldestToFit } from "../src/strategies/drop-oldest-to-fit.js";
import { createTokenizer } from "../src/tokens/create-tokenizer.js";
import { createMessageCounter } from "../src/tokens/message-counter.js";
import type { MessageCounter } from "../src/tokens/tokenizer.js";
import { repoRoot } from "../test/support/repo-root.js";
import { generatedMessages, trajectoryMessages } from "./support/datasets.js";
import { floorStep } from "./support/floor.js";
import {
  completePairs,
  langChainToOpenAIChat,
  memoTokenCounter,
  modelMessagesToOpenAIChat,
  OutputChecks,
  type OutputSummary,
  toLangChain,
  toModelMessages,
} from "./support/peer-adapters.js";
import { consume, ms, sinkValue, summarize, type Timing, time } from "./support/stats.js";

const FULL = process.argv.includes("--full");
const BUDGET = 100_000;
const SIZES = [1_000, 10_000, 100_000];
/** Measured rounds for fast calls, after `WARMUP` unmeasured ones; slow calls get fewer (`CELL_BUDGET_MS`). */
const ROUNDS = FULL ? 15 : 5;
const WARMUP = 2;
/** The floor is cheap and noisy: more rounds, more warm-up. */
const FLOOR_ROUNDS = FULL ? 60 : 30;
const FLOOR_WARMUP = 10;
/** Wall time one (peer, size) cell may spend in-process. */
const CELL_BUDGET_MS = FULL ? 120_000 : 12_000;
/** A call projected to take longer than this runs once, in a child process, with `CHILD_TIMEOUT_MS`. */
const IN_PROCESS_LIMIT_MS = FULL ? 20_000 : 5_000;
const CHILD_TIMEOUT_MS = FULL ? 120_000 : 30_000;
/** Messages appended per round (one more when the tenth is a call, so no request ends on a pending call). */
const STEP = 10;
const THREAD_LENGTH =
  SIZES[SIZES.length - 1]! + (Math.max(ROUNDS + WARMUP, FLOOR_ROUNDS + FLOOR_WARMUP) + 2) * 2 * STEP;
/** The pair-safety sweep: this many cut positions, on threads starting at `SWEEP_START` messages. */
const SWEEP_POSITIONS = FULL ? 1_000 : 200;
const SWEEP_START = 1_000;
/** Bodies with more messages than this are token-counted only on the last round (counting them is slow). */
const COUNT_ALL_UP_TO = 2_000;

const tokenizer = createTokenizer({ model: "gpt-4o" });
/** Our counter: the shared tokenizer, OpenAI framing, a count cache big enough for the largest thread. */
function makeCounter(): MessageCounter {
  return createMessageCounter(tokenizer, "openai", { cacheSize: 250_000 });
}

/** Whether the first `end` messages end with calls still waiting for their results. */
function endsPending(all: ReadonlyArray<MessageInput>, end: number): boolean {
  const answered = new Set<string>();
  for (let i = end - 1; i >= 0; i--) {
    const m = all[i]!;
    if (m.role !== "tool") return m.parts.some((p) => p.type === "tool_call" && !answered.has(p.callId));
    for (const p of m.parts) if (p.type === "tool_result") answered.add(p.callId);
  }
  return false;
}

/**
 * Where a thread of about `end` messages may end: never on calls still waiting for results, because an agent
 * asks the model again only once the results are in, and a pending call would make every peer's request invalid.
 */
function boundary(all: ReadonlyArray<MessageInput>, end: number): number {
  let e = end;
  while (e < all.length && endsPending(all, e)) e++;
  return e;
}

function versionOf(pkg: string): string {
  const path = join(repoRoot, pkg === "context-ledger" ? "" : `node_modules/${pkg}`, "package.json");
  return (JSON.parse(readFileSync(path, "utf8")) as { version: string }).version;
}

/** One peer's state for one thread; `cold` and `warm` return the request body (stringified by the timer). */
interface Session {
  /** Appends new messages, converted to the peer's shape (not timed). */
  append(fresh: ReadonlyArray<MessageInput>): void;
  cold(): OpenAIChatRequest | Promise<OpenAIChatRequest>;
  warm(): OpenAIChatRequest | Promise<OpenAIChatRequest>;
}

/** What a runner may need for a thread, built lazily (a child process running LangChain needs no log). */
interface ThreadContext {
  readonly thread: ReadonlyArray<MessageInput>;
  readonly log: ThreadLog;
  /** A counter that already holds the count of every message of `log` (context-ledger's "counts known"). */
  readonly knownCounter: MessageCounter;
}

interface Runner {
  readonly key: string;
  readonly peer: string;
  readonly version: string;
  readonly mode: string;
  /** What cold and warm mean for this peer: what is counted, what is cached. */
  readonly caches: string;
  start(context: ThreadContext): Session;
}

function ledgerRunner(known: boolean): Runner {
  return {
    key: known ? "ledger-known" : "ledger",
    peer: "context-ledger",
    version: versionOf("context-ledger"),
    mode: known ? "dropOldestToFit + render, cold with counts known" : "dropOldestToFit + renderPrompt",
    caches: known
      ? "as render-bench: cold = count cache full, no plan, no render memo; warm = plan + render memo"
      : "cold = fresh counter (counts what it keeps), no plan, no render memo; warm = counts + plan + render memo",
    start(context) {
      const counter = known ? context.knownCounter : makeCounter();
      let log = context.log;
      let plan: CompactionPlan = dropOldestToFit(log, emptyPlan(log.threadId), { counter, budget: BUDGET });
      let previous: RenderedPrompt = renderPrompt(log, plan, { counter });
      return {
        append(fresh) {
          log = log.append(fresh);
        },
        warm() {
          plan = dropOldestToFit(log, plan, { counter, budget: BUDGET });
          previous = renderPrompt(log, plan, { counter, previous });
          return toOpenAIChat(previous);
        },
        cold() {
          const c = known ? (Object.create(counter) as MessageCounter) : makeCounter();
          const p = dropOldestToFit(log, emptyPlan(log.threadId), { counter: c, budget: BUDGET });
          return toOpenAIChat(renderPrompt(log, p, { counter: c }));
        },
      };
    },
  };
}

/**
 * LangChain's `trimMessages` with our tokenizer as its `tokenCounter`. LangChain caches nothing and copies the
 * messages on every call; the counter memoises per message id (ids survive the copies), which is the best a
 * user can do: cold = an empty memo, warm = the memo of the previous call.
 */
function langChainRunner(key: string, mode: string, startOnHuman: boolean): Runner {
  return {
    key,
    peer: "LangChain.js trimMessages",
    version: versionOf("@langchain/core"),
    mode,
    caches: "nothing; user-side memo of counts by message id (cold: empty, warm: previous call's)",
    start(context) {
      const counter = makeCounter();
      const messages: BaseMessage[] = toLangChain(context.thread, 0);
      const warmMemo = new Map<string, number>();
      const call = async (memo: Map<string, number>): Promise<OpenAIChatRequest> => {
        const tokenCounter = memoTokenCounter(counter, memo);
        const kept = await trimMessages(messages, {
          maxTokens: BUDGET,
          tokenCounter,
          strategy: "last",
          includeSystem: true,
          ...(startOnHuman ? { startOn: "human" as const } : {}),
        });
        return langChainToOpenAIChat(kept);
      };
      return {
        append(fresh) {
          messages.push(...toLangChain(fresh, messages.length));
        },
        cold: () => call(new Map()),
        warm: () => call(warmMemo),
      };
    },
  };
}

/** The AI SDK's `pruneMessages`: drops old tool calls/results and reasoning; it has no token budget. */
function aiSdkRunner(): Runner {
  return {
    key: "ai-prune",
    peer: "AI SDK pruneMessages",
    version: versionOf("ai"),
    mode: "toolCalls before-last-40-messages, reasoning before-last-message (no budget)",
    caches: "nothing (stateless; cold and warm are the same work)",
    start(context) {
      const names = new Map<string, string>();
      const messages: ModelMessage[] = toModelMessages(context.thread, names);
      const call = (): OpenAIChatRequest =>
        modelMessagesToOpenAIChat(
          pruneMessages({
            messages,
            reasoning: "before-last-message",
            toolCalls: "before-last-40-messages",
            emptyMessages: "remove",
          }),
        );
      return {
        append(fresh) {
          messages.push(...toModelMessages(fresh, names));
        },
        cold: call,
        warm: call,
      };
    },
  };
}

const RUNNERS: ReadonlyArray<Runner> = [
  ledgerRunner(false),
  ledgerRunner(true),
  langChainRunner("langchain-last", "strategy last, includeSystem", false),
  langChainRunner("langchain-human", "strategy last, includeSystem, startOn human", true),
  aiSdkRunner(),
];

/** Peers asked for but not measured, and why. */
const SKIPPED = [
  {
    peer: "Mastra TokenLimiterProcessor",
    reason:
      "every @mastra/core release after 0.24.x (1.0.0-beta.* and 1.x) requires Node >= 22.13; the newest " +
      "Node 20 release (0.24.9) has a TokenLimiterProcessor that only limits the model's output stream " +
      "(processOutputStream / processOutputResult), so there is nothing comparable to run",
  },
];

function contextFor(thread: ReadonlyArray<MessageInput>, size: number): ThreadContext {
  let log: ThreadLog | undefined;
  let known: MessageCounter | undefined;
  const context: ThreadContext = {
    thread,
    get log() {
      log ??= ThreadLog.from(`peers-${size}`, thread);
      return log;
    },
    get knownCounter() {
      if (known === undefined) {
        known = makeCounter();
        for (const m of context.log.messages) known.countMessage(m, m.hash);
      }
      return known;
    },
  };
  return context;
}

/** Times one call including `JSON.stringify` of its body. */
async function timed(
  fn: () => OpenAIChatRequest | Promise<OpenAIChatRequest>,
): Promise<{ ms: number; body: OpenAIChatRequest }> {
  const start = performance.now();
  const result = fn();
  const body = result instanceof Promise ? await result : result;
  const text = JSON.stringify(body);
  const elapsed = performance.now() - start;
  consume(text);
  return { ms: elapsed, body };
}

interface Row {
  readonly dataset: string;
  readonly key: string;
  readonly peer: string;
  readonly version: string;
  readonly mode: string;
  readonly caches: string;
  readonly messages: number;
  /** `measured`: in-process rounds; `single`: one cold call in a child; `timed out`: the child was killed. */
  readonly how: "measured" | "single" | "timed out";
  readonly cold?: Timing;
  readonly warm?: Timing;
  readonly coldRatio?: number;
  readonly warmRatio?: number;
  /** Extrapolated from the smaller sizes when not measured here. */
  readonly projectedColdMs?: number;
  readonly projectedWarmMs?: number;
  readonly exponent?: number;
  readonly timeoutMs?: number;
  readonly check?: OutputSummary;
}

interface FloorRow {
  readonly dataset: string;
  readonly messages: number;
  readonly floor: Timing;
}

/** The pair-safety sweep of one runner on one dataset. */
interface SweepRow extends OutputSummary {
  readonly dataset: string;
  readonly key: string;
  readonly peer: string;
  readonly mode: string;
}

type Datasets = Readonly<Record<string, () => MessageInput[] | undefined>>;
const DATASETS: Datasets = {
  generated: () => generatedMessages(THREAD_LENGTH),
  trajectories: () => trajectoryMessages(THREAD_LENGTH),
};
/** Timed on every run: the seeded generator; `--full` adds the real trajectories. */
const TIMED_DATASETS = FULL ? ["generated", "trajectories"] : ["generated"];

function measureFloor(
  dataset: string,
  all: ReadonlyArray<MessageInput>,
  size: number,
  context: ThreadContext,
): FloorRow {
  const counter = context.knownCounter;
  const counts = context.log.messages.map((m) => counter.countMessage(m, m.hash));
  const chat: object[] = context.thread.map((m) => ({ role: m.role, parts: m.parts }));
  const samples: number[] = [];
  let length = context.thread.length;
  for (let round = 0; round < FLOOR_ROUNDS + FLOOR_WARMUP; round++) {
    const fresh = all.slice(length, boundary(all, length + STEP));
    length += fresh.length;
    for (const m of fresh) chat.push({ role: m.role, parts: m.parts });
    const t = time(() => floorStep(chat, counts, fresh, counter, BUDGET));
    if (round >= FLOOR_WARMUP) samples.push(t);
  }
  return { dataset, messages: size, floor: summarize(samples) };
}

function describe(runner: Runner): Pick<Row, "key" | "peer" | "version" | "mode" | "caches"> {
  return {
    key: runner.key,
    peer: runner.peer,
    version: runner.version,
    mode: runner.mode,
    caches: runner.caches,
  };
}

async function measureInProcess(
  runner: Runner,
  dataset: string,
  all: ReadonlyArray<MessageInput>,
  size: number,
  context: ThreadContext,
  floor: number,
): Promise<Row> {
  const session = runner.start(context);
  const prime = await timed(() => session.warm()); // the first call: unmeasured, sizes the rounds
  const slow = prime.ms > 200;
  const rounds = slow
    ? Math.max(2, Math.min(ROUNDS, Math.floor(CELL_BUDGET_MS / (2 * prime.ms)) - 1))
    : ROUNDS;
  const warmup = slow ? 1 : WARMUP;
  const cold: number[] = [];
  const warm: number[] = [];
  const checks = new OutputChecks();
  const counter = makeCounter();
  let length = context.thread.length;
  for (let round = 0; round < rounds + warmup; round++) {
    const fresh = all.slice(length, boundary(all, length + STEP));
    length += fresh.length;
    session.append(fresh);
    const w = await timed(() => session.warm());
    const c = await timed(() => session.cold());
    if (round < warmup) continue;
    warm.push(w.ms);
    cold.push(c.ms);
    const pairs = completePairs(all.slice(0, length));
    const lastRound = round === rounds + warmup - 1;
    for (const body of [w.body, c.body]) {
      const count = lastRound || body.messages.length <= COUNT_ALL_UP_TO;
      checks.add(body, pairs, BUDGET, count ? counter : undefined);
    }
  }
  const c = summarize(cold);
  const w = summarize(warm);
  return {
    dataset,
    ...describe(runner),
    messages: size,
    how: "measured",
    cold: c,
    warm: w,
    coldRatio: c.median / floor,
    warmRatio: w.median / floor,
    check: checks.summary(),
  };
}

/** `t(n) = a·n + b·n²` with `a, b ≥ 0` through two measured points, evaluated at `n`. */
function fitAt(n1: number, t1: number, n2: number, t2: number, n: number): number {
  let b = (t2 - (n2 / n1) * t1) / (n2 * n2 - (n2 / n1) * n1 * n1);
  let a = (t1 - b * n1 * n1) / n1;
  if (b < 0) [a, b] = [t2 / n2, 0];
  else if (a < 0) [a, b] = [0, t2 / (n2 * n2)];
  return a * n + b * n * n;
}

/**
 * Cold and warm time at `size` extrapolated from the two largest measured sizes by a linear + quadratic fit
 * (linear from one size), and the growth exponent between those two sizes.
 */
function project(
  previous: ReadonlyArray<Row>,
  size: number,
): { cold: number; warm: number; exponent: number } {
  const measured = previous.filter((r) => r.how === "measured");
  const b = measured[measured.length - 1];
  if (b === undefined) return { cold: 0, warm: 0, exponent: 1 };
  const a = measured[measured.length - 2];
  if (a === undefined) {
    const scale = size / b.messages;
    return { cold: b.cold!.median * scale, warm: b.warm!.median * scale, exponent: 1 };
  }
  return {
    cold: fitAt(a.messages, a.cold!.median, b.messages, b.cold!.median, size),
    warm: fitAt(a.messages, a.warm!.median, b.messages, b.warm!.median, size),
    exponent: Math.log(b.cold!.median / a.cold!.median) / Math.log(b.messages / a.messages),
  };
}

interface ChildResult {
  readonly ms: number;
  readonly check: OutputSummary;
}

/** Runs one cold call of `runner` in a child process; `undefined` when it timed out. */
function measureInChild(runner: Runner, dataset: string, size: number): Promise<ChildResult | undefined> {
  return new Promise((resolve, reject) => {
    const args = ["--child", runner.key, dataset, String(size), ...(FULL ? ["--full"] : [])];
    const child: ChildProcess = fork(import.meta.filename, args, {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    let timer: NodeJS.Timeout | undefined;
    child.on("message", (message: { ready?: boolean; result?: ChildResult }) => {
      if (message.ready === true) {
        timer = setTimeout(() => {
          child.kill("SIGKILL");
          resolve(undefined);
        }, CHILD_TIMEOUT_MS);
      } else if (message.result !== undefined) {
        clearTimeout(timer);
        resolve(message.result);
      }
    });
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (signal === null && code !== 0) {
        reject(new Error(`child for ${runner.key} on ${dataset} at ${size} exited with ${code}`));
      }
    });
  });
}

async function childMain(key: string, dataset: string, size: number): Promise<void> {
  const runner = RUNNERS.find((r) => r.key === key);
  const all = DATASETS[dataset]?.();
  if (runner === undefined || all === undefined) throw new Error(`cannot run ${key} on ${dataset}`);
  const thread = all.slice(0, boundary(all, size));
  const session = runner.start(contextFor(thread, size));
  process.send!({ ready: true });
  const { ms: elapsed, body } = await timed(() => session.cold());
  const checks = new OutputChecks();
  checks.add(body, completePairs(thread), BUDGET, makeCounter());
  process.send!({ result: { ms: elapsed, check: checks.summary() } }, () => process.exit(0));
}

async function measureCell(
  runner: Runner,
  dataset: string,
  all: ReadonlyArray<MessageInput>,
  size: number,
  context: ThreadContext,
  floor: number,
  previous: ReadonlyArray<Row>,
): Promise<Row> {
  const projection = project(previous, size);
  if (projection.cold <= IN_PROCESS_LIMIT_MS) {
    return measureInProcess(runner, dataset, all, size, context, floor);
  }
  const base = {
    dataset,
    ...describe(runner),
    messages: size,
    projectedColdMs: projection.cold,
    projectedWarmMs: projection.warm,
    exponent: projection.exponent,
    timeoutMs: CHILD_TIMEOUT_MS,
  };
  const result = await measureInChild(runner, dataset, size);
  if (result === undefined) return { ...base, how: "timed out", coldRatio: CHILD_TIMEOUT_MS / floor };
  const cold: Timing = { median: result.ms, min: result.ms, max: result.ms, runs: 1 };
  return { ...base, how: "single", cold, coldRatio: result.ms / floor, check: result.check };
}

/**
 * Pair safety over many cut positions: each runner's warm call on a thread of `SWEEP_START` messages that grows
 * by one step at a time, every output checked for split pairs and OpenAI validity (not timed).
 */
async function sweep(dataset: string, all: ReadonlyArray<MessageInput>): Promise<SweepRow[]> {
  const rows: SweepRow[] = [];
  const thread = all.slice(0, boundary(all, SWEEP_START));
  for (const runner of RUNNERS) {
    if (runner.key === "ledger-known") continue; // same output as "ledger"
    const session = runner.start(contextFor(thread, thread.length));
    const checks = new OutputChecks();
    let length = thread.length;
    for (let i = 0; i < SWEEP_POSITIONS; i++) {
      const fresh = all.slice(length, boundary(all, length + 1));
      length += fresh.length;
      session.append(fresh);
      const body = await session.warm();
      checks.add(body, completePairs(all.slice(0, length)), BUDGET);
    }
    rows.push({ dataset, key: runner.key, peer: runner.peer, mode: runner.mode, ...checks.summary() });
  }
  return rows;
}

function seconds(value: number): string {
  return value >= 10_000 ? `${Math.round(value / 1000).toLocaleString("en")} s` : `${ms(value)} ms`;
}

function timingCell(t: Timing | undefined): string {
  if (t === undefined) return "—";
  return t.runs === 1 ? `${ms(t.median)} (1 run)` : `${ms(t.median)} (${ms(t.min)}–${ms(t.max)})`;
}

function ratio(value: number | undefined): string {
  if (value === undefined) return "—";
  return `${value >= 100 ? Math.round(value).toLocaleString("en") : value.toFixed(1)}×`;
}

function orphanCell(k: OutputSummary): string {
  return k.outputsWithOrphans === 0
    ? `0 (${k.outputs} calls)`
    : `**${k.outputsWithOrphans} of ${k.outputs} calls** (≤ ${k.maxOrphanedPairs} per call)`;
}

function validCell(k: OutputSummary): string {
  const inherited =
    k.outputsWithUnansweredInput === 0
      ? ""
      : `; ${k.outputsWithUnansweredInput} keep a call the thread never answers`;
  return k.invalidOutputs === 0
    ? `yes${inherited}`
    : `**no** (${k.invalidOutputs} of ${k.outputs}${inherited})`;
}

function tableRow(r: Row): string {
  const cold =
    r.how === "timed out"
      ? `> ${seconds(r.timeoutMs!)} (timed out; projected ~${seconds(r.projectedColdMs!)})`
      : timingCell(r.cold);
  const warm =
    r.warm !== undefined
      ? timingCell(r.warm)
      : r.projectedWarmMs !== undefined
        ? `projected ~${seconds(r.projectedWarmMs)}`
        : "—";
  const coldRatio = r.how === "timed out" ? `> ${ratio(r.coldRatio)}` : ratio(r.coldRatio);
  const k = r.check;
  const fits =
    k === undefined
      ? "—"
      : `${k.fitsBudget ? "yes" : "**no**"} (≤ ${k.maxTokens.toLocaleString("en")} tok, ${k.messages.toLocaleString("en")} msgs)`;
  return `| ${r.peer} ${r.version} | ${r.mode} | ${r.messages.toLocaleString("en")} | ${cold} | ${warm} | ${coldRatio} | ${ratio(r.warmRatio)} | ${fits} | ${k === undefined ? "—" : orphanCell(k)} | ${k === undefined ? "—" : validCell(k)} |`;
}

function timingTable(dataset: string, floors: ReadonlyArray<FloorRow>, rows: ReadonlyArray<Row>): string {
  return [
    `### ${dataset} threads (budget ${BUDGET.toLocaleString("en")} tokens, ${tokenizer.id})`,
    "",
    "| peer | mode | messages | cold ms (min–max) | warm ms (min–max) | cold / floor | warm / floor | fits budget? | orphaned pairs | OpenAI-valid |",
    "|---|---|---:|---:|---:|---:|---:|---|---|---|",
    ...floors
      .filter((f) => f.dataset === dataset)
      .flatMap((f) => [
        `| floor | plain loop over cached counts | ${f.messages.toLocaleString("en")} | ${timingCell(f.floor)} | ${timingCell(f.floor)} | 1.0× | 1.0× | yes (by construction) | — | — |`,
        ...rows.filter((r) => r.dataset === dataset && r.messages === f.messages).map(tableRow),
      ]),
    ...SKIPPED.map((s) => `| ${s.peer} | skipped (see below) | — | — | — | — | — | — | — | — |`),
  ].join("\n");
}

function sweepTable(rows: ReadonlyArray<SweepRow>): string {
  return [
    `### Pair safety over ${SWEEP_POSITIONS} cut positions (threads of ${SWEEP_START.toLocaleString("en")}+ messages, warm calls)`,
    "",
    "| dataset | peer | mode | calls with split pairs | OpenAI-valid | first problem |",
    "|---|---|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| ${r.dataset} | ${r.peer} | ${r.mode} | ${orphanCell(r)} | ${validCell(r)} | ${r.firstProblem === undefined ? "—" : `\`${r.firstProblem.slice(0, 120)}\``} |`,
    ),
  ].join("\n");
}

async function main(): Promise<void> {
  const floors: FloorRow[] = [];
  const rows: Row[] = [];
  const sweeps: SweepRow[] = [];
  for (const [dataset, load] of Object.entries(DATASETS)) {
    const all = load();
    if (all === undefined) {
      console.error(`(${dataset}: shared trajectories not found, skipped)`);
      continue;
    }
    sweeps.push(...(await sweep(dataset, all)));
    console.error(`${dataset}: pair-safety sweep done`);
    if (!TIMED_DATASETS.includes(dataset)) continue;
    for (const size of SIZES) {
      const context = contextFor(all.slice(0, boundary(all, size)), size);
      const floor = measureFloor(dataset, all, size, context);
      floors.push(floor);
      console.error(`${dataset} ${size}: floor ${ms(floor.floor.median)} ms`);
      for (const runner of RUNNERS) {
        const previous = rows.filter((r) => r.dataset === dataset && r.key === runner.key);
        const row = await measureCell(runner, dataset, all, size, context, floor.floor.median, previous);
        rows.push(row);
        console.error(
          `${dataset} ${size} ${runner.key}: ${row.how}, cold ${row.cold === undefined ? "—" : ms(row.cold.median)} ms, warm ${row.warm === undefined ? "—" : ms(row.warm.median)} ms`,
        );
      }
    }
  }
  for (const dataset of TIMED_DATASETS) {
    if (floors.some((f) => f.dataset === dataset)) console.log(`${timingTable(dataset, floors, rows)}\n`);
  }
  console.log(sweepTable(sweeps));
  for (const s of SKIPPED) console.log(`\nSkipped ${s.peer}: ${s.reason}.`);
  writeFileSync(
    join(repoRoot, "benchmarks/results/peers.json"),
    `${JSON.stringify(
      {
        budget: BUDGET,
        tokenizer: tokenizer.id,
        counter: makeCounter().id,
        full: FULL,
        node: process.version,
        floors,
        rows,
        sweeps,
        skipped: SKIPPED,
      },
      null,
      2,
    )}\n`,
  );
  console.error(`(sink ${sinkValue()})`);
}

const childAt = process.argv.indexOf("--child");
if (childAt >= 0) {
  await childMain(process.argv[childAt + 1]!, process.argv[childAt + 2]!, Number(process.argv[childAt + 3]));
} else {
  await main();
}
