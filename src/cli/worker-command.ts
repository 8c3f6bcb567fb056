/**
 * `worker --db postgres://… [--config FILE] [--model NAME] [--concurrency N]`: a dedicated process that runs the
 * background jobs (summaries) of a PostgreSQL database's durable queue until SIGINT or SIGTERM, then closes
 * gracefully: it takes no new job, lets running ones finish within `--grace` milliseconds and leaves the rest queued.
 */
import * as z from "zod";
import type { EngineEvent } from "../index.js";
import { nonEmpty, positiveInteger, UsageError } from "./cli-args.js";
import { defineCommand } from "./cli-command.js";
import { databaseOf, engineOn, ledgerKeyOf, openStores } from "./cli-engine.js";
import { printLine } from "./cli-io.js";
import { COMMAND_SUMMARIES } from "./command-summaries.js";

/** One line for a job event (text), or the event itself (JSON lines). */
function describe(e: EngineEvent): string | undefined {
  switch (e.type) {
    case "job_started":
      return `started ${e.key} (attempt ${e.attempt}/${e.attempts})`;
    case "job_committed":
      return `committed ${e.key}: plan v${e.planVersion} (${Math.round(e.durationMs)} ms)`;
    case "job_discarded":
      return `discarded ${e.key}: ${e.reason}`;
    case "job_failed":
      return `failed ${e.key} (attempt ${e.attempt}/${e.attempts}${e.final ? ", for good" : ", will retry"}): ${e.message}`;
    case "error":
      return `error (${e.operation}): ${e.message}`;
    default:
      return undefined;
  }
}

/** The `worker` command. */
export const workerCommand = defineCommand({
  name: "worker",
  summary: COMMAND_SUMMARIES.worker,
  usage: "worker --db postgres://… [--config FILE] [--model NAME] [--concurrency N] [--grace MS]",
  description: [
    "Takes background jobs (the summaries turns queued) from the database's durable queue and runs them, as",
    "any engine on the database may; a job whose worker died is retried after its visibility timeout. Runs until",
    "SIGINT or SIGTERM, then stops taking jobs, lets running ones finish within --grace milliseconds (default",
    "10000) and leaves the rest queued. Use the same --config (summarizer, strategies) as the harness. Prints one",
    "line per job event on standard error (JSON lines on standard output with --json).",
  ],
  flags: {
    config: {
      type: "string",
      value: "FILE",
      help: "pipeline config (JSON or YAML): the summarizer and strategies",
    },
    model: { type: "string", value: "NAME", help: "model whose tokenizer counts tokens" },
    concurrency: { type: "string", value: "N", help: "jobs run at once (default 1)" },
    grace: { type: "string", value: "MS", help: "how long a stop waits for running jobs (default 10000)" },
  },
  schema: z.object({
    config: nonEmpty.exactOptional(),
    model: nonEmpty.exactOptional(),
    concurrency: positiveInteger.exactOptional(),
    grace: positiveInteger.exactOptional(),
  }),
  run: async (args, context) => {
    const database = databaseOf(context);
    if (!/^postgres(ql)?:\/\//i.test(database)) {
      throw new UsageError(
        "worker needs a PostgreSQL database (--db postgres://…): only it keeps a durable queue",
        {
          field: "--db",
        },
      );
    }
    const stores = await openStores(database, false);
    const listener = (e: EngineEvent) => {
      if (context.json) {
        if (e.type.startsWith("job_") || e.type === "error") printLine(context.io.out, JSON.stringify(e));
        return;
      }
      const line = describe(e);
      if (line !== undefined) printLine(context.io.err, line);
    };
    try {
      const ledgerKey = ledgerKeyOf(context);
      const engine = await engineOn(stores, {
        ...(args.config === undefined ? {} : { config: args.config }),
        ...(args.model === undefined ? {} : { model: args.model }),
        ...(ledgerKey === undefined ? {} : { ledgerKey }),
        jobs: {
          runner: "queue",
          ...(args.concurrency === undefined ? {} : { concurrency: args.concurrency }),
          ...(args.grace === undefined ? {} : { closeTimeoutMs: args.grace }),
        },
        events: listener,
      });
      await engine.startJobs();
      if (!context.json)
        printLine(context.io.err, `worker: taking jobs from ${database.replace(/:[^:@/]*@/, ":***@")}`);
      const stop = context.io.stopRequested ?? (() => new Promise<string>(() => {}));
      const signal = await stop();
      if (!context.json) printLine(context.io.err, `worker: ${signal}, finishing running jobs`);
      await engine.close();
      if (!context.json) printLine(context.io.err, "worker: stopped");
      return 0;
    } finally {
      await stores.close();
    }
  },
});
