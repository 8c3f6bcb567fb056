/**
 * `report --thread ID [--out FILE]`: writes one self-contained HTML audit report of a thread: a chart of every
 * recorded model call against its budget, the request each call sent beside the log messages it hid, plan
 * versions and a search ("where did X go?"). The report module loads only when this command runs.
 */
import * as z from "zod";
import { nonEmpty } from "./cli-args.js";
import { defineCommand } from "./cli-command.js";
import { withEngine } from "./cli-engine.js";
import { printLine } from "./cli-io.js";
import { COMMAND_SUMMARIES } from "./command-summaries.js";
import { type ProgressBar, progressBar } from "./progress-bar.js";

/** The default file name for a thread's report: its id with anything unsafe in a file name replaced. */
export function defaultReportPath(thread: string): string {
  return `${thread.replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 80)}.report.html`;
}

/** The `report` command. */
export const reportCommand = defineCommand({
  name: "report",
  summary: COMMAND_SUMMARIES.report,
  usage: "report --thread ID [--out FILE]",
  description: [
    "Writes one HTML file that works offline: a chart of every recorded model call (prompt tokens against the",
    "budget, calls that committed a new plan version marked); for any call, the request as the model saw it",
    "(replayed from the stored log and plan) beside the log messages it did not show verbatim, each cleared,",
    "summarized, externalized or dropped with its strategy and reason; the plan versions and what each changed;",
    "and a search box: type a text, see every message holding it and its fate at each call. With --json,",
    "stdout holds {thread, out, bytes, calls, planVersions, messages}.",
  ],
  flags: {
    thread: { type: "string", value: "ID", help: "the thread" },
    out: {
      type: "string",
      value: "FILE",
      help: "where to write the report (default: ./<thread>.report.html)",
    },
  },
  schema: z.object({ thread: nonEmpty, out: nonEmpty.exactOptional() }),
  run: async (args, context) => {
    const { writeReport, checkWritable } = await import("../report/index.js");
    const out = args.out ?? defaultReportPath(args.thread);
    // Before the database opens: a bad path fails at once, naming itself.
    checkWritable(out);
    let bar: ProgressBar | undefined;
    const onProgress = (done: number, total: number) => {
      bar ??= progressBar(context.io, total, total >= 50);
      bar.update(done, "plan versions and calls");
    };
    const written = await withEngine(context, { readOnly: true }, (engine, stores, database) =>
      writeReport({ engine, stores, database, onProgress }, args.thread, out),
    ).finally(() => bar?.finish());
    if (context.json) {
      const { path, ...counts } = written;
      printLine(context.io.out, JSON.stringify({ thread: args.thread, out: path, ...counts }));
      return 0;
    }
    printLine(
      context.io.out,
      `wrote ${written.path} (${Math.ceil(written.bytes / 1024)} KB): ${written.calls} call(s), ${written.planVersions} plan version(s), ${written.messages} message(s) of thread ${JSON.stringify(args.thread)}`,
    );
    return 0;
  },
});
