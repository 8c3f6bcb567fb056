/**
 * An agent loop of hundreds of turns through the context engine and the official `openai` SDK, against a local
 * server that rejects what the real API rejects: `npx tsx examples/agent-harness.ts [--turns N] [--db PATH]`.
 * Every turn: `prepareTurn` → `chat.completions.create` → `recordUsage` → append the reply and the tool
 * results. Large tool-call groups are externalized, the model is offered `recall` beside the fake tools, and
 * the harness counts how the model's references back to moved-out content were honoured. It exits 1 if the
 * server rejected a single request, a replay did not match, or a reference the engine should have honoured got
 * nothing.
 */
import { createHash } from "node:crypto";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import OpenAI from "openai";
import {
  type CalibrationSettings,
  type ContextEngine,
  createContextEngine,
  createMemoryStores,
  createTokenBudget,
  createTokenizer,
  DEFAULT_PIPELINE_CONFIG,
  type Message,
  type MessageFate,
  type PipelineConfig,
  type RehydrationOptions,
  recallTool,
  type Stores,
  type TokenBudget,
  type TurnStats,
} from "../src/index.js";
import { openSqliteStores } from "../src/stores/sqlite/index.js";
import { assistantInput, carriesResults, resultsById, toolMessages, userMessage } from "./chat-log-bridge.js";
import { FAKE_TOOLS, runFakeTool } from "./fake-tools.js";
import { formatSummary, type HarnessSummary, harnessFailed } from "./harness-report.js";
import { type LocalOpenAIServer, startLocalOpenAIServer } from "./local-openai-server.js";
import { answerRecall } from "./recall-answer.js";
import { type ReferenceChecks, ReferenceTally, searchWords } from "./reference-tally.js";
import { createScriptedAgentModel } from "./scripted-agent-model.js";

export type { HarnessSummary } from "./harness-report.js";
export { formatSummary, harnessFailed } from "./harness-report.js";

/** Options of {@link runAgentHarness}. */
export interface HarnessOptions {
  /** Model calls to make (default 320). */
  readonly turns?: number;
  /** A SQLite database file for the stores (default: memory stores). */
  readonly dbPath?: string;
  /** The server's context window (default 16,000). */
  readonly contextWindow?: number;
  /** Tokens kept for the reply and sent as `max_completion_tokens` (default 1,024). */
  readonly replyReserve?: number;
  /** Seeds the scripted model (default 1). */
  readonly seed?: number;
  /** Replay every n-th call (default 1: every call). */
  readonly replayEvery?: number;
  /**
   * Move tool-call groups of more than 8,000 characters to the artifact store, behind a pointer, once they are no
   * longer the newest (default true). Ignored when `pipeline` is given.
   */
  readonly externalize?: boolean;
  /** The compaction pipeline (default: `EXTERNALIZING_PIPELINE`, or the engine's default without `externalize`). */
  readonly pipeline?: PipelineConfig;
  /**
   * Tokens of the window kept free besides the reply reserve (default 4 % of the window). Calibration learns the
   * median ratio of the server's count to the engine's, but a recalled or rehydrated artifact is JSON text (one
   * line per message), which this server, tokenizing the request's JSON, counts with every escape doubled: some
   * 15 % above the engine's count on that content, against 3–5 % on the rest. The margin covers requests heavy
   * with it.
   */
  readonly safetyMargin?: number;
  /** How the engine brings back artifacts the model names (default: the engine's, with a cooldown of 3 calls). */
  readonly rehydration?: RehydrationOptions;
  /** Calibration settings of the engine; `{ maxRatio: 1 }` switches calibration off. */
  readonly calibration?: Partial<CalibrationSettings>;
  /** Called with a progress line every 50 turns. */
  readonly progress?: (line: string) => void;
  /** Called after every answered turn with the engine's figures and the server's prompt tokens. */
  readonly onTurn?: (turn: number, stats: TurnStats, promptTokens: number | undefined) => void;
}

const MODEL = "gpt-4o";
const API_KEY = "sk-local-harness";
const THREAD = "agent-harness";
const TENANT = "harness";
/** The engine's default, named here because the harness checks the cooldown it reports. */
const COOLDOWN_CALLS = 3;

/** What the model is offered every turn: the fake tools and `recall`. */
const TOOLS = [...FAKE_TOOLS, recallTool("openai")];

