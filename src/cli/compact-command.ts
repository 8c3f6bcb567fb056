/**
 * `compact --thread ID --budget TOKENS`: runs the whole pipeline on a thread's stored history so the rendered
 * request has at most TOKENS tokens, and commits the plan. A budget nothing can meet fails with the engine's
 * "over by N" message and commits nothing.
 */
import { z } from "zod";
import type { ActionKind, CompactResult } from "../index.js";
import { nonEmpty, positiveInteger } from "./cli-args.js";
import { defineCommand } from "./cli-command.js";
import { requireThread, withEngine } from "./cli-engine.js";
import { printLine } from "./cli-io.js";

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

/** `cleared 9, summarized 50, externalized 0, dropped 0` (messages newly governed by each kind). */
export function describeActions(byKind: Readonly<Record<ActionKind, number>>): string {
  return Object.entries(VERBS)
    .map(([kind, verb]) => `${verb} ${byKind[kind as ActionKind]}`)
    .join(", ");
}

function percent(before: number, after: number): string {
  return before === 0 ? "0%" : `${(((after - before) / before) * 100).toFixed(1)}%`;
}

function report(thread: string, budget: number, r: CompactResult): string[] {
  const head = r.changed
    ? `compacted thread ${JSON.stringify(thread)}: plan v${r.planVersion} committed (was v${r.previousVersion})`
    : `thread ${JSON.stringify(thread)} already fits: plan v${r.planVersion} stays in force`;
  return [
    head,
    `tokens: ${r.tokensBefore} → ${r.tokensAfter} (${percent(r.tokensBefore, r.tokensAfter)}; budget ${budget}) over ${r.logSeq} message(s)`,
    `actions (messages): ${describeActions(r.report.actionsByKind)}`,
  ];
}

/** The machine form of a compaction. */
export function compactJson(thread: string, budget: number, r: CompactResult): Record<string, unknown> {
  return {
    thread,
    budget,
    changed: r.changed,
    planVersion: r.planVersion,
    previousVersion: r.previousVersion,
    logSeq: r.logSeq,
    tokensBefore: r.tokensBefore,
    tokensAfter: r.tokensAfter,
    actionsByKind: r.report.actionsByKind,
  };
}

/** The `compact` command. */
export const compactCommand = defineCommand({
  name: "compact",
  summary: "compact a thread to a token budget and commit a plan version",
  usage: "compact --thread ID --budget TOKENS [--model NAME] [--config FILE]",
  description: [
    "Runs the compaction pipeline (model strategies included) on the thread's stored history so that the",
    "rendered request has at most TOKENS tokens, and commits the plan as a new version. Prints the tokens",
    "before (under the plan in force) and after, and the messages newly cleared, summarized, externalized or",
    "dropped. When nothing can make the request fit, it fails (exit 1) and commits nothing.",
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
    const result = await withEngine(context, args, async (engine, stores, database) => {
      await requireThread(stores, thread, database);
      return engine.compact(thread, { budget });
    });
    if (!result.ok) throw result.error ?? new Error("compaction failed without an error");
    if (context.json) printLine(context.io.out, JSON.stringify(compactJson(thread, budget, result)));
    else for (const line of report(thread, budget, result)) printLine(context.io.out, line);
    return 0;
  },
});
