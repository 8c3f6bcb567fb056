/**
 * `ingest FILE|- --thread ID`: appends a JSONL transcript to a thread. The whole text is parsed and validated
 * before anything is written, and the append is one atomic batch, so a bad line (malformed JSON, an unknown
 * role, a result without its call) fails the whole file with its line number and leaves the thread as it was.
 */
import { readFile } from "node:fs/promises";
import * as z from "zod";
import { ValidationError } from "../errors/ledger-error.js";
import type { ContextEngine, MessageInput, Stores } from "../index.js";
import { hashMessageContent } from "../log/canonical-json.js";
import { atTranscriptLine, parseTranscriptLines } from "../log/import-jsonl.js";
import { ThreadLog } from "../log/thread-log.js";
import { decodeUtf8 } from "../log/utf8-text.js";
import { nonEmpty } from "./cli-args.js";
import { type CliContext, defineCommand } from "./cli-command.js";
import { withEngine } from "./cli-engine.js";
import { printLine } from "./cli-io.js";
import { COMMAND_SUMMARIES } from "./command-summaries.js";
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

/**
 * Refuses a transcript the thread already holds (every message, or half of them starting with the first, by
 * content hash): ingesting a file twice would repeat the conversation, a second system prompt mid-thread.
 */
async function refuseDuplicate(
  stores: Stores,
  thread: string,
  source: string,
  inputs: ReadonlyArray<MessageInput>,
): Promise<void> {
  if (inputs.length === 0 || (await stores.log.length(thread)) === 0) return;
  // A file that is wrong on its own (a result without its call…) gets that error from the append instead.
  try {
    ThreadLog.from(thread, inputs);
  } catch {
    return;
  }
  const seqOf = new Map<string, number>();
  for (const { message } of await stores.log.read(thread)) {
    if (!seqOf.has(message.hash)) seqOf.set(message.hash, message.seq);
  }
  const held = inputs.map((m) => seqOf.get(hashMessageContent(m.role, m.parts)));
  const count = held.filter((seq) => seq !== undefined).length;
  if (count < inputs.length && !(held[0] !== undefined && count * 2 >= inputs.length)) return;
  const first = held.find((seq) => seq !== undefined);
  throw new ValidationError(
    `thread ${JSON.stringify(thread)} already holds ${count} of the ${inputs.length} messages in ${source} (the first from seq ${first}): ingesting it again would repeat them; pass --allow-duplicate to append anyway`,
    { threadId: thread, field: "FILE" },
  );
}

/** Parses `text` completely, then appends it to the thread in one atomic batch. */
export async function ingestText(
  engine: ContextEngine,
  context: CliContext,
  input: {
    readonly thread: string;
    readonly text: string;
    readonly source: string;
    /** When given, a transcript the thread already holds is refused (see `refuseDuplicate`). */
    readonly stores?: Stores;
  },
): Promise<IngestOutcome> {
  const bar = progressBar(context.io, input.text.length, input.text.length >= LARGE_FILE_CHARS);
  try {
    const options = { source: input.source };
    const parsed = parseTranscriptLines(input.text, options, (consumed) => bar.update(consumed, "parsing"));
    if (input.stores !== undefined)
      await refuseDuplicate(input.stores, input.thread, input.source, parsed.inputs);
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
  summary: COMMAND_SUMMARIES.ingest,
  usage: "ingest FILE|- --thread ID [--allow-duplicate]",
  description: [
    "Appends a JSONL transcript (one message per line, OpenAI-chat-like: role, content, tool_calls,",
    "tool_call_id) to the thread, after the messages it already holds. The whole file is checked first: a bad",
    "line fails the whole file with its line number and nothing is appended. A file whose messages the thread",
    "already holds (all of them, or half starting with the first, by content) is refused unless",
    "--allow-duplicate is given.",
  ],
  positionals: [{ name: "FILE", help: "the transcript, or - to read standard input" }],
  flags: {
    thread: { type: "string", value: "ID", help: "thread to append to (created when new)" },
    "allow-duplicate": { type: "boolean", help: "append even when the thread already holds these messages" },
  },
  schema: z.object({ FILE: nonEmpty, thread: nonEmpty, "allow-duplicate": z.literal(true).exactOptional() }),
  run: async (args, context) => {
    const text = await readSource(args.FILE, context);
    const source = args.FILE === "-" ? "stdin" : args.FILE;
    const outcome = await withEngine(context, {}, (engine, stores) =>
      ingestText(engine, context, {
        thread: args.thread,
        text,
        source,
        ...(args["allow-duplicate"] === true ? {} : { stores }),
      }),
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
