/**
 * Import and export of JSONL transcripts: one message per line, in the OpenAI-chat-like shape of the files in
 * `shared/data/trajectories` (see `transcript-line-schema.ts`).
 */
import { readFileSync } from "node:fs";
import type * as z from "zod";
import { ValidationError } from "../errors/ledger-error.js";
import type { Message, MessageInput, MessageMeta, Part, ToolCallPart } from "./message.js";
import { formatIssuePath } from "./message-schema.js";
import type { ThreadLog } from "./thread-log.js";
import {
  type TranscriptAssistantLine,
  type TranscriptLine,
  type TranscriptToolCall,
  transcriptKeysByRole,
  transcriptLineSchema,
} from "./transcript-line-schema.js";
import { decodeUtf8 } from "./utf8-text.js";

/** Options of the transcript import functions. */
export interface TranscriptOptions {
  /** Where the text came from (a file path, a URL); stored as `meta.source` and named in error messages. */
  readonly source?: string;
}

/** A transcript parsed line by line: the message inputs and the 1-based line each came from. */
export interface ParsedTranscript {
  readonly inputs: ReadonlyArray<MessageInput>;
  readonly lines: ReadonlyArray<number>;
}

// JSON strings cannot hold raw CR or LF (they must be escaped), so every real CR/LF is a break between values.
// U+2028/U+2029 are legal inside JSON strings and are deliberately not treated as breaks.
const LINE_BREAK = /\r\n|\n|\r/g;
const BLANK = /^[ \t]*$/;

function fail(problem: string, line: number, field: string, options: TranscriptOptions | undefined): never {
  const where = options?.source === undefined ? "" : ` in ${options.source}`;
  throw new ValidationError(`invalid transcript line${where}: ${problem}`, { line, field });
}

/**
 * Parses one JSONL transcript line into a message input (no id: the log generates it), with `meta.sourceLine`
 * and, when given, `meta.source`. Throws `ValidationError` naming the line and the field.
 */
export function parseTranscriptLine(line: string, lineNo: number, options?: TranscriptOptions): MessageInput {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (error) {
    fail(`not valid JSON (${(error as Error).message})`, lineNo, "(line)", options);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    fail(`expected a JSON object, got ${describeValue(raw)}`, lineNo, "(line)", options);
  }
  const parsed = transcriptLineSchema.safeParse(raw);
  if (!parsed.success) {
    const { problem, field } = describeIssue(parsed.error.issues[0]!, raw as Record<string, unknown>);
    fail(problem, lineNo, field, options);
  }
  const meta: Record<string, unknown> = { sourceLine: lineNo };
  if (options?.source !== undefined) meta.source = options.source;
  if (parsed.data.role === "tool" && parsed.data.name !== undefined) meta.toolName = parsed.data.name;
  return { role: parsed.data.role, parts: partsOf(parsed.data), meta: meta as MessageMeta };
}

/**
 * Parses a whole JSONL transcript. Blank lines (including a trailing newline) are skipped; `\n`, `\r\n` and
 * `\r` all end a line. The first bad line throws `ValidationError` with its 1-based `line` and `field`.
 */
export function parseTranscript(text: string, options?: TranscriptOptions): MessageInput[] {
  return [...parseTranscriptLines(text, options).inputs];
}

/**
 * Parses a whole JSONL transcript like `parseTranscript`, keeping each message's line number; `onProgress` is
 * told how many characters of `text` have been consumed after each line (exactly, whatever the line breaks).
 */
export function parseTranscriptLines(
  text: string,
  options?: TranscriptOptions,
  onProgress?: (consumed: number) => void,
): ParsedTranscript {
  const bom = text.startsWith("\uFEFF") ? 1 : 0;
  const body = bom === 0 ? text : text.slice(1);
  const inputs: MessageInput[] = [];
  const lines: number[] = [];
  const breaks = new RegExp(LINE_BREAK.source, "g");
  let lineNo = 0;
  for (let start = 0; start <= body.length; ) {
    breaks.lastIndex = start;
    const found = breaks.exec(body);
    const end = found === null ? body.length : found.index;
    const next = found === null ? body.length + 1 : found.index + found[0].length;
    const line = body.slice(start, end);
    lineNo++;
    if (!BLANK.test(line)) {
      inputs.push(parseTranscriptLine(line, lineNo, options));
      lines.push(lineNo);
    }
    onProgress?.(bom + Math.min(next, body.length));
    start = next;
  }
  return { inputs, lines };
}

