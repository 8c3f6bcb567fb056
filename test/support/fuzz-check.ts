/**
 * The invariant of the fuzz campaign, checked per case: a payload is EITHER rejected with a typed `LedgerError`
 * that names the line or field, and nothing is written (the thread's length and content hash are unchanged), OR
 * accepted, and then every request `prepareTurn` renders (openai, anthropic, responses) passes
 * `validateProviderRequest`, a warm engine and a cold one on the same stores render byte-identical requests, and
 * `replay` verifies every recorded call. Anything else is a finding.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createContextEngine } from "../../src/context-engine.js";
import type { ContextEngine } from "../../src/engine/context-engine.js";
import {
  BudgetInfeasibleError,
  LedgerError,
  NotFoundError,
  RenderValidationError,
} from "../../src/errors/ledger-error.js";
import {
  atTranscriptLine,
  importTranscript,
  parseTranscriptLines,
  readTranscriptFile,
} from "../../src/log/import-jsonl.js";
import type { MessageInput } from "../../src/log/message.js";
import { ThreadLog } from "../../src/log/thread-log.js";
import { decodeUtf8 } from "../../src/log/utf8-text.js";
import { type ProviderFormat, validateProviderRequest } from "../../src/render/provider-rules.js";
import { createMemoryStores } from "../../src/stores/memory/memory-stores.js";
import { openSqliteStores } from "../../src/stores/sqlite/index.js";
import type { Stores } from "../../src/stores/stores.js";
import { runInProcess } from "./cli-run.js";
import {
  generateCase as defaultGenerate,
  describePayload,
  type FuzzBackend,
  type FuzzCase,
  type FuzzPayload,
  payloadItems,
  withoutItem,
} from "./fuzz-inputs.js";
import { simpleCounter } from "./simple-counter.js";

const FORMATS: ReadonlyArray<ProviderFormat> = ["openai", "anthropic", "responses"];

/** What one case came to. */
export type FuzzOutcome =
  /** `refused`: the typed errors of turns that could not be rendered for a reason the thread itself gives. */
  | { readonly kind: "accepted"; readonly refused: ReadonlyArray<string> }
  | { readonly kind: "rejected"; readonly errorClass: string }
  | { readonly kind: "finding"; readonly finding: string; readonly detail: string };

/** The stores and warm engines the cases share (one SQLite file for the whole run). */
export interface FuzzEnv {
  readonly stores: Readonly<Record<FuzzBackend, Stores>>;
  readonly warm: Readonly<Record<FuzzBackend, ContextEngine>>;
  readonly dir: string;
  /** The SQLite database file (the CLI cases open it themselves). */
  readonly sqlitePath: string;
  threads: number;
  close(): Promise<void>;
}

function engineOn(stores: Stores): ContextEngine {
  return createContextEngine({ stores, counter: simpleCounter(), budget: { contextWindow: 100_000 } });
}