/**
 * The engine's default pipeline with externalization in front of it: a tool-call group whose texts, arguments and
 * results exceed 8,000 characters (about 2,000 tokens, an eighth of the default window) moves to the artifact
 * store once a newer group follows it. It goes first because the other strategies would otherwise stub those
 * results before it saw them, and a stub cannot be brought back whole.
 */
export const EXTERNALIZING_PIPELINE: PipelineConfig = {
  ...DEFAULT_PIPELINE_CONFIG,
  strategies: [{ use: "externalize", minChars: 8_000 }, ...DEFAULT_PIPELINE_CONFIG.strategies],
};

const SYSTEM_PROMPT =
  "You are a coding agent working in the context-ledger repository. Use the tools to read files, search and run tests; report briefly when a step is done.";

const TASKS = [
  "The budget test fails on CI with a 16k window. Find out why and fix it.",
  "Now check that the renderer never orphans a tool result after a drop.",
  "Look at the SQLite log store: is the append path safe with two writers?",
  "Run the calibration tests and explain any failure.",
  "Review the hard fallback: does it protect the last user message?",
] as const;

/** Runs the agent loop and returns what happened; the server and the stores are closed before it returns. */
export async function runAgentHarness(options: HarnessOptions = {}): Promise<HarnessSummary> {
  const started = performance.now();
  const server = await startLocalOpenAIServer({
    contextWindow: options.contextWindow ?? 16_000,
    apiKey: API_KEY,
    model: createScriptedAgentModel({ seed: options.seed ?? 1 }),
  });
  const stores: Stores =
    options.dbPath === undefined ? createMemoryStores() : openSqliteStores({ path: options.dbPath });
  try {
    // A database may already hold earlier runs: each run gets its own thread.
    const threadId = options.dbPath === undefined ? THREAD : `${THREAD}-${Date.now().toString(36)}`;
    const session = openSession(options, server, stores, threadId);
    await session.engine.append(threadId, [
      { role: "system", parts: [{ type: "text", text: SYSTEM_PROMPT }] },
      userMessage(TASKS[0]),
    ]);
    const turns = options.turns ?? 320;
    for (let turn = 1; turn <= turns && (await step(session, turn)); turn++) {
      if (turn % 50 === 0) options.progress?.(progressLine(session, turn));
    }
    await session.engine.idle();
    return await summarize(session, options.replayEvery ?? 1, started);
  } finally {
    await stores.close();
    await server.close();
  }
}

/** What one run counts as it goes. */
interface Tally {
  readonly callIds: string[];
  /** What was sent per call (sha256 of the messages' JSON), to hold replays against the bytes that left. */
  readonly sent: Map<string, string>;
  readonly rejections: string[];
  userMessages: number;
  toolCalls: number;
  compactedTurns: number;
  maxEngineTokens: number;
  ratioMin: number;
  ratioMax: number;
  /** Turns after tool calls, and those whose request carried every newest result unchanged. */
  latestChecked: number;
  latestIntact: number;
  lastStats: TurnStats | undefined;
  readonly references: ReferenceTally;
}

interface Session {
  readonly engine: ContextEngine;
  readonly client: OpenAI;
  readonly server: LocalOpenAIServer;
  readonly stores: Stores;
  readonly threadId: string;
  readonly budget: TokenBudget;
  readonly replyReserve: number;
  readonly onTurn: HarnessOptions["onTurn"];
  readonly tally: Tally;
  /** The results appended after the last reply, by call id: the next request must carry them. */
  latest: ReadonlyMap<string, string>;
}

