import * as z from "zod";
import type { Group } from "../log/groups.js";
import type { LogView } from "../log/log-view.js";
import type { ToolResultPart } from "../log/message.js";
import { sensitivityOfGroup } from "../log/sensitivity.js";
import type { PlanAction, SummarizationRecord } from "../plan/compaction-plan.js";
import { resolveForLog, type SeqResolution } from "../plan/resolve-for-log.js";
import { summaryText } from "../texts/placeholders.js";
import type { MessageCounter } from "../tokens/tokenizer.js";
import { compactable, groupTokens, untouched } from "./group-accounting.js";
import { parseOptions } from "./options.js";
import { nothingToDo, type Proposal, type Strategy, type StrategyContext } from "./strategy.js";

/** Options of `createToolResultCollapse`: JSON-shaped, so a pipeline config file can hold them. */
export interface ToolResultCollapseOptions {
  /** Strategy name in plan actions; default `toolResultCollapse`. */
  readonly name?: string;
  /** The newest N tool-call groups of the log stay verbatim; default 4. */
  readonly keepGroups?: number;
  /** Cap on a whole collapsed line, brackets included; default 200 (at least 32). */
  readonly maxLineChars?: number;
  /** Cap on one `tool → result` item; default 80. */
  readonly maxItemChars?: number;
  /** Groups costing fewer tokens than this stay verbatim; default 0. */
  readonly minGroupTokens?: number;
  /** Run only when more than `groups` groups would collapse, so the prefix changes in chunks, not every turn. */
  readonly trigger?: { readonly groups?: number };
}

/** The zod schema of `ToolResultCollapseOptions` (unknown keys rejected, counts are integers). */
export const toolResultCollapseOptionsSchema = z
  .strictObject({
    name: z.string().trim().min(1).exactOptional().meta({
      description: "Strategy name in plan actions and audit records.",
      default: "toolResultCollapse",
    }),
    keepGroups: z
      .number()
      .int()
      .positive()
      .exactOptional()
      .meta({ description: "The newest tool-call groups of the log stay verbatim.", default: 4 }),
    maxLineChars: z
      .number()
      .int()
      .min(32)
      .exactOptional()
      .meta({ description: "Cap on a whole collapsed line, brackets included.", default: 200 }),
    maxItemChars: z
      .number()
      .int()
      .positive()
      .exactOptional()
      .meta({ description: "Cap on one `tool → result` item of the line.", default: 80 }),
    minGroupTokens: z
      .number()
      .int()
      .nonnegative()
      .exactOptional()
      .meta({ description: "Groups costing fewer tokens than this stay verbatim.", default: 0 }),
    trigger: z
      .strictObject({
        groups: z.number().int().nonnegative().exactOptional().meta({
          description: "Run only when more than this many groups would collapse.",
          default: 0,
        }),
      })
      .readonly()
      .exactOptional()
      .meta({
        description: "Collapse in chunks, so the prompt prefix changes now and then rather than every turn.",
        defaultText: "`{ groups: 0 }`",
      }),
  })
  .readonly();

/** `summarizerId` of the records this strategy writes. */
export const COLLAPSE_SUMMARIZER_ID = "toolResultCollapse";
/** `promptVersion` of the records this strategy writes; bump it when the line format changes. */
export const COLLAPSE_PROMPT_VERSION = "collapse/1";

const PREFIX = "[tool results: ";
const SUFFIX = "]";
const SEPARATOR = "; ";
const LINE_BREAK = /\r\n|\n|\r/;

interface Settings {
  readonly name: string;
  readonly keepGroups: number;
  readonly maxLineChars: number;
  readonly maxItemChars: number;
  readonly minGroupTokens: number;
  readonly triggerGroups: number;
}

function settingsOf(options: unknown): Settings {
  const o = parseOptions(toolResultCollapseOptionsSchema, options, "toolResultCollapse");
  return {
    name: o.name ?? "toolResultCollapse",
    keepGroups: o.keepGroups ?? 4,
    maxLineChars: o.maxLineChars ?? 200,
    maxItemChars: o.maxItemChars ?? 80,
    minGroupTokens: o.minGroupTokens ?? 0,
    triggerGroups: o.trigger?.groups ?? 0,
  };
}

/** Cuts text to at most `max` characters, ending in `…` when cut (never inside a surrogate pair or after a space). */
export function clipText(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 0) return "";
  let cut = max - 1;
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--;
  return `${text.slice(0, cut).trimEnd()}…`;
}

/** Markup tags such as `<output>` or `</returncode>`: wrappers around a result, not its content. */
const TAG = /<\/?[A-Za-z][\w:.-]*(?:\s[^<>]*)?\/?>/g;
const MEANINGFUL = /[\p{L}\p{N}].*[\p{L}\p{N}]/u;

/**
 * The first line of a tool result that says something: markup tags removed, at least two letters or digits,
 * trimmed, whitespace runs made one space. Falls back to the first non-blank line.
 */
export function firstMeaningfulLine(content: string): string {
  let fallback = "";
  for (const raw of content.split(LINE_BREAK, 200)) {
    const line = raw.replace(TAG, " ").trim().replace(/\s+/g, " ");
    if (MEANINGFUL.test(line)) return line;
    if (fallback === "") fallback = raw.trim().replace(/\s+/g, " ");
  }
  return fallback;
}

