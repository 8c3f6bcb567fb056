/**
 * `explain --thread ID [--plan VERSION]`: a table of every message under a plan version: kept, cleared,
 * summarized, externalized or dropped, its tokens, and the strategy and reason behind it.
 */
import * as z from "zod";
import type { ExplainFilter } from "../engine/explain.js";
import { describeTotals, explanationTable } from "../engine/explain.js";
import type { ContextEngine, Explanation } from "../index.js";
import { nonEmpty, planVersion } from "./cli-args.js";
import { defineCommand } from "./cli-command.js";
import { requireThread, withEngine } from "./cli-engine.js";
import { printLine } from "./cli-io.js";
import { COMMAND_SUMMARIES } from "./command-summaries.js";

/** An explanation plus what the plan's request costs as a whole (framing and synthetic messages included). */
export interface ExplainOutcome {
  readonly explanation: Explanation;
  readonly renderedTokens: number;
}

/** Explains a plan version (default: the latest) and counts its rendered request. */
export async function explainVersion(
  engine: ContextEngine,
  thread: string,
  version: number | undefined,
  filter: ExplainFilter = {},
): Promise<ExplainOutcome> {
  const explanation = await engine.explain(thread, {
    ...filter,
    ...(version === undefined ? {} : { planVersion: version }),
  });
  const rendered = await engine.render(thread, { format: "openai", planVersion: explanation.planVersion });
  return { explanation, renderedTokens: rendered.prompt.tokenCount };
}

/** The `explain` command. */
export const explainCommand = defineCommand({
  name: "explain",
  summary: COMMAND_SUMMARIES.explain,
  usage: "explain --thread ID [--plan VERSION] [--state STATE] [--grep TEXT] [--id ID]",
  description: [
    "Prints one row per message of the thread: what the plan version (default: the latest) does with it",
    "(kept, cleared, summarized, externalized or dropped), its own tokens, the start of its content, and the",
    "strategy and reason of the action governing it; three or more neighbours under the same action and reason",
    "are one line. Then the totals by state and the tokens of the rendered request. --state, --grep (text in the",
    'content, any case) and --id pick the rows ("where did X go?"); the totals still cover the whole plan.',
  ],
  flags: {
    thread: { type: "string", value: "ID", help: "the thread" },
    plan: { type: "string", value: "VERSION", help: "plan version to explain (default: the latest)" },
    state: {
      type: "string",
      value: "STATE",
      help: "only kept, cleared, summarized, externalized or dropped messages",
    },
    grep: { type: "string", value: "TEXT", help: "only messages whose content holds TEXT (any case)" },
    id: { type: "string", value: "ID", help: "only the message with this id" },
  },
  schema: z.object({
    thread: nonEmpty,
    plan: planVersion.exactOptional(),
    state: z
      .enum(["kept", "cleared", "summarized", "externalized", "dropped"], {
        error: "must be one of kept, cleared, summarized, externalized, dropped",
      })
      .exactOptional(),
    grep: nonEmpty.exactOptional(),
    id: nonEmpty.exactOptional(),
  }),
  run: async (args, context) => {
    const {
      explanation: e,
      renderedTokens,
      pending,
    } = await withEngine(context, { readOnly: true }, async (engine, stores, database) => {
      await requireThread(stores, args.thread, database);
      const filter = {
        ...(args.state === undefined ? {} : { state: args.state }),
        ...(args.grep === undefined ? {} : { grep: args.grep }),
        ...(args.id === undefined ? {} : { id: args.id }),
      };
      const outcome = await explainVersion(engine, args.thread, args.plan, filter);
      return { ...outcome, pending: await engine.pendingJobs(args.thread) };
    });
    const out = (line: string) => printLine(context.io.out, line);
    if (context.json) {
      out(JSON.stringify({ thread: e.threadId, ...e, renderedTokens, pendingJobs: pending }));
      return 0;
    }
    out(
      `thread ${JSON.stringify(e.threadId)}, plan v${e.planVersion}, ${e.logSeq} message(s); rendered request ${renderedTokens} tokens`,
    );
    if (e.rows.length === 0) out("no message matches");
    else for (const line of explanationTable(e.rows)) out(line);
    out(`totals: ${describeTotals(e)}`);
    if (pending.queued + pending.running > 0) {
      out(
        `summary pending: ${pending.queued} job(s) queued, ${pending.running} running; a newer plan version may follow`,
      );
    }
    if (pending.failed > 0) {
      out(
        `${pending.failed} background summary job(s) failed after their attempts (the plan stays as it is)`,
      );
    }
    return 0;
  },
});