/** Opens the shared stores: memory, and SQLite on a temp file. */
export function openFuzzEnv(): FuzzEnv {
  const dir = mkdtempSync(join(tmpdir(), "context-ledger-fuzz-"));
  const sqlitePath = join(dir, "fuzz.db");
  const stores = { memory: createMemoryStores(), sqlite: openSqliteStores({ path: sqlitePath }) };
  return {
    stores,
    warm: { memory: engineOn(stores.memory), sqlite: engineOn(stores.sqlite) },
    dir,
    sqlitePath,
    threads: 0,
    async close() {
      await Promise.all([this.warm.memory.idle(), this.warm.sqlite.idle()]);
      await stores.memory.close();
      await stores.sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function snapshot(stores: Stores, threadId: string): Promise<string> {
  const rows = await stores.log.read(threadId);
  const hash = createHash("sha256");
  for (const { message } of rows) hash.update(`${message.seq}\u0000${message.id}\u0000${message.hash}\n`);
  return `${rows.length}:${hash.digest("hex")}`;
}

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`.slice(0, 600);
  return `non-error thrown: ${String(error)}`.slice(0, 600);
}

/** A batch error names the field (or the batch index); a transcript error names the line. */
function namesLineOrField(error: LedgerError, payload: FuzzPayload): boolean {
  if (payload.kind !== "api") return error.where.line !== undefined || /\bline \d+/.test(error.message);
  return (
    error.where.field !== undefined || error.where.index !== undefined || /\bfield\b/.test(error.message)
  );
}

function classOf(error: unknown): string {
  if (error instanceof LedgerError) return `${error.name} (${error.code})`;
  return error instanceof Error ? error.name : typeof error;
}

/** A CLI run that exited 1 (bad input), with what it printed: counted as a typed refusal when it names the line. */
class CliRefusal extends LedgerError {
  constructor(stderr: string) {
    super("VALIDATION", stderr.trim());
    this.name = "CliExit1";
  }
}

/** Appends the payload through its path: the engine, and for text the pure import beside it. */
async function deliver(
  env: FuzzEnv,
  c: FuzzCase,
  payload: FuzzPayload,
  threadId: string,
): Promise<{ error: unknown; pure: unknown; pureAccepted: boolean | undefined }> {
  const engine = env.warm[c.backend];
  if (payload.kind === "api") {
    try {
      await engine.append(threadId, payload.batch as ReadonlyArray<MessageInput>);
      return { error: undefined, pure: undefined, pureAccepted: undefined };
    } catch (error) {
      return { error, pure: undefined, pureAccepted: undefined };
    }
  }
  const source = join(env.dir, `case-${threadId}.jsonl`);
  let pure: unknown;
  let pureAccepted = false;
  const base = ThreadLog.from(threadId, c.prefix);
  try {
    if (payload.kind === "bytes") {
      writeFileSync(source, payload.bytes);
      readTranscriptFile(base, source);
    } else {
      importTranscript(base, payload.text, { source });
    }
    pureAccepted = true;
  } catch (error) {
    pure = error;
  }
  if (payload.kind === "bytes" && payload.cli === true) {
    writeFileSync(source, payload.bytes);
    try {
      const run = await runInProcess([
        "ingest",
        source,
        "--thread",
        threadId,
        "--db",
        env.sqlitePath,
        "--allow-duplicate",
      ]);
      if (run.code === 0) return { error: undefined, pure, pureAccepted };
      // The CLI prints the error; its class is not visible, only the exit code (1: bad input) and the text.
      const problem =
        run.code === 1 ? new CliRefusal(run.stderr) : new Error(`exit ${run.code}: ${run.stderr}`);
      return { error: problem, pure, pureAccepted };
    } finally {
      rmSync(source, { force: true });
    }
  }
  try {
    // As the CLI's ingest does: decode the bytes, parse every line, append in one batch, name the line.
    const text = payload.kind === "bytes" ? decodeUtf8(payload.bytes, source) : payload.text;
    const parsed = parseTranscriptLines(text, { source });
    await engine.append(threadId, parsed.inputs).catch((error: unknown) => {
      throw atTranscriptLine(error, parsed, { source });
    });
    return { error: undefined, pure, pureAccepted };
  } catch (error) {
    return { error, pure, pureAccepted };
  } finally {
    if (payload.kind === "bytes") rmSync(source, { force: true });
  }
}

/** Runs one case (optionally with a replaced payload, for shrinking) and says what it came to. */
export async function runCase(
  env: FuzzEnv,
  c: FuzzCase,
  payload: FuzzPayload = c.payload,
): Promise<FuzzOutcome> {
  const threadId = `fuzz-${c.seed}-${++env.threads}`;
  const stores = env.stores[c.backend];
  const warm = env.warm[c.backend];
  const finding = (f: string, detail: string): FuzzOutcome => ({ kind: "finding", finding: f, detail });
  if (c.prefix.length > 0) {
    try {
      await warm.append(threadId, c.prefix);
    } catch (error) {
      return finding("valid prefix refused", describeError(error));
    }
  }
  const before = await snapshot(stores, threadId);
  const { error, pure, pureAccepted } = await deliver(env, c, payload, threadId);
  if (pure !== undefined && !(pure instanceof LedgerError)) {
    return finding(`untyped error from the pure import: ${classOf(pure)}`, describeError(pure));
  }
  if (error !== undefined) {
    if (!(error instanceof LedgerError))
      return finding(`untyped error: ${classOf(error)}`, describeError(error));
    if (!namesLineOrField(error, payload))
      return finding("error names no line or field", describeError(error));
    const after = await snapshot(stores, threadId);
    if (after !== before) return finding("partial write on a rejected payload", `${before} -> ${after}`);
    if (pureAccepted === true) {
      return finding("engine refused what importTranscript accepted", describeError(error));
    }
    return { kind: "rejected", errorClass: classOf(error) };
  }
  if (pureAccepted === false) {
    return finding("engine accepted what importTranscript refused", describeError(pure));
  }
  return checkAccepted(env, c, threadId);
}

async function checkAccepted(env: FuzzEnv, c: FuzzCase, threadId: string): Promise<FuzzOutcome> {
  const stores = env.stores[c.backend];
  const warm = env.warm[c.backend];
  const finding = (f: string, detail: string): FuzzOutcome => ({ kind: "finding", finding: f, detail });
  const callIds: string[] = [];
  const refused: string[] = [];
  // An empty payload on an empty thread leaves nothing to render (every read says so with a NotFoundError).
  if ((await stores.log.length(threadId)) === 0) return { kind: "accepted", refused: ["empty thread"] };
  for (const format of FORMATS) {
    try {
      const turn = await warm.prepareTurn(threadId, {
        format,
        ...(c.budget === undefined ? {} : { budget: c.budget }),
      });
      callIds.push(turn.callId);
      const problems = validateProviderRequest(format, turn.request);
      if (problems.length > 0) return finding(`invalid ${format} request`, problems.join("; "));
    } catch (error) {
      if (typedRefusal(error)) {
        refused.push(classOf(error));
        continue;
      }
      return finding(`prepareTurn(${format}) threw ${classOf(error)}`, describeError(error));
    }
  }
  await warm.idle();
  const cold = engineOn(stores);
  for (const format of FORMATS) {
    let warmBody: string;
    let coldBody: string;
    try {
      warmBody = JSON.stringify((await warm.render(threadId, { format })).request);
      coldBody = JSON.stringify((await cold.render(threadId, { format })).request);
    } catch (error) {
      return finding(`render(${format}) threw ${classOf(error)}`, describeError(error));
    }
    if (warmBody !== coldBody)
      return finding(`warm and cold ${format} renders differ`, firstDifference(warmBody, coldBody));
  }
  for (const callId of callIds) {
    try {
      const replay = await cold.replay(callId);
      if (!replay.ok)
        return finding("replay does not verify", `${replay.mismatch ?? ""} ${replay.problems.join("; ")}`);
    } catch (error) {
      return finding(`replay threw ${classOf(error)}`, describeError(error));
    }
  }
  // One more turn, taken by the warm engine and then by a fresh one once the first has settled: same request.
  const again = await turnPair(warm, engineOn(stores), threadId, c);
  if (again !== undefined) return again;
  await cold.idle();
  return { kind: "accepted", refused };
}

async function turnPair(
  warm: ContextEngine,
  cold: ContextEngine,
  threadId: string,
  c: FuzzCase,
): Promise<FuzzOutcome | undefined> {
  const options = { format: "anthropic" as const, ...(c.budget === undefined ? {} : { budget: c.budget }) };
  try {
    const first = await warm.prepareTurn(threadId, options);
    await warm.idle();
    const second = await cold.prepareTurn(threadId, options);
    await cold.idle();
    const [a, b] = [JSON.stringify(first.request), JSON.stringify(second.request)];
    if (a !== b) {
      return { kind: "finding", finding: "warm and cold turns differ", detail: firstDifference(a, b) };
    }
    for (const callId of [first.callId, second.callId]) {
      const replay = await warm.replay(callId);
      if (!replay.ok) {
        return { kind: "finding", finding: "replay does not verify", detail: replay.mismatch ?? "" };
      }
    }
  } catch (error) {
    if (typedRefusal(error)) return undefined;
    return { kind: "finding", finding: `second turn threw ${classOf(error)}`, detail: describeError(error) };
  }
  return undefined;
}

/** The rules a thread with nothing to send breaks (only a system message, or messages without parts). */
const NOTHING_TO_SEND = /^messages is empty|^input is empty and so are instructions/;

/**
 * A turn the thread cannot give, refused with a typed error that says why: over the budget, an empty thread, or
 * a thread with nothing the format can send (Anthropic: no user or assistant message; Responses: no input and
 * no instructions, e.g. a lone system message without parts). Any other error of an accepted thread is a finding.
 */
function typedRefusal(error: unknown): boolean {
  if (error instanceof BudgetInfeasibleError || error instanceof NotFoundError) return true;
  return error instanceof RenderValidationError && error.problems.every((p) => NOTHING_TO_SEND.test(p));
}

function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return `at char ${i}: warm …${a.slice(Math.max(0, i - 40), i + 80)} / cold …${b.slice(Math.max(0, i - 40), i + 80)}`;
}

/** Removes payload items one at a time while the same finding persists: the minimal input of a finding. */
export async function shrink(
  env: FuzzEnv,
  c: FuzzCase,
  finding: string,
  maxRuns = 150,
): Promise<FuzzPayload> {
  let payload = c.payload;
  let runs = 0;
  for (let i = payloadItems(payload) - 1; i >= 0 && runs < maxRuns; i--) {
    const candidate = withoutItem(payload, i);
    runs++;
    const outcome = await runCase(env, c, candidate);
    if (outcome.kind === "finding" && outcome.finding === finding) payload = candidate;
  }
  return payload;
}

/** The figures of a run. */
export interface FuzzFigures {
  iterations: number;
  accepted: number;
  /** Accepted payloads whose thread refused some turn with a typed error (see `typedRefusal`), by class. */
  refusedTurns: Map<string, number>;
  rejected: Map<string, number>;
  findings: Array<{
    seed: number;
    finding: string;
    detail: string;
    mutations: ReadonlyArray<string>;
    input: string;
  }>;
}

/** Runs `iterations` cases from `seed` on and gathers the figures; findings are shrunk and described. */
export async function runCampaign(
  seed: number,
  iterations: number,
  onProgress?: (done: number, figures: FuzzFigures) => void,
  generate: (seed: number) => FuzzCase = defaultGenerate,
): Promise<FuzzFigures> {
  const env = openFuzzEnv();
  const figures: FuzzFigures = {
    iterations: 0,
    accepted: 0,
    refusedTurns: new Map(),
    rejected: new Map(),
    findings: [],
  };
  try {
    for (let i = 0; i < iterations; i++) {
      const caseSeed = (seed + i) >>> 0;
      let c: FuzzCase;
      try {
        c = generate(caseSeed);
      } catch (error) {
        figures.iterations++;
        const detail = describeError(error);
        figures.findings.push({
          seed: caseSeed,
          finding: "generator crash",
          detail,
          mutations: [],
          input: "",
        });
        continue;
      }
      let outcome: FuzzOutcome;
      try {
        outcome = await runCase(env, c);
      } catch (error) {
        outcome = {
          kind: "finding",
          finding: `harness crash: ${classOf(error)}`,
          detail: describeError(error),
        };
      }
      figures.iterations++;
      if (outcome.kind === "accepted") {
        figures.accepted++;
        for (const r of new Set(outcome.refused))
          figures.refusedTurns.set(r, (figures.refusedTurns.get(r) ?? 0) + 1);
      } else if (outcome.kind === "rejected") {
        figures.rejected.set(outcome.errorClass, (figures.rejected.get(outcome.errorClass) ?? 0) + 1);
      } else {
        let minimal = c.payload;
        try {
          minimal = await shrink(env, c, outcome.finding);
        } catch {}
        figures.findings.push({
          seed: caseSeed,
          finding: outcome.finding,
          detail: outcome.detail,
          mutations: c.mutations,
          input: `${c.backend}, source ${c.source}, prefix of ${c.prefix.length} messages, budget ${c.budget ?? "engine"}; ${describePayload(minimal)}`,
        });
      }
      onProgress?.(i + 1, figures);
    }
  } finally {
    await env.close();
  }
  return figures;
}
