/**
 * `render --thread ID [--plan VERSION] [--format openai|anthropic|responses]`: prints the request body a
 * committed plan version gives, as JSON on stdout (OpenAI: `{"messages": […]}`; Anthropic:
 * `{"system": …, "messages": […]}`; Responses: `{"instructions": …, "input": […]}`).
 */
import * as z from "zod";
import { formatName, nonEmpty, planVersion } from "./cli-args.js";
import { defineCommand } from "./cli-command.js";
import { requireThread, withEngine } from "./cli-engine.js";
import { printLine } from "./cli-io.js";
import { COMMAND_SUMMARIES } from "./command-summaries.js";

/** The `--format` flag. */
export const FORMAT_FLAG = {
  type: "string",
  value: "FORMAT",
  help: "request shape: openai (Chat Completions, default), anthropic (Messages) or responses (OpenAI Responses)",
} as const;

/** Prints a JSON value on stdout, indented for people (machines parse it the same). */
export function printJson(write: (text: string) => void, value: unknown): void {
  printLine(write, JSON.stringify(value, null, 2));
}

/** The `render` command. */
export const renderCommand = defineCommand({
  name: "render",
  summary: COMMAND_SUMMARIES.render,
  usage: "render --thread ID [--plan VERSION] [--format openai|anthropic|responses]",
  description: [
    "Renders the thread's log under a committed plan version (default: the latest; 0 is the uncompacted log)",
    "and prints the provider request body as JSON on stdout, with or without --json.",
  ],
  flags: {
    thread: { type: "string", value: "ID", help: "the thread" },
    plan: { type: "string", value: "VERSION", help: "plan version to render (default: the latest)" },
    format: FORMAT_FLAG,
  },
  schema: z.object({
    thread: nonEmpty,
    plan: planVersion.exactOptional(),
    format: formatName.default("openai"),
  }),
  run: async (args, context) => {
    const request = await withEngine(context, { readOnly: true }, async (engine, stores, database) => {
      await requireThread(stores, args.thread, database);
      const rendered = await engine.render(args.thread, {
        format: args.format,
        ...(args.plan === undefined ? {} : { planVersion: args.plan }),
      });
      return rendered.request;
    });
    printJson(context.io.out, request);
    return 0;
  },
});
