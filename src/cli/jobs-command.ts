/**
 * `jobs [--thread ID] [--json]`: how many background jobs (summaries) wait, run and failed after their attempts, on
 * the database's durable queue (PostgreSQL); a SQLite database runs its jobs in the process that queued them, so
 * none outlives it and the counts are zero.
 */
import * as z from "zod";
import { nonEmpty } from "./cli-args.js";
import { defineCommand } from "./cli-command.js";
import { withEngine } from "./cli-engine.js";
import { printLine } from "./cli-io.js";
import { COMMAND_SUMMARIES } from "./command-summaries.js";

/** The `jobs` command. */
export const jobsCommand = defineCommand({
  name: "jobs",
  summary: COMMAND_SUMMARIES.jobs,
  usage: "jobs [--thread ID]",
  description: [
    "Counts the background jobs of the thread (default: of every thread): queued (waiting, retries included),",
    'running, and failed after their attempts. With --json prints {"queued": n, "running": n, "failed": n}.',
  ],
  flags: {
    thread: { type: "string", value: "ID", help: "only this thread's jobs" },
  },
  schema: z.object({ thread: nonEmpty.exactOptional() }),
  run: async (args, context) => {
    const counts = await withEngine(context, { readOnly: true }, (engine) => engine.pendingJobs(args.thread));
    const { queued, running, failed } = counts;
    // The exact shape, spaces included: {"queued": n, "running": n, "failed": n}.
    if (context.json)
      printLine(context.io.out, `{"queued": ${queued}, "running": ${running}, "failed": ${failed}}`);
    else printLine(context.io.out, `${queued} queued, ${running} running, ${failed} failed`);
    return 0;
  },
});
