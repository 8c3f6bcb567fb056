/**
 * `ingest FILE|- --thread ID`: appends a JSONL transcript to a thread. The whole text is parsed and validated
 * before anything is written, and the append is one atomic batch, so a bad line (malformed JSON, an unknown
 * role, a result without its call) fails the whole file with its line number and leaves the thread as it was.
 */
import { readFile } from "node:fs/promises";
import { z } from "zod";
import { type ContextEngine, type MessageInput, parseTranscriptLine, ValidationError } from "../index.js";
import { nonEmpty } from "./cli-args.js";
import { type CliContext, defineCommand } from "./cli-command.js";
import { withEngine } from "./cli-engine.js";
import { printLine } from "./cli-io.js";
import { type ProgressBar, progressBar } from "./progress-bar.js";

/** Files from this size on get a progress bar (when standard error is a terminal). */
const LARGE_FILE_CHARS = 1_000_000;

// The same line rules as the library's transcript parser: JSON strings cannot hold raw CR or LF, so every CR,
// LF or CRLF ends a line; blank lines are skipped; a leading BOM is ignored.
const LINE_BREAK = /\r\n|\n|\r/;
const BLANK = /^[ \t]*$/;

/** Messages parsed from a transcript, with the 1-based line each came from. */
export interface ParsedTranscript {
  readonly inputs: ReadonlyArray<MessageInput>;
  readonly lines: ReadonlyArray<number>;
}

/** Parses a JSONL transcript line by line (reporting progress); the first bad line throws with its number. */
export function parseTranscriptText(text: string, source: string, bar: ProgressBar): ParsedTranscript {
  const inputs: MessageInput[] = [];
  const lines: number[] = [];
  let offset = 0;
  text
    .replace(/^\uFEFF/, "")
    .split(LINE_BREAK)
    .forEach((line, i) => {
      offset += line.length + 1;
      bar.update(offset, "parsing");
      if (BLANK.test(line)) return;
      inputs.push(parseTranscriptLine(line, i + 1, { source }));
      lines.push(i + 1);
    });
  return { inputs, lines };
}

/** The transcript field a message field came from: `parts[2].callId` of an assistant line is `tool_calls[0].id`. */
function transcriptField(field: string, input: MessageInput | undefined): string {
  const match = /^parts\[(\d+)\](?:\.(\w+))?$/.exec(field);
  const index = Number(match?.[1]);
  const part = input?.parts[index];
  if (match === null || part === undefined) return field;
  if (part.type === "tool_call") {
    const call = input!.parts.slice(0, index).filter((p) => p.type === "tool_call").length;
    const key = { callId: ".id", name: ".name", args: ".arguments" }[match[2] ?? ""] ?? "";
    return `tool_calls[${call}]${key}`;
  }
  if (part.type === "tool_result") return match[2] === "content" ? "content" : "tool_call_id";
  return part.type === "reasoning" ? "reasoning" : "content";
}

/** Re-throws a log error about batch index i as an error about the transcript line that message came from. */
function atLine(error: unknown, parsed: ParsedTranscript, source: string): unknown {
  if (!(error instanceof ValidationError) || error.where.index === undefined) return error;
  const line = parsed.lines[error.where.index];
  if (line === undefined) return error;
  const at = error.message.lastIndexOf(" (at ");
  const problem = at >= 0 ? error.message.slice(0, at) : error.message;
  // The message id in the log's error was generated for a message that was never stored: leave it out.
  const { threadId, field } = error.where;
  return new ValidationError(
    `transcript line in ${source} rejected by the log: ${problem}`,
    {
      ...(threadId === undefined ? {} : { threadId }),
      line,
      ...(field === undefined ? {} : { field: transcriptField(field, parsed.inputs[error.where.index]) }),
    },
    { cause: error },
  );
}

async function readSource(file: string, context: CliContext): Promise<string> {
  if (file === "-") return context.io.readStdin();
  try {
    return await readFile(file, "utf8");
  } catch (error) {
    throw new ValidationError(`cannot read transcript ${file}: ${(error as Error).message}`, {
      field: "FILE",
    });
  }
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
    const parsed = parseTranscriptText(input.text, input.source, bar);
    bar.update(input.text.length, `appending ${parsed.inputs.length} messages`);
    const result = await engine.append(input.thread, parsed.inputs).catch((error: unknown) => {
      throw atLine(error, parsed, input.source);
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