/**
 * Imports a transcript into a log in one atomic append: either every line is appended or, when any line is bad
 * (malformed, an orphaned tool result, a call id reused while pending, ...), nothing is and the thrown
 * `ValidationError` names that line. The given log value is never changed.
 *
 * @example
 * const log = importTranscript(ThreadLog.empty("t1"), '{"role":"user","content":"hi"}\n');
 * log.length; // 1
 */
export function importTranscript(log: ThreadLog, text: string, options?: TranscriptOptions): ThreadLog {
  const parsed = parseTranscriptLines(text, options);
  try {
    return log.append(parsed.inputs);
  } catch (error) {
    // The log generates ids by seq, so the id it names is the one the message would have had: keep it.
    throw atTranscriptLine(error, parsed, { ...options, withMessageId: true });
  }
}

/**
 * Reads a JSONL transcript file and imports it; `meta.source` defaults to the path. A file that is not UTF-8 is
 * refused with the line and byte offset of the first bad byte.
 */
export function readTranscriptFile(log: ThreadLog, path: string, options?: TranscriptOptions): ThreadLog {
  const text = decodeUtf8(readFileSync(path), path);
  return importTranscript(log, text, { source: options?.source ?? path });
}

/**
 * The transcript lines of a log's messages, the inverse of the import. A tool message with several results
 * becomes one line per result; text parts (and reasoning parts) are concatenated. Content the format cannot hold
 * (media, reasoning signatures, `isError`) throws `ValidationError` instead of being silently lost.
 */
export function toTranscriptLines(log: Pick<ThreadLog, "threadId" | "messages">): TranscriptLine[] {
  const out: TranscriptLine[] = [];
  for (const message of log.messages) out.push(...linesOf(message, log.threadId));
  return out;
}

/** Writes a log as a JSONL transcript (one JSON object per line, each line ending in `\n`). */
export function exportTranscript(log: Pick<ThreadLog, "threadId" | "messages">): string {
  return toTranscriptLines(log)
    .map((line) => `${JSON.stringify(line)}\n`)
    .join("");
}

// ---------------------------------------------------------------------------------------------------------------
// line → parts

type PartsByRole = {
  readonly [R in TranscriptLine["role"]]: (line: Extract<TranscriptLine, { role: R }>) => Part[];
};

const textOnly = (line: { readonly content: string }): Part[] => [{ type: "text", text: line.content }];

const partsByRole: PartsByRole = {
  system: textOnly,
  user: textOnly,
  assistant: assistantParts,
  tool: (line) => [{ type: "tool_result", callId: line.tool_call_id, content: line.content }],
};

function partsOf(line: TranscriptLine): Part[] {
  return (partsByRole[line.role] as (l: TranscriptLine) => Part[])(line);
}

function assistantParts(line: TranscriptAssistantLine): Part[] {
  const calls = line.tool_calls ?? [];
  const parts: Part[] = [];
  if (line.reasoning !== undefined) parts.push({ type: "reasoning", text: line.reasoning });
  // An empty content becomes a text part only when there is nothing else to say, so that the export of a
  // calls-only message gives `content: ""` back and a text-less message still holds one (empty) text part.
  if (line.content !== "" || calls.length === 0) parts.push({ type: "text", text: line.content });
  for (const call of calls)
    parts.push({ type: "tool_call", callId: call.id, name: call.name, args: call.arguments });
  return parts;
}

// ---------------------------------------------------------------------------------------------------------------
// errors

function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return `${typeof value} ${JSON.stringify(value)}`;
}

