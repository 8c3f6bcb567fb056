/**
 * `demo`: the whole life of a thread on a generated agent session, in a temporary SQLite file: ingest a JSONL
 * transcript, run several turns of append + prepare under a budget that forces compaction, explain the latest
 * plan, diff it against the first, replay and verify every recorded call, and report. Needs nothing but this
 * repository and takes a few seconds.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as z from "zod";
import { describeTotals, explanationTable } from "../engine/explain.js";
import { ValidationError } from "../errors/ledger-error.js";
import type { ContextEngine, MessageInput, ProviderFormat, Stores } from "../index.js";
import { validateProviderRequest } from "../render/provider-rules.js";
import { type CliContext, defineCommand } from "./cli-command.js";
import { withEngine } from "./cli-engine.js";
import { printLine } from "./cli-io.js";
import { COMMAND_SUMMARIES } from "./command-summaries.js";
import { compactCounts, describeActions } from "./compact-command.js";
import { demoSession } from "./demo-session.js";
import { explainVersion } from "./explain-command.js";
import { ingestText } from "./ingest-command.js";

const THREAD = "demo";
const TRANSCRIPT = "sample-session.jsonl";
const MESSAGES = 240;
/** The share of the session ingested as a transcript before the turns start. */
const INGEST_SHARE = 0.4;
const TURNS = 8;
/** The budget as a share of the ingested history's uncompacted request. */
const BUDGET_SHARE = 0.6;
const FORMATS: ReadonlyArray<ProviderFormat> = ["openai", "anthropic", "responses"];

/** One prepared turn, as the report shows it. */
interface TurnLine {
  readonly turn: number;
  readonly format: ProviderFormat;
  readonly appended: number;
  readonly logLength: number;
  readonly callId: string;
  readonly tokens: number;
  readonly planVersion: number;
  readonly compacted: boolean;
  readonly actions: string;
  readonly valid: boolean;
  /** The plan version in force after the background runs the turn started (equal when none committed). */
  readonly afterBackground: number;
}

/** Everything the demo found, for the readable report and `--json`. */
interface DemoReport {
  readonly database: string;
  readonly thread: string;
  readonly ingested: number;
  readonly budget: number;
  readonly turns: ReadonlyArray<TurnLine>;
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  readonly planVersions: ReadonlyArray<number>;
  readonly explain: {
    readonly planVersion: number;
    readonly totals: string;
    readonly sample: ReadonlyArray<string>;
  };
  readonly diff: {
    readonly from: number;
    readonly to: number;
    readonly changes: number;
    readonly text: string;
  };
  readonly calls: number;
  readonly verified: number;
  readonly durationMs: number;
}

async function runTurns(
  engine: ContextEngine,
  stores: Stores,
  turns: ReadonlyArray<ReadonlyArray<MessageInput>>,
  budget: number,
): Promise<TurnLine[]> {
  const lines: TurnLine[] = [];
  for (const [i, batch] of turns.entries()) {
    const appended = await engine.append(THREAD, batch);
    const format = FORMATS[i % FORMATS.length]!;
    const inForce = (await stores.plans.versions(THREAD)).at(-1) ?? 0;
    const turn = await engine.prepareTurn(THREAD, { format, budget, model: "gpt-4o" });
    // Per message after precedence, as explain counts them (the turn's stats sum the new actions' spans).
    const change = await engine.diff(THREAD, inForce, turn.stats.planVersion);
    // The model call would happen here; background summaries finish meanwhile.
    await engine.idle();
    const versions = await stores.plans.versions(THREAD);
    lines.push({
      turn: i + 1,
      format,
      appended: batch.length,
      logLength: appended.logSeq,
      callId: turn.callId,
      tokens: turn.prompt.tokenCount,
      planVersion: turn.stats.planVersion,
      compacted: turn.stats.compacted,
      actions: describeActions(compactCounts(change).actionsByKind),
      valid: validateProviderRequest(format, turn.request as never).length === 0,
      afterBackground: versions[versions.length - 1] ?? 0,
    });
  }
  return lines;
}

async function audit(
  engine: ContextEngine,
  stores: Stores,
): Promise<
  Pick<
    DemoReport,
    "explain" | "diff" | "calls" | "verified" | "tokensBefore" | "tokensAfter" | "planVersions"
  >
> {
  const versions = await stores.plans.versions(THREAD);
  const latest = versions[versions.length - 1] ?? 0;
  const { explanation, renderedTokens } = await explainVersion(engine, THREAD, latest);
  const before = await explainVersion(engine, THREAD, 0);
  const first = versions[0] ?? 0;
  const diff = await engine.diff(THREAD, first, latest);
  const calls = await stores.calls.list(THREAD);
  let verified = 0;
  for (const call of calls) if ((await engine.replay(call.callId)).ok) verified++;
  const changed = explanation.rows.filter((r) => r.state !== "kept");
  return {
    tokensBefore: before.renderedTokens,
    tokensAfter: renderedTokens,
    planVersions: versions,
    explain: {
      planVersion: explanation.planVersion,
      totals: describeTotals(explanation),
      sample: explanationTable([...changed.slice(0, 3), ...explanation.rows.slice(-2)]),
    },
    diff: { from: first, to: latest, changes: diff.diff.changes.length, text: diff.text },
    calls: calls.length,
    verified,
  };
}

