/**
 * `prepare --thread ID --budget TOKENS [--format …]`: the harness step from the command line. Compacts as
 * needed, commits, renders, records the call and prints `{"callId", "request", "stats"}` as JSON; the call id
 * is what `replay --call` takes.
 */
import * as z from "zod";
import { formatName, nonEmpty, positiveInteger } from "./cli-args.js";
import { defineCommand } from "./cli-command.js";
import { requireThread, withEngine } from "./cli-engine.js";
import { COMMAND_SUMMARIES } from "./command-summaries.js";
import { compactCounts, PIPELINE_FLAGS } from "./compact-command.js";
import { FORMAT_FLAG, printJson } from "./render-command.js";

/** The `prepare` command. */
export const prepareCommand = defineCommand({
  name: "prepare",
  summary: COMMAND_SUMMARIES.prepare,
  usage:
    "prepare --thread ID --budget TOKENS [--format openai|anthropic|responses] [--model NAME] [--config FILE] [--inject TEXT …]",
  description: [
    "Does what a harness does before every model call: compacts the thread so the request has at most TOKENS",
    "tokens (free strategies and the default extractive summaries in the turn; model summaries in the",
    "background, finished before the command exits, or in the turn when nothing else fits), commits the plan,",
    'records the call for replay and prints {"callId", "request", "stats"} as JSON; stats.states is every',
    "message's final state under the plan sent (each message once, as explain counts). A compaction aims at",
    "80 % of the budget (the default pipeline's goalRatio), so the next calls fit without compacting again.",
    "It fails (exit 1) only when the protected core (system prompt, pinned messages, pending calls, the task",
    "and the newest user message, each cut to an excerpt when it alone is too large) cannot fit.",
  ],
  flags: {
    ...PIPELINE_FLAGS,
    format: FORMAT_FLAG,
    inject: {
      type: "string",
      value: "TEXT",
      repeatable: true,
      help: "per-turn content placed at the end of the request (never stored in the log)",
    },
  },
  schema: z.object({
    thread: nonEmpty,
    budget: positiveInteger,
    format: formatName.default("openai"),
    model: nonEmpty.exactOptional(),
    config: nonEmpty.exactOptional(),
    inject: z.array(z.string()).exactOptional(),
  }),
  run: async (args, context) => {
    await withEngine(context, args, async (engine, stores, database) => {
      await requireThread(stores, args.thread, database);
      const inForce = (await stores.plans.versions(args.thread)).at(-1) ?? 0;
      const turn = await engine.prepareTurn(args.thread, {
        format: args.format,
        budget: args.budget,
        ...(args.model === undefined ? {} : { model: args.model }),
        ...(args.inject === undefined ? {} : { injected: args.inject }),
      });
      // Counted per message after precedence, as compact, explain, diff and the call record count them (the
      // turn's own figure sums the new actions' spans, which counts a message summarized and dropped twice).
      const counts = compactCounts(await engine.diff(args.thread, inForce, turn.stats.planVersion));
      const stats = { ...turn.stats, actionsByKind: counts.actionsByKind, states: counts.states };
      // Printed before the background summaries finish: a harness can send the request meanwhile.
      printJson(context.io.out, { callId: turn.callId, request: turn.request, stats });
    });
    return 0;
  },
});
