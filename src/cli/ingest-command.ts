/**
 * `ingest FILE|- --thread ID`: appends a JSONL transcript to a thread. The whole text is parsed and validated
 * before anything is written, and the append is one atomic batch, so a bad line (malformed JSON, an unknown
 * role, a result without its call) fails the whole file with its line number and leaves the thread as it was.
 */
import { readFile } from "node:fs/promises";
import { z } from "zod";
import { atTranscriptLine, type ContextEngine, parseTranscriptLines, ValidationError } from "../index.js";
import { decodeUtf8 } from "../log/utf8-text.js";
import { nonEmpty } from "./cli-args.js";
import { type CliContext, defineCommand } from "./cli-command.js";
import { withEngine } from "./cli-engine.js";
import { printLine } from "./cli-io.js";
import { progressBar } from "./progress-bar.js";

/** Files from this size on get a progress bar (when standard error is a terminal). */
const LARGE_FILE_CHARS = 1_000_000;

async function readSource(file: string, context: CliContext): Promise<string> {
  if (file === "-") return context.io.readStdin();
  let bytes: Uint8Array;
  try {
    bytes = await readFile(file);
  } catch (error) {
    throw new ValidationError(`cannot read transcript ${file}: ${(error as Error).message}`, {
      field: "FILE",
    });
  }
  return decodeUtf8(bytes, file);
}

/** What an ingest wrote. */
export interface IngestOutcome {
  readonly thread: string;
  readonly source: string;
  readonly appended: number;
  readonly fromSeq: number;
  readonly length: number;
}

/** Parses `text` completely, then appends it to the thread in one atomic batch. */
export async function ingestText(
  engine: ContextEngine,
  context: CliContext,
  input: { readonly thread: string; readonly text: string; readonly source: string },
): Promise<IngestOutcome> {
  const bar = progressBar(context.io, input.text.length, input.text.length >= LARGE_FILE_CHARS);
  try {
    const options = { source: input.source };
    const parsed = parseTranscriptLines(input.text, options, (consumed) => bar.update(consumed, "parsing"));
    bar.update(input.text.length, `appending ${parsed.inputs.length} messages`);
    const result = await engine.append(input.thread, parsed.inputs).catch((error: unknown) => {
      throw atTranscriptLine(error, parsed, options);
    });
    return {
      thread: input.thread,
      source: input.source,
      appended: result.ids.length,
      fromSeq: result.fromSeq,
      length: result.logSeq,
    };
  } finally {
    bar.finish();
  }
}

/** The `ingest` command. */
export const ingestCommand = defineCommand({
  name: "ingest",
  summary: "append a JSONL transcript to a thread (all lines or none)",
  usage: "ingest FILE|- --thread ID",
  description: [
    "Appends a JSONL transcript (one message per line, OpenAI-chat-like: role, content, tool_calls,",
    "tool_call_id) to the thread, after the messages it already holds. The whole file is checked first: a bad",
    "line fails the whole file with its line number and nothing is appended.",
  ],
  positionals: [{ name: "FILE", help: "the transcript, or - to read standard input" }],
  flags: { thread: { type: "string", value: "ID", help: "thread to append to (created when new)" } },
  schema: z.object({ FILE: nonEmpty, thread: nonEmpty }),
  run: async (args, context) => {
    const text = await readSource(args.FILE, context);
    const source = args.FILE === "-" ? "stdin" : args.FILE;
    const outcome = await withEngine(context, {}, (engine) =>
      ingestText(engine, context, { thread: args.thread, text, source }),
    );
    if (context.json) {
      const { thread, appended, fromSeq, length } = outcome;
      printLine(context.io.out, JSON.stringify({ thread, source, appended, fromSeq, length }));
    } else {
      printLine(
        context.io.out,
        `appended ${outcome.appended} message(s) from ${source} to thread ${JSON.stringify(args.thread)} (log length ${outcome.length})`,
      );
    }
    return 0;
  },
});
