/**
 * `diff --thread ID FROM TO`: what changed between two plan versions, message by message in log order, with
 * the strategy and reason on each side.
 */
import * as z from "zod";
import type { Stores } from "../index.js";
import { nonEmpty } from "./cli-args.js";
import { defineCommand } from "./cli-command.js";
import { requireThread, withEngine } from "./cli-engine.js";
import { printLine } from "./cli-io.js";
import { COMMAND_SUMMARIES } from "./command-summaries.js";

const versionRef = z
  .string()
  .regex(/^(\d+|latest)$/, "must be a plan version (an integer ≥ 0) or latest")
  .transform((v) => (v === "latest" ? ("latest" as const) : Number(v)));

/** A plan version as typed: a number, or `latest` for the newest committed one (0 when none is). */
export async function resolveVersion(
  stores: Stores,
  thread: string,
  ref: number | "latest",
): Promise<number> {
  if (ref !== "latest") return ref;
  const versions = await stores.plans.versions(thread);
  return versions[versions.length - 1] ?? 0;
}

/** The `diff` command. */
export const diffCommand = defineCommand({
  name: "diff",
  summary: COMMAND_SUMMARIES.diff,
  usage: "diff --thread ID FROM TO",
  description: [
    "Lists, in log order, each message whose treatment differs between plan versions FROM and TO (kept,",
    "cleared, summarized, externalized, dropped) with the strategy and reason on each side, then the messages",
    "per final state under each version (each message once, under its action after precedence, as explain",
    "counts them).",
  ],
  positionals: [
    { name: "FROM", help: "plan version to compare from (0 is the uncompacted log; or latest)" },
    { name: "TO", help: "plan version to compare to (or latest)" },
  ],
  flags: { thread: { type: "string", value: "ID", help: "the thread" } },
  schema: z.object({ thread: nonEmpty, FROM: versionRef, TO: versionRef }),
  run: async (args, context) => {
    const result = await withEngine(context, { readOnly: true }, async (engine, stores, database) => {
      await requireThread(stores, args.thread, database);
      const from = await resolveVersion(stores, args.thread, args.FROM);
      const to = await resolveVersion(stores, args.thread, args.TO);
      return engine.diff(args.thread, from, to);
    });
    if (context.json) {
      const { fromVersion, toVersion, changes } = result.diff;
      const { states } = result;
      printLine(
        context.io.out,
        JSON.stringify({ thread: args.thread, fromVersion, toVersion, changes, states }),
      );
    } else {
      printLine(context.io.out, result.text);
    }
    return 0;
  },
});