function valueAt(root: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let value = root;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function describeIssue(
  issue: z.core.$ZodIssue,
  raw: Record<string, unknown>,
): { problem: string; field: string } {
  const field = formatIssuePath(issue.path);
  const role = typeof raw.role === "string" ? raw.role : "?";
  switch (issue.code) {
    case "unrecognized_keys": {
      const allowed =
        issue.path.length === 0
          ? transcriptKeysByRole[role as TranscriptLine["role"]]
          : ["id", "name", "arguments"];
      const where = issue.path.length === 0 ? `a ${role} line` : field;
      return {
        problem: `unknown key(s) ${issue.keys.map((k) => JSON.stringify(k)).join(", ")} on ${where} (allowed: ${allowed?.join(", ")})`,
        field: formatIssuePath([...issue.path, issue.keys[0] ?? ""]),
      };
    }
    case "invalid_union":
      return {
        problem: `role must be one of "system", "user", "assistant", "tool" (got ${describeValue(raw.role)})`,
        field: field || "role",
      };
    case "invalid_type": {
      const value = valueAt(raw, issue.path);
      return {
        problem:
          value === undefined
            ? `${field} is required on a ${role} line`
            : `${field} must be ${issue.expected === "array" ? "an array" : `a ${issue.expected}`} (got ${describeValue(value)})`,
        field,
      };
    }
    default:
      return { problem: `${field} ${issue.message}`, field };
  }
}

/**
 * A log error about batch index i of a parsed transcript's append, as an error about the transcript line that
 * message came from (problem kept, field mapped to the line's own field name); anything else is returned as is.
 * The message id is left out unless `withMessageId`: a log that generates random ids names one never stored.
 */
export function atTranscriptLine(
  error: unknown,
  parsed: ParsedTranscript,
  options?: TranscriptOptions & { readonly withMessageId?: boolean },
): unknown {
  if (!(error instanceof ValidationError) || error.where.index === undefined) return error;
  const line = parsed.lines[error.where.index];
  const input = parsed.inputs[error.where.index];
  if (line === undefined || input === undefined) return error;
  // The log appends its location as a " (at ...)" suffix; keep only the problem and give our own location.
  const at = error.message.lastIndexOf(" (at ");
  const problem = at >= 0 ? error.message.slice(0, at) : error.message;
  const source = options?.source === undefined ? "" : ` in ${options.source}`;
  const { threadId, messageId } = error.where;
  return new ValidationError(
    `transcript line${source} rejected by the log: ${problem}`,
    {
      ...(threadId === undefined ? {} : { threadId }),
      line,
      ...(messageId === undefined || options?.withMessageId !== true ? {} : { messageId }),
      field: lineFieldOf(error.where.field, input),
    },
    { cause: error },
  );
}

/** Maps a message field (`parts[2].callId`) to the transcript line field it came from (`tool_calls[0].id`). */
function lineFieldOf(field: string | undefined, input: MessageInput): string {
  const match = field === undefined ? null : /^parts\[(\d+)\](?:\.(\w+))?$/.exec(field);
  if (match === null) return field ?? "(line)";
  const partIndex = Number(match[1]);
  const part = input.parts[partIndex];
  if (part === undefined) return field ?? "(line)";
  if (part.type === "tool_call") {
    const callIndex = input.parts.slice(0, partIndex).filter((p) => p.type === "tool_call").length;
    const key = ({ callId: "id", name: "name", args: "arguments" } as Record<string, string>)[match[2] ?? ""];
    return key === undefined ? `tool_calls[${callIndex}]` : `tool_calls[${callIndex}].${key}`;
  }
  if (part.type === "tool_result") return match[2] === "content" ? "content" : "tool_call_id";
  if (part.type === "reasoning") return "reasoning";
  return "content";
}

// ---------------------------------------------------------------------------------------------------------------
// message → lines

function unsupported(message: Message, threadId: string, partIndex: number, what: string): never {
  throw new ValidationError(`cannot export ${what} to a JSONL transcript (the format has no place for it)`, {
    threadId,
    messageId: message.id,
    field: `parts[${partIndex}]`,
  });
}

function linesOf(message: Message, threadId: string): TranscriptLine[] {
  let content = "";
  let reasoning: string | undefined;
  const calls: TranscriptToolCall[] = [];
  const results: TranscriptLine[] = [];
  message.parts.forEach((part, i) => {
    if (part.type === "text") content += part.text;
    else if (part.type === "tool_call") calls.push(callLine(part));
    else if (part.type === "media") unsupported(message, threadId, i, "a media part");
    else if (part.type === "reasoning") {
      if (part.signature !== undefined || part.redacted !== undefined) {
        unsupported(message, threadId, i, "a signed or redacted reasoning part");
      }
      reasoning = (reasoning ?? "") + part.text;
    } else {
      if (part.isError === true) unsupported(message, threadId, i, "an error flag on a tool result");
      const name = message.meta.toolName;
      results.push({
        role: "tool",
        content: part.content,
        tool_call_id: part.callId,
        ...(typeof name === "string" ? { name } : {}),
      });
    }
  });
  if (message.role === "tool") return results;
  if (message.role !== "assistant") return [{ role: message.role, content }];
  return [
    {
      role: "assistant",
      content,
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
      ...(reasoning === undefined ? {} : { reasoning }),
    },
  ];
}

function callLine(part: ToolCallPart): TranscriptToolCall {
  return { id: part.callId, name: part.name, arguments: part.args };
}