/** One `tool → result` item (`tool ✗ error` for a failed call), capped at `max` characters. */
function itemText(toolName: string, result: ToolResultPart, max: number): string {
  const line = firstMeaningfulLine(result.content);
  const body = line === "" ? "(empty)" : line;
  return clipText(`${toolName} ${result.isError === true ? "✗" : "→"} ${body}`, max);
}

/**
 * The collapsed line: whole items while they fit, then `+N more`; when not even one item fits, the first one
 * is cut to the room left.
 */
export function collapseLine(items: ReadonlyArray<string>, maxLineChars: number): string {
  const room = maxLineChars - PREFIX.length - SUFFIX.length;
  const all = items.join(SEPARATOR);
  if (all.length <= room) return `${PREFIX}${all}${SUFFIX}`;
  let kept = 0;
  let line = "";
  for (const item of items) {
    const next = kept === 0 ? item : `${line}${SEPARATOR}${item}`;
    if (next.length + `${SEPARATOR}+${items.length - kept - 1} more`.length > room) break;
    line = next;
    kept++;
  }
  if (kept === 0) return `${PREFIX}${clipText(all, room)}${SUFFIX}`;
  return `${PREFIX}${line}${SEPARATOR}+${items.length - kept} more${SUFFIX}`;
}

/** Every call of a group in log order, each with the result the log paired it with. */
function callsWithResults(log: LogView, group: Group): Array<{ name: string; result: ToolResultPart }> {
  const results = new Map<string, ToolResultPart>();
  for (const seq of group.seqs) {
    const message = log.at(seq)!;
    if (message.role !== "tool") continue;
    const callSeqs = log.callSeqsOfParts(seq);
    message.parts.forEach((part, i) => {
      if (part.type === "tool_result") results.set(`${callSeqs[i]}\u0000${part.callId}`, part);
    });
  }
  const calls: Array<{ name: string; result: ToolResultPart }> = [];
  for (const seq of group.seqs) {
    for (const part of log.at(seq)!.parts) {
      const result = part.type === "tool_call" ? results.get(`${seq}\u0000${part.callId}`) : undefined;
      if (part.type === "tool_call" && result !== undefined) calls.push({ name: part.name, result });
    }
  }
  return calls;
}

/** The summarize action for one group, or undefined when its line would not be smaller than the group. */
function collapseGroup(
  log: LogView,
  group: Group,
  res: SeqResolution,
  counter: MessageCounter,
  s: Settings,
): PlanAction | undefined {
  const tokens = groupTokens(log, group, res, counter);
  if (tokens < s.minGroupTokens) return undefined;
  const items = callsWithResults(log, group).map((c) => itemText(c.name, c.result, s.maxItemChars));
  const record: SummarizationRecord = {
    kind: "summarize",
    summary: collapseLine(items, s.maxLineChars),
    summarizerId: COLLAPSE_SUMMARIZER_ID,
    promptVersion: COLLAPSE_PROMPT_VERSION,
    sensitivity: sensitivityOfGroup(log, group),
  };
  // The renderer sends the line as one synthetic assistant message; a collapse that saves nothing is skipped.
  const text = summaryText(record, group.seqs.length);
  if (counter.countMessage({ role: "assistant", parts: [{ type: "text", text }] }) >= tokens)
    return undefined;
  return {
    kind: "summarize",
    span: group.messageIds,
    record,
    strategy: s.name,
    reason: `tool-call group older than the last ${s.keepGroups} collapsed to one line (${items.length} call(s))`,
  };
}

/**
 * Creates the tool-result collapse strategy (free; proposes `summarize`): every tool-call group older than the
 * newest `keepGroups` becomes one line such as `[tool results: get_weather → sunny, 18°C; read_file ✗ No such
 * file]`, so the model keeps the trace at a fraction of the tokens. Only groups the plan leaves untouched are
 * collapsed, never pending or pinned ones, and only when the line is smaller. Deterministic. Throws
 * `ValidationError` naming the field on bad options.
 *
 * @example
 * const collapse = createToolResultCollapse({ keepGroups: 2, maxLineChars: 160, trigger: { groups: 8 } });
 */
export function createToolResultCollapse(options: ToolResultCollapseOptions = {}): Strategy {
  const s = settingsOf(options);
  const propose = ({ log, plan, counter }: StrategyContext): Proposal => {
    const res = resolveForLog(plan, log);
    const toolGroups = log.groups.filter((g) => g.kind === "tool_call");
    const actions: PlanAction[] = [];
    for (const group of toolGroups.slice(0, Math.max(0, toolGroups.length - s.keepGroups))) {
      if (!compactable(log, group) || !untouched(group, res)) continue;
      const action = collapseGroup(log, group, res, counter, s);
      if (action !== undefined) actions.push(action);
    }
    if (actions.length === 0) return nothingToDo("no older tool-call group is worth collapsing");
    if (actions.length <= s.triggerGroups) {
      return nothingToDo(`${actions.length} group(s) to collapse; waiting for more than ${s.triggerGroups}`);
    }
    return { actions };
  };
  return Object.freeze({ name: s.name, cost: "free", kinds: Object.freeze(["summarize"] as const), propose });
}