function openSession(
  options: HarnessOptions,
  server: LocalOpenAIServer,
  stores: Stores,
  threadId: string,
): Session {
  const replyReserve = options.replyReserve ?? 1_024;
  // The tool definitions go with every request but are no message: the budget keeps room for them.
  const toolSchemaTokens = createTokenizer({ model: MODEL }).count(JSON.stringify(TOOLS));
  const budget = createTokenBudget({
    model: MODEL,
    contextWindow: server.contextWindow,
    reserveOutput: replyReserve,
    toolSchemaTokens,
    safetyMargin: options.safetyMargin ?? Math.ceil(server.contextWindow * 0.04),
  });
  const pipeline = options.pipeline ?? (options.externalize === false ? undefined : EXTERNALIZING_PIPELINE);
  const engine = createContextEngine({
    stores,
    budget,
    tenant: TENANT,
    rehydration: { cooldownCalls: COOLDOWN_CALLS, ...options.rehydration },
    // A recall answer lands in the log as a tool result: at the engine's default 4,000 tokens, two in a row would
    // take half of a 16k window. The per-artifact cap of rehydration is the same 2,000.
    recall: { maxTokens: 2_000 },
    ...(pipeline === undefined ? {} : { pipeline }),
    ...(options.calibration === undefined ? {} : { calibration: options.calibration }),
  });
  return {
    engine,
    client: new OpenAI({ apiKey: API_KEY, baseURL: server.baseURL, maxRetries: 0 }),
    server,
    stores,
    threadId,
    budget,
    replyReserve,
    onTurn: options.onTurn,
    tally: {
      callIds: [],
      sent: new Map(),
      rejections: [],
      userMessages: 1,
      toolCalls: 0,
      compactedTurns: 0,
      maxEngineTokens: 0,
      ratioMin: Number.POSITIVE_INFINITY,
      ratioMax: 0,
      latestChecked: 0,
      latestIntact: 0,
      lastStats: undefined,
      references: new ReferenceTally(
        referenceChecks(engine, stores, threadId, options.rehydration?.cooldownCalls ?? COOLDOWN_CALLS),
      ),
    },
    latest: new Map(),
  };
}

/** One turn: prepare, send, record usage, append the reply and its results. False when the server refused. */
async function step(s: Session, turn: number): Promise<boolean> {
  const { tally } = s;
  const prepared = await s.engine.prepareTurn(s.threadId, {
    format: "openai",
    model: MODEL,
    budget: s.budget,
  });
  tally.callIds.push(prepared.callId);
  tally.sent.set(prepared.callId, digest(prepared.request.messages));
  tally.lastStats = prepared.stats;
  if (prepared.stats.compacted) tally.compactedTurns++;
  tally.maxEngineTokens = Math.max(tally.maxEngineTokens, prepared.stats.tokens);
  if (s.latest.size > 0) {
    tally.latestChecked++;
    if (carriesResults(prepared.request.messages, s.latest)) tally.latestIntact++;
  }
  await tally.references.onTurn(turn, prepared.stats, prepared.request.messages);
  let reply: OpenAI.Chat.ChatCompletion;
  try {
    reply = await s.client.chat.completions.create({
      model: MODEL,
      messages: prepared.request.messages,
      tools: TOOLS,
      max_completion_tokens: s.replyReserve,
    });
  } catch (error) {
    if (!(error instanceof OpenAI.APIError)) throw error;
    tally.rejections.push(`turn ${turn}: ${error.message}${error.code ? ` (${error.code})` : ""}`);
    return false; // the turn cannot go on without a reply: the run has failed
  }
  const usage = reply.usage;
  if (usage !== undefined) {
    await s.engine.recordUsage(prepared.callId, {
      inputTokens: usage.prompt_tokens,
      outputTokens: usage.completion_tokens,
    });
    const ratio = usage.prompt_tokens / prepared.stats.tokens;
    tally.ratioMin = Math.min(tally.ratioMin, ratio);
    tally.ratioMax = Math.max(tally.ratioMax, ratio);
  }
  s.onTurn?.(turn, prepared.stats, usage?.prompt_tokens);
  const message = reply.choices[0]?.message;
  if (message === undefined) throw new Error(`turn ${turn}: the server answered without a choice`);
  tally.references.onReply(message);
  const results = await toolMessages(message, async (name, args, callId) => {
    if (name !== "recall") return runFakeTool(name, args, callId);
    const answer = await answerRecall(s.engine, s.threadId, args);
    await tally.references.onRecall(answer);
    return answer.output;
  });
  tally.toolCalls += results.length;
  s.latest = resultsById(results);
  // A report ends a step of the task: the user answers with the next one.
  const next = results.length === 0 ? [userMessage(TASKS[tally.userMessages++ % TASKS.length]!)] : [];
  await s.engine.append(s.threadId, [assistantInput(message), ...results, ...next]);
  return true;
}