async function runDemo(context: CliContext, database: string, folder: string): Promise<DemoReport> {
  const started = performance.now();
  const session = demoSession({ messages: MESSAGES, ingestShare: INGEST_SHARE, turns: TURNS, seed: 42 });
  const file = join(folder, TRANSCRIPT);
  writeFileSync(file, session.transcript);
  return withEngine({ ...context, db: database }, {}, async (engine, stores) => {
    if ((await stores.log.length(THREAD)) > 0) {
      throw new ValidationError(
        `thread ${JSON.stringify(THREAD)} already exists in ${database}: pass a fresh --db to the demo`,
        { field: "--db" },
      );
    }
    const text = await readFile(file, "utf8");
    const ingest = await ingestText(engine, context, { thread: THREAD, text, source: TRANSCRIPT });
    // Below the ingested history's size, so the first turn must compact, and the log keeps growing after it.
    const budget = Math.ceil((await explainVersion(engine, THREAD, 0)).renderedTokens * BUDGET_SHARE);
    const turns = await runTurns(engine, stores, session.turns, budget);
    const found = await audit(engine, stores);
    return {
      database,
      thread: THREAD,
      ingested: ingest.appended,
      budget,
      turns,
      ...found,
      durationMs: performance.now() - started,
    };
  });
}

function printReport(out: (line: string) => void, r: DemoReport, kept: boolean): void {
  out(`context-ledger demo: a generated agent session, end to end on SQLite (${r.database})`);
  out("");
  out(`1. ingest   ${r.ingested} messages from ${TRANSCRIPT} into thread "${r.thread}"`);
  out(
    `            budget of every turn: ${r.budget} tokens (${Math.round(BUDGET_SHARE * 100)}% of the ingested history's uncompacted request)`,
  );
  out(`2. prepare  ${r.turns.length} turns: append what happened, then prepare the next request`);
  for (const t of r.turns) {
    const what = t.compacted ? `compacted: ${t.actions}` : "fits, no compaction";
    const background =
      t.afterBackground > t.planVersion ? `; background summary → v${t.afterBackground}` : "";
    out(
      `   turn ${String(t.turn).padStart(2)}  ${t.format.padEnd(9)}  +${t.appended} → ${String(t.logLength).padStart(3)} msgs  ${String(t.tokens).padStart(6)} tokens  plan v${t.planVersion}  ${t.valid ? "valid" : "INVALID"}  ${what}${background}`,
    );
  }
  out(`3. explain  plan v${r.explain.planVersion}: ${r.explain.totals}`);
  for (const line of r.explain.sample) out(`   ${line}`);
  const diffLines = r.diff.text.split("\n");
  out(`4. diff     v${r.diff.from} → v${r.diff.to}: ${r.diff.changes} message(s) changed`);
  for (const line of diffLines.slice(0, 6)) out(`   ${line}`);
  if (diffLines.length > 6) out(`   … ${diffLines.length - 6} more line(s)`);
  out(`5. replay   ${r.verified} of ${r.calls} recorded calls re-rendered with the recorded hash (--verify)`);
  out("");
  const saved = r.tokensBefore === 0 ? 0 : (1 - r.tokensAfter / r.tokensBefore) * 100;
  out(
    `report: ${r.tokensBefore} → ${r.tokensAfter} tokens (${saved.toFixed(1)}% smaller), plan versions ${r.planVersions.length === 0 ? "none" : `v${r.planVersions[0]}–v${r.planVersions[r.planVersions.length - 1]}`}, ${r.verified}/${r.calls} calls verified, ${r.turns.filter((t) => t.valid).length}/${r.turns.length} requests valid; ${(r.durationMs / 1000).toFixed(1)} s`,
  );
  out(kept ? `database kept at ${r.database}` : "temporary database removed (pass --db PATH to keep it)");
}

/** The `demo` command. */
export const demoCommand = defineCommand({
  name: "demo",
  summary: COMMAND_SUMMARIES.demo,
  usage: "demo [--db PATH] [--json]",
  description: [
    "Generates an agent session, ingests it from a JSONL file into a temporary SQLite database, runs 8 turns",
    "of append + prepare under a budget that forces compaction, explains the latest plan, diffs it against the",
    "first, replays and verifies every call, and prints a short report. With --db the database is kept there.",
    "Exits 2 if any check fails (a request invalid for its provider, a replay that does not match).",
  ],
  flags: {},
  schema: z.object({}),
  run: async (_args, context) => {
    // The transcript (and, without --db, the database) live in a temporary folder removed at the end.
    const folder = mkdtempSync(join(tmpdir(), "context-ledger-demo-"));
    try {
      const report = await runDemo(context, context.db ?? join(folder, "ledger.db"), folder);
      const out = (line: string) => printLine(context.io.out, line);
      if (context.json) out(JSON.stringify(report));
      else printReport(out, report, context.db !== undefined);
      const ok = report.verified === report.calls && report.calls > 0 && report.turns.every((t) => t.valid);
      return ok ? 0 : 2;
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  },
});
