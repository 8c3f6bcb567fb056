/**
 * A summarizer without a model: it picks sentences, tool outcomes and references out of the span by simple,
 * deterministic rules. Useful as the free fallback when no model is configured or the model keeps failing.
 */
import { SummarizerError } from "../../errors/ledger-error.js";
import { deepFreeze } from "../../log/deep-freeze.js";
import type { Message, ToolCallPart, ToolResultPart } from "../../log/message.js";
import type { StructuredSummary } from "../../plan/compaction-plan.js";
import type { Summarizer, SummaryRequest, SummaryResult } from "../summarizer.js";
import { fitSummary, formatSummary, mergeSummaries, normalizeItem } from "./summary-format.js";

/** Options of `createExtractiveSummarizer`. */
export interface ExtractiveSummarizerOptions {
  /** Token count of a text, to respect `maxTokens` (default: ceil(chars / 4)). */
  readonly countTokens?: (text: string) => number;
  /** Longest item in characters (default 200). */
  readonly maxItemChars?: number;
}

const ID = "extractive";
const PROMPT_VERSION = "extractive/1";
const CONSTRAINTS_PER_MESSAGE = 4;
const DECISIONS_PER_MESSAGE = 2;

const CONSTRAINT =
  /\b(?:must|never|do not|don't|should|shouldn't|only|always|cannot|can't|required|make sure|ensure|avoid|not allowed)\b/i;
const DECISION =
  /\b(?:I will|I'll|I am going to|I'm going to|let me|let's|let us|I need to|we need to|decided|I think|it seems|the (?:issue|problem|bug|cause|fix|solution) (?:is|was)|root cause|this means|therefore|I have (?:located|found|fixed|updated|implemented|confirmed|verified)|found that|next,? I)\b/i;
const EXCEPTION_LINE = /^[\w.]*(?:Error|Exception)(?::|$)/;
const ERROR_LINE =
  /^(?:(?:error|fatal)\s*:|(?:FAILED|ERROR)\b)|command not found|no such file or directory|permission denied/i;
const CODE_EXTENSIONS =
  /\.(?:py|js|mjs|ts|tsx|jsx|json|md|txt|ya?ml|toml|c|h|cc|cpp|hpp|go|rs|java|rb|sh|pony|csv|html|css|sql|ini|cfg|xml|log)$/;

/**
 * A deterministic summarizer that extracts goals, constraints, decisions, tool outcomes, open items and
 * artifact references from a span without calling a model; the same request always gives the same bytes.
 *
 * @example
 * const summarizer = createExtractiveSummarizer({ countTokens: (t) => tokenizer.count(t) });
 * const { text } = await summarizer.summarize({ threadId: log.threadId, messages: log.messages, maxTokens: 600 });
 */
export function createExtractiveSummarizer(options: ExtractiveSummarizerOptions = {}): Summarizer {
  const fitOptions = {
    maxItemChars: options.maxItemChars ?? 200,
    ...(options.countTokens === undefined ? {} : { countTokens: options.countTokens }),
  };
  return Object.freeze({
    id: ID,
    promptVersion: PROMPT_VERSION,
    local: true,
    summarize(request: SummaryRequest): Promise<SummaryResult> {
      try {
        return Promise.resolve(summarizeNow(request, fitOptions));
      } catch (error) {
        return Promise.reject(error);
      }
    },
  });
}

function summarizeNow(
  request: SummaryRequest,
  fitOptions: { readonly maxItemChars: number; readonly countTokens?: (text: string) => number },
): SummaryResult {
  const where = { threadId: request.threadId };
  if (request.signal?.aborted === true)
    throw new SummarizerError(ID, "aborted", "the request was aborted", where);
  if (request.messages.length === 0)
    throw new SummarizerError(ID, "empty", "the span has no messages", where);
  const extracted = extract(request.messages);
  const merged =
    request.previous === undefined ? extracted : mergeSummaries(request.previous.structured, extracted);
  if (formatSummary(merged) === "") {
    throw new SummarizerError(ID, "empty", "nothing worth keeping was found in the span", where);
  }
  const fitted = fitSummary(merged, request.maxTokens, fitOptions);
  if (fitted === undefined) {
    const problem = `not even one shortened item fits in maxTokens ${request.maxTokens}; raise the budget`;
    throw new SummarizerError(ID, "failed", problem, where);
  }
  return deepFreeze({ text: formatSummary(fitted), structured: fitted });
}

interface Collected {
  goals: string[];
  constraints: string[];
  decisions: string[];
  toolOutcomes: string[];
  openItems: string[];
  artifacts: string[];
}

interface OpenCall {
  readonly call: ToolCallPart;
  readonly index: number;
}

function extract(messages: ReadonlyArray<Message>): StructuredSummary {
  const out: Collected = {
    goals: [],
    constraints: [],
    decisions: [],
    toolOutcomes: [],
    openItems: [],
    artifacts: [],
  };
  const open = new Map<string, OpenCall>();
  let lastQuestion: string | undefined;
  for (const message of messages) {
    const text = message.parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n");
    const found = sentences(text);
    if (message.role === "user" || message.role === "system") {
      const rules = found.filter((s) => CONSTRAINT.test(s) && s.split(" ").length >= 4);
      out.constraints.push(...rules.slice(0, CONSTRAINTS_PER_MESSAGE));
    }
    if (message.role === "user" && found.length > 0) out.goals.push(firstSentences(found));
    if (message.role === "assistant") out.decisions.push(...decisionsOf(found, message));
    if (message.role !== "system") {
      lastQuestion = lastQuestionOf(found, message.role) ?? lastQuestion;
      out.artifacts.push(...referencesIn(text));
    }
    for (const part of message.parts) {
      if (part.type === "tool_call") {
        open.set(part.callId, { call: part, index: out.toolOutcomes.length });
        out.toolOutcomes.push("");
        out.artifacts.push(...referencesIn(argStrings(part.args).join("\n")));
      } else if (part.type === "tool_result") {
        const pending = open.get(part.callId);
        open.delete(part.callId);
        const name = pending === undefined ? resultName(part, message) : callLabel(pending.call);
        const item = `${name} → ${outcomeOf(part)}`;
        if (pending === undefined) out.toolOutcomes.push(item);
        else out.toolOutcomes[pending.index] = item;
      }
    }
  }
  // Calls still waiting for their result are open work, not outcomes.
  const pendingSlots = new Set([...open.values()].map((o) => o.index));
  out.toolOutcomes = out.toolOutcomes.filter((_, i) => !pendingSlots.has(i));
  for (const { call } of open.values()) out.openItems.push(`waiting for the result of ${callLabel(call)}`);
  if (lastQuestion !== undefined) out.openItems.push(lastQuestion);
  return out;
}

/** Sentences of prose: code blocks and markup tags removed, one entry per sentence or line. */
function sentences(text: string): string[] {
  const prose = text
    .replace(/```[\s\S]*?(?:```|$)/g, "\n")
    .replace(/<\/?[A-Za-z_][\w-]*(?:\s[^<>]*)?>/g, "\n");
  const out: string[] = [];
  for (const rawLine of prose.split(/\r?\n/)) {
    const line = rawLine
      .replace(/^\s*(?:[-*•>]|\d+[.)])\s+/, "")
      .replace(/^(?:THOUGHT|Thought|DISCUSSION|Discussion):\s*/, "")
      .trim();
    for (const sentence of line.split(/(?<=[.!?])\s+(?=[A-Z0-9`"'([])/)) {
      const s = normalizeItem(sentence);
      if (s.length >= 8 && /[A-Za-z].*[A-Za-z].*[A-Za-z]/.test(s)) out.push(s);
    }
  }
  return out;
}

/** The opening of a message: its first one or two sentences, skipping lead-ins such as "Here is the issue:". */
function firstSentences(found: ReadonlyArray<string>): string {
  const content = found.filter((s) => !s.endsWith(":"));
  const pool = content.length > 0 ? content : found;
  const first = pool[0] ?? "";
  const second = pool[1];
  return second !== undefined && first.length < 80 ? `${first} ${second}` : first;
}

function decisionsOf(found: ReadonlyArray<string>, message: Message): string[] {
  const marked = found.filter((s) => DECISION.test(s)).slice(0, DECISIONS_PER_MESSAGE);
  if (marked.length > 0) return marked;
  // An assistant message without calls is an answer or a conclusion: its first sentence says what it decided.
  const hasCalls = message.parts.some((p) => p.type === "tool_call");
  return hasCalls || found[0] === undefined ? [] : [found[0]];
}

function lastQuestionOf(found: ReadonlyArray<string>, role: Message["role"]): string | undefined {
  const question = found.findLast((s) => s.endsWith("?"));
  return question === undefined ? undefined : `${role} asked: ${question}`;
}

function argStrings(args: string): string[] {
  try {
    const strings: string[] = [];
    const walk = (value: unknown): void => {
      if (typeof value === "string") strings.push(value);
      else if (value !== null && typeof value === "object") Object.values(value).forEach(walk);
    };
    walk(JSON.parse(args));
    return strings;
  } catch {
    return [args];
  }
}

/** `name(key=value, …)` with short values, so an outcome line names what was asked. */
function callLabel(call: ToolCallPart): string {
  let short: string;
  try {
    const parsed: unknown = JSON.parse(call.args);
    short =
      parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)
        ? Object.entries(parsed)
            .map(([k, v]) => `${k}=${clip(typeof v === "string" ? v : JSON.stringify(v), 40)}`)
            .join(", ")
        : clip(call.args, 80);
  } catch {
    short = clip(call.args, 80);
  }
  return `${call.name}(${clip(short, 100)})`;
}

function resultName(part: ToolResultPart, message: Message): string {
  return `${message.meta.toolName ?? "tool"} [${part.callId}]`;
}

function clip(text: string, max: number): string {
  const one = normalizeItem(text);
  return one.length <= max ? one : `${one.slice(0, max - 1)}…`;
}

/** The first meaningful line of a result, or its error line, marked as an error when it obviously is one. */
function outcomeOf(part: ToolResultPart): string {
  const head = part.content.slice(0, 4_000);
  const exit = /<returncode>\s*(-?\d+)\s*<\/returncode>/.exec(head)?.[1];
  const meaningful = (text: string) =>
    text
      .split(/\r?\n/)
      .map((line) => normalizeItem(line.replace(/<\/?[A-Za-z_][\w-]*>/g, " ")))
      .filter((line) => /[A-Za-z0-9]/.test(line) && !(exit !== undefined && line === exit));
  const lines = meaningful(head);
  // Python prints the exception last, after the traceback, so the end of a long result is searched too.
  const tail = part.content.length > head.length ? meaningful(part.content.slice(-2_000)) : [];
  const errorLine =
    tail.findLast((line) => EXCEPTION_LINE.test(line)) ??
    lines.find((line) => EXCEPTION_LINE.test(line)) ??
    lines.find((line) => ERROR_LINE.test(line));
  const failed =
    part.isError === true ||
    errorLine !== undefined ||
    (exit !== undefined && exit !== "0") ||
    /Traceback \(most recent call last\)/.test(head) ||
    jsonError(part.content);
  const line = clip((failed ? errorLine : undefined) ?? lines[0] ?? "(empty result)", 120);
  const code = exit === undefined ? "" : `exit ${exit}: `;
  return failed ? `error: ${code}${line}` : `${code}${line}`;
}

/** True for a JSON result whose `error` field is set; a regex, since tools often cut their JSON short. */
function jsonError(content: string): boolean {
  const head = content.trimStart().slice(0, 300);
  return head.startsWith("{") && /"error"\s*:\s*(?:"[^"\s][^"]*"|true|\{)/.test(head);
}

/** URLs, file paths and artifact ids mentioned in a text, in order of first mention. */
function referencesIn(text: string): string[] {
  const out: string[] = [];
  for (const match of text.matchAll(/\bartifact[ :]+((?=[\w:.-]*[\d_:-])[\w:.-]{3,}\w)/gi))
    out.push(`artifact ${match[1]}`);
  const urls = [...text.matchAll(/\bhttps?:\/\/[^\s"'`<>)\]}]+/g)].map((m) => m[0].replace(/[.,;:!?]+$/, ""));
  out.push(...urls);
  const rest = text.replace(/\bhttps?:\/\/[^\s"'`<>)\]}]+/g, " ");
  for (const raw of rest.split(/[\s"'`()<>[\]{},;=]+/)) {
    // Trailing punctuation and `:line[:column]` suffixes are not part of a path.
    const token = raw.replace(/[.:!?]+$/, "").replace(/:\d+(?::\d+)?$/, "");
    if (isPath(token)) out.push(token);
  }
  return out;
}

function isPath(token: string): boolean {
  if (token.length < 3 || token.length > 200 || !/[A-Za-z]/.test(token)) return false;
  if (/^(?:~|\.{1,2})?\/?[\w.@+-]+(?:\/[\w.@+-]+)+\/?$/.test(token)) {
    return /^(?:~|\.{1,2})?\//.test(token) || CODE_EXTENSIONS.test(token);
  }
  return /^[\w.-]+$/.test(token) && /^[A-Za-z_]/.test(token) && CODE_EXTENSIONS.test(token);
}