/** The harness's own view of artifacts and fates, to hold the engine's answers to references against. */
function referenceChecks(
  engine: ContextEngine,
  stores: Stores,
  threadId: string,
  cooldownCalls: number,
): ReferenceChecks {
  return {
    cooldownCalls,
    artifactContent: async (artifactId) => {
      const artifact = await stores.artifacts.get(artifactId, { tenant: TENANT, clearance: "restricted" });
      return artifact?.meta.threadId === threadId ? artifact.content : undefined;
    },
    fateOf: async (messageId) => (await engine.explain(threadId, { id: messageId })).rows[0]?.state,
    compactedHolding: async (words) => {
      for (const word of words) {
        // explain's grep matches a substring; the log search matches whole words, so each row is read again.
        for (const row of (await engine.explain(threadId, { grep: word })).rows) {
          if (row.state === "kept") continue;
          const [stored] = await stores.log.read(threadId, row.seq, row.seq + 1);
          if (stored !== undefined && searchWords(partsText(stored.message)).includes(word)) return row.id;
        }
      }
      return undefined;
    },
  };
}

/** What a search reads of a message: its texts, its calls' names and arguments, its results. */
function partsText(message: Message): string {
  return message.parts
    .map((p) =>
      p.type === "text"
        ? p.text
        : p.type === "tool_call"
          ? `${p.name} ${p.args}`
          : p.type === "tool_result"
            ? p.content
            : "",
    )
    .join("\n");
}

function digest(value: unknown): string {
  return createHash("sha256").update(JSON.stringify(value)).digest("hex");
}

function progressLine(s: Session, turn: number): string {
  const st = s.tally.lastStats;
  if (st === undefined) return `turn ${turn}`;
  return `turn ${turn}: request ${st.tokens} tokens (engine's count), plan v${st.planVersion}, calibration ${st.calibration.ratio.toFixed(3)}`;
}

async function summarize(s: Session, replayEvery: number, started: number): Promise<HarnessSummary> {
  const { tally } = s;
  let checked = 0;
  let ok = 0;
  for (let i = 0; i < tally.callIds.length; i += Math.max(1, replayEvery)) {
    checked++;
    const callId = tally.callIds[i]!;
    const replay = await s.engine.replay(callId);
    // Not only the engine's own hash: the re-rendered messages must be the very ones the SDK sent.
    const messages = (replay.request as { messages?: unknown } | undefined)?.messages;
    if (replay.ok && digest(messages) === tally.sent.get(callId)) ok++;
  }
  const explanation = await s.engine.explain(s.threadId);
  const stats = s.server.stats();
  return {
    turns: tally.callIds.length - tally.rejections.length,
    requests: stats.requests,
    rejections: [...tally.rejections],
    userMessages: tally.userMessages,
    toolCalls: tally.toolCalls,
    messagesLogged: explanation.rows.length,
    compactedTurns: tally.compactedTurns,
    planVersion: explanation.planVersion,
    fates: Object.fromEntries(
      Object.entries(explanation.totals).map(([fate, t]) => [fate, t.messages]),
    ) as Record<MessageFate, number>,
    contextWindow: s.server.contextWindow,
    maxRequestTokens: stats.maxRequestTokens,
    maxEngineTokens: tally.maxEngineTokens,
    calibration: await s.engine.calibration(MODEL),
    observedRatio: tally.ratioMax === 0 ? { min: 1, max: 1 } : { min: tally.ratioMin, max: tally.ratioMax },
    latestResults: { checked: tally.latestChecked, intact: tally.latestIntact },
    replays: { checked, ok },
    references: tally.references.figures(),
    durationMs: performance.now() - started,
  };
}

/** A whole number of at least 1 from a flag, or an error naming the flag. */
function positiveInt(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--${flag} must be a whole number of at least 1, got ${text}`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      turns: { type: "string", default: "320" },
      db: { type: "string" },
      window: { type: "string", default: "16000" },
      seed: { type: "string", default: "1" },
      "no-calibration": { type: "boolean", default: false },
      "no-externalize": { type: "boolean", default: false },
    },
  });
  const turns = positiveInt("turns", values.turns);
  const summary = await runAgentHarness({
    turns,
    contextWindow: positiveInt("window", values.window),
    seed: positiveInt("seed", values.seed),
    // Shows why calibration matters: the server counts a little more than the engine does.
    ...(values["no-calibration"] ? { calibration: { maxRatio: 1 } } : {}),
    externalize: !values["no-externalize"],
    ...(values.db === undefined ? {} : { dbPath: values.db }),
    progress: (line) => console.log(line),
  });
  console.log(formatSummary(summary));
  process.exitCode = harnessFailed(summary, turns) ? 1 : 0;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 2;
  });
}
