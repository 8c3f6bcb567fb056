/**
 * `compact --thread ID --budget TOKENS`: runs the whole pipeline on a thread's stored history so the rendered
 * request has at most TOKENS tokens, and commits the plan. A budget nothing can meet fails with the engine's
 * "over by N" message and commits nothing.
 */
import * as z from "zod";
import type { ActionKind, CompactResult, ContextEngine, FateCounts, PlanDiffResult } from "../index.js";
import { describeFates } from "../plan/final-states.js";
import { nonEmpty, positiveInteger } from "./cli-args.js";
import { defineCommand } from "./cli-command.js";
import { requireThread, withEngine } from "./cli-engine.js";
import { printLine } from "./cli-io.js";
import { COMMAND_SUMMARIES } from "./command-summaries.js";

/** Flags shared by the commands that run the pipeline. */
export const PIPELINE_FLAGS = {
  thread: { type: "string", value: "ID", help: "the thread" },
  budget: {
    type: "string",
    value: "TOKENS",
    help: "the rendered request must have at most this many tokens",
  },
  model: {
    type: "string",
    value: "NAME",
    help: "model whose tokenizer counts (e.g. gpt-4o, claude-sonnet-4-5; default: o200k_base)",
  },
  config: {
    type: "string",
    value: "FILE",
    help: "pipeline config (JSON or YAML) instead of the default pipeline",
  },
} as const;

const VERBS: Readonly<Record<Exclude<ActionKind, "include">, string>> = {
  clear: "cleared",
  summarize: "summarized",
  externalize: "externalized",
  drop: "dropped",
};

/** `cleared 9, summarized 50, externalized 0, dropped 0` (messages whose final state became each kind). */
export function describeActions(byKind: Readonly<Record<ActionKind, number>>): string {
  return Object.entries(VERBS)
    .map(([kind, verb]) => `${verb} ${byKind[kind as ActionKind]}`)
    .join(", ");
}

function percent(before: number, after: number): string {
  return before === 0 ? "0%" : `${(((after - before) / before) * 100).toFixed(1)}%`;
}

/**
 * What a compaction did, counted per message after precedence: each message whose final state changed is
 * counted once, under its new state, and `states` holds every message's final state under the plan in force
 * (the figures `explain`, `diff`, the summary header and the call record show).
 */
export interface CompactCounts {
  readonly actionsByKind: Readonly<Record<ActionKind, number>>;
  readonly states: FateCounts;
}

/** Counts a compaction from the diff of the previous plan version to the one in force. */
export function compactCounts(change: PlanDiffResult): CompactCounts {
  const actionsByKind: Record<ActionKind, number> = {
    include: 0,
    clear: 0,
    summarize: 0,
    externalize: 0,
    drop: 0,
  };
  for (const c of change.diff.changes) actionsByKind[c.to.kind]++;
  return { actionsByKind, states: change.states.to };
}

/** The counts of a compaction the engine just made (a diff of the plan versions it reports). */
export async function countCompaction(engine: ContextEngine, r: CompactResult): Promise<CompactCounts> {
  return compactCounts(await engine.diff(r.threadId, r.previousVersion, r.planVersion));
}

function report(thread: string, budget: number, r: CompactResult, counts: CompactCounts): string[] {
  const head = r.changed
    ? `compacted thread ${JSON.stringify(thread)}: plan v${r.planVersion} committed (was v${r.previousVersion})`
    : `thread ${JSON.stringify(thread)} already fits: plan v${r.planVersion} stays in force`;
  return [
    head,
    `tokens: ${r.tokensBefore} → ${r.tokensAfter} (${percent(r.tokensBefore, r.tokensAfter)}; budget ${budget}) over ${r.logSeq} message(s)`,
    `actions (messages): ${describeActions(counts.actionsByKind)}`,
    `messages by state: ${describeFates(counts.states)}`,
  ];
}

/** The machine form of a compaction. */
export function compactJson(
  thread: string,
  budget: number,
  r: CompactResult,
  counts: CompactCounts,
): Record<string, unknown> {
  return {
    thread,
    budget,
    changed: r.changed,
    planVersion: r.planVersion,
    previousVersion: r.previousVersion,
    logSeq: r.logSeq,
    tokensBefore: r.tokensBefore,
    tokensAfter: r.tokensAfter,
    actionsByKind: counts.actionsByKind,
    states: counts.states,
  };
}

/** The `compact` command. */
export const compactCommand = defineCommand({
  name: "compact",
  summary: COMMAND_SUMMARIES.compact,
  usage: "compact --thread ID --budget TOKENS [--model NAME] [--config FILE]",
  description: [
    "Runs the compaction pipeline (model strategies included) on the thread's stored history so that the",
    "rendered request has at most TOKENS tokens, and commits the plan as a new version. Prints the tokens",
    "before (under the plan in force) and after, the messages newly cleared, summarized, externalized or",
    "dropped, and every message's final state (each message counted once, under its action after precedence,",
    "as explain and diff count it). A compaction aims at 80 % of TOKENS (the default pipeline's goalRatio:",
    "room for the next calls, so the prompt cache holds). It never compacts the protected core (system prompt,",
    "pinned messages, pending calls, the task, the newest user message) unless that alone does not fit; when",
    "nothing can make the request fit, it fails (exit 1) and commits nothing. prepare agrees at the same budget.",
  ],
  flags: PIPELINE_FLAGS,
  schema: z.object({
    thread: nonEmpty,
    budget: positiveInteger,
    model: nonEmpty.exactOptional(),
    config: nonEmpty.exactOptional(),
  }),
  run: async (args, context) => {
    const { thread, budget } = args;
    const { result, counts } = await withEngine(context, args, async (engine, stores, database) => {
      await requireThread(stores, thread, database);
      const result = await engine.compact(thread, { budget });
      return { result, counts: result.ok ? await countCompaction(engine, result) : undefined };
    });
    if (!result.ok || counts === undefined)
      throw result.error ?? new Error("compaction failed without an error");
    if (context.json) printLine(context.io.out, JSON.stringify(compactJson(thread, budget, result, counts)));
    else for (const line of report(thread, budget, result, counts)) printLine(context.io.out, line);
    return 0;
  },
});
