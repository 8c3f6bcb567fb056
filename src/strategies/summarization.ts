import * as z from "zod";
import { SummarizerError, ValidationError } from "../errors/ledger-error.js";
import { canonicalJson, sha256Hex } from "../log/canonical-json.js";
import type { Message, Sensitivity } from "../log/message.js";
import { sensitivityOfMessage, stricterOf } from "../log/sensitivity.js";
import type { PlanAction } from "../plan/compaction-plan.js";
import { resolveForLog } from "../plan/resolve-for-log.js";
import { spanOfSeqs } from "../plan/span-seqs.js";
import { textTokenCounter } from "../texts/text-excerpt.js";
import { parseOptions } from "./options.js";
import type { Proposal, Strategy, StrategyContext, StrategyNote } from "./strategy.js";
import { type Summarizer, type SummaryCachePort, type SummaryResult, summaryCacheKey } from "./summarizer.js";
import {
  type Accounting,
  accountingOf,
  MIN_SUMMARY_TOKENS,
  type Placement,
  placements,
  type RoomSettings,
  spanLength,
  summaryTokens,
} from "./summary-room.js";
import { absorbable, type StackedSummary, summaryMemo } from "./summary-span.js";

/** JSON-shaped options of {@link createSummarization} (the summarizer and cache are passed beside them). */
export const summarizationOptionsSchema = z.strictObject({
  name: z
    .string()
    .trim()
    .min(1)
    .optional()
    .meta({ description: "Strategy name in plan actions and audit records.", default: "summarize" }),
  target: z.number().int().nonnegative().optional().meta({
    description: "Groups kept verbatim after a count-triggered summary (MAF's `target`).",
    defaultText: "no count trigger: summarize under token pressure only",
  }),
  threshold: z.number().int().nonnegative().optional().meta({
    description: "A count-triggered summary fires when more than `target + threshold` groups are verbatim.",
    default: 0,
  }),
  minKeepGroups: z
    .number()
    .int()
    .positive()
    .optional()
    .meta({ description: "Under token pressure, the newest groups that always stay verbatim.", default: 2 }),
  minSpanGroups: z.number().int().positive().optional().meta({
    description: "Don't summarize fewer groups than this in one go: a tiny span is not worth a model call.",
    default: 2,
  }),
  // A summary gets the room the goal leaves after the verbatim rest of the request (at least 64 tokens).
  maxSummaryTokens: z.number().int().positive().optional().meta({
    description: "Ceiling on a summary's tokens.",
    defaultText: "half of what the span costs, at most 8,000",
  }),
  // The span grows until the goal leaves that much: a line of summary keeps more of what happened than the same
  // tokens of an old tool output kept verbatim. The summary takes only what it needs of it.
  summaryShare: z.number().min(0).max(0.9).optional().meta({
    description: "The room a summary is given at least, as a share of the goal.",
    default: 0.5,
  }),
  // A new summary goes after the earlier ones, which stay byte-identical, so the request's leading tokens (a
  // provider's prompt cache) survive the compaction.
  maxStacked: z.number().int().positive().optional().meta({
    description:
      "The most summaries kept side by side; once there are this many (or the earlier ones leave less than a quarter of the summaries' room) the next summary absorbs them all. 1: always one summary.",
    default: 4,
  }),
});

/** Options of {@link createSummarization}. */
export type SummarizationOptions = z.infer<typeof summarizationOptionsSchema> & {
  readonly summarizer: Summarizer;
  readonly cache?: SummaryCachePort;
};

interface Settings extends RoomSettings {
  readonly name: string;
  readonly minSpanGroups: number;
  readonly summarizer: Summarizer;
  readonly cache: SummaryCachePort | undefined;
}

/**
 * The messages the request still shows verbatim outside the span (system prompt, pinned messages, the kept
 * tail): what they show needs no room in the summary.
 */
function visibleMessages(ctx: StrategyContext, span: ReadonlySet<number>): Message[] {
  const out: Message[] = [];
  let last = -1;
  for (const seq of ctx.verbatimSeqs(ctx.plan)) {
    if (seq === last || span.has(seq) || !ctx.log.holds(seq)) continue;
    last = seq;
    out.push(ctx.log.at(seq)!);
  }
  return out;
}

/**
 * The summary cache key's content hash: the fresh messages' content hashes and, when the summary absorbs earlier
 * ones, those summaries (each one's span hash, text and structure: what the summarizer reads in place of the
 * messages they cover). Chaining keeps a growing summary's hash O(fresh messages) rather than O(span).
 */
function spanHashOf(fresh: ReadonlyArray<Message>, absorbed: ReadonlyArray<StackedSummary>): string {
  const hashes = fresh.map((m) => m.hash);
  if (absorbed.length === 0) return sha256Hex(hashes.join("\n"));
  const records = absorbed.map(({ record: { spanHash, summary, structured } }) => ({
    spanHash,
    summary,
    structured,
  }));
  const absorbs = sha256Hex(canonicalJson(records.length === 1 ? records[0]! : records));
  return sha256Hex([`absorbs ${absorbs}`, ...hashes].join("\n"));
}

/** The summaries a new one absorbs as one earlier summary for the summarizer: texts joined, fields in order. */
function earlierSummary(absorbed: ReadonlyArray<StackedSummary>): SummaryResult | undefined {
  if (absorbed.length === 0) return undefined;
  if (absorbed.length === 1) {
    const { summary, structured } = absorbed[0]!.record;
    return { text: summary, structured: structured ?? {} };
  }
  const structured: Record<string, string[]> = {};
  for (const { record } of absorbed) {
    for (const [field, items] of Object.entries(record.structured ?? {})) {
      const list = structured[field] ?? [];
      structured[field] = list;
      for (const item of items as ReadonlyArray<string>) if (!list.includes(item)) list.push(item);
    }
  }
  return { text: absorbed.map((s) => s.record.summary).join("\n\n"), structured };
}

/** What a summary is asked for: the span's messages, the summary it absorbs and the room it has. */
interface SpanRequest {
  readonly fresh: ReadonlyArray<Message>;
  readonly previous: SummaryResult | undefined;
  readonly spanHash: string;
  readonly maxTokens: number;
  readonly visible: ReadonlyArray<Message>;
}

async function summarizeSpan(
  ctx: StrategyContext,
  settings: Settings,
  { fresh, previous, spanHash, maxTokens, visible }: SpanRequest,
): Promise<SummaryResult> {
  const { summarizer, cache } = settings;
  const key = summaryCacheKey(spanHash, summarizer.id, summarizer.promptVersion);
  const cached = await cache?.get(key);
  if (cached !== undefined) return cached;
  const result = await summarizer.summarize({
    threadId: ctx.log.threadId,
    messages: fresh,
    ...(previous === undefined ? {} : { previous }),
    maxTokens,
    countTokens: textTokenCounter(ctx.counter),
    tail: visible,
    ...(ctx.signal === undefined ? {} : { signal: ctx.signal }),
  });
  // A summarizer must not hand back nothing; never commit an empty text as the history.
  if (typeof result?.text !== "string" || result.text.trim() === "") {
    throw new SummarizerError(summarizer.id, "empty", "the summary text is empty", {
      threadId: ctx.log.threadId,
    });
  }
  await cache?.set(key, { text: result.text, structured: result.structured });
  return result;
}

/** The union of two disjoint seq lists in ascending order (the first is ascending when its span is in log order). */
function mergeAscending(a: ReadonlyArray<number>, b: ReadonlyArray<number>): number[] {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i]! < b[j]!)) out.push(a[i++]!);
    else out.push(b[j++]!);
  }
  for (let k = 1; k < out.length; k++) if (out[k - 1]! > out[k]!) return out.sort((x, y) => x - y);
  return out;
}

/**
 * The class of a new summary: the strictest of its fresh messages and of the summaries it absorbs (none when an
 * absorbed one does not say, so a render reads it from the messages).
 */
function spanClass(
  fresh: ReadonlyArray<Message>,
  absorbed: ReadonlyArray<StackedSummary>,
): { readonly sensitivity?: Sensitivity } {
  let out: Sensitivity = "public";
  for (const message of fresh) out = stricterOf(out, sensitivityOfMessage(message));
  for (const { record } of absorbed) {
    if (record.sensitivity === undefined) return {};
    out = stricterOf(out, record.sensitivity);
  }
  return { sensitivity: out };
}

function failureNote(error: unknown): StrategyNote {
  const message = error instanceof Error ? error.message : String(error);
  return { level: "error", code: "summarizer_failed", message, cause: error };
}

async function propose(ctx: StrategyContext, settings: Settings): Promise<Proposal> {
  const resolution = resolveForLog(ctx.plan, ctx.log);
  const { stack, groups } = absorbable(ctx.log, resolution, settings.name, ctx.taskSeq ?? -1);
  const messages = groups.reduce((n, g) => n + g.seqs.length, 0);
  // Stack when that leaves the new summary some room; otherwise absorb the summaries in force too.
  let chosen: { placement: Placement; count: number; accounting: Accounting | undefined } | undefined;
  for (const placement of placements(ctx, settings, stack)) {
    let accounting: Accounting | undefined;
    const absorbedMessages = placement.absorbed.reduce((n, s) => n + s.seqs.length, 0);
    const account = () => {
      accounting ??= accountingOf(
        ctx,
        placement.absorbedTokens,
        messages + absorbedMessages,
        placement.allowance,
      );
      return accounting;
    };
    const { count, room } = spanLength(ctx, settings, groups, account);
    chosen = { placement, count, accounting };
    if (count >= settings.minSpanGroups && room >= MIN_SUMMARY_TOKENS) break;
  }
  const { placement, count } = chosen!;
  if (count < settings.minSpanGroups) {
    return {
      actions: [],
      notes: [{ level: "info", code: "nothing_to_do", message: "no span worth summarizing" }],
    };
  }
  const { absorbed, stackedRoom } = placement;
  const freshSeqs = groups
    .slice(0, count)
    .flatMap((g) => g.seqs)
    .sort((a, b) => a - b);
  const fresh = freshSeqs.map((seq) => ctx.log.at(seq)!);
  let spanSeqs: number[] = freshSeqs;
  for (const summary of absorbed) spanSeqs = mergeAscending(summary.seqs, spanSeqs);
  const spanHash = spanHashOf(fresh, absorbed);
  const absorbedMessages = absorbed.reduce((n, s) => n + s.seqs.length, 0);
  const accounting =
    chosen!.accounting ??
    accountingOf(ctx, placement.absorbedTokens, fresh.length + absorbedMessages, placement.allowance);
  const maxTokens = summaryTokens(ctx, settings, groups.slice(0, count), accounting, stackedRoom);
  const visible = visibleMessages(ctx, new Set(freshSeqs));
  const previous = earlierSummary(absorbed);
  let result: SummaryResult;
  try {
    result = await summarizeSpan(ctx, settings, { fresh, previous, spanHash, maxTokens, visible });
  } catch (error) {
    return { actions: [], notes: [failureNote(error)] };
  }
  const placed =
    absorbed.length === 0
      ? stack.length === 0
        ? ""
        : `, after ${stack.length === 1 ? "the earlier summary" : `${stack.length} earlier summaries`}`
      : `, absorbing ${absorbed.length === 1 ? "the previous summary" : `${absorbed.length} earlier summaries`} of ${absorbedMessages}`;
  const action: PlanAction = {
    kind: "summarize",
    span: spanOfSeqs(ctx.log, spanSeqs),
    record: {
      kind: "summarize",
      summary: result.text,
      structured: result.structured,
      summarizerId: settings.summarizer.id,
      promptVersion: settings.summarizer.promptVersion,
      spanHash,
      ...spanClass(fresh, absorbed),
    },
    strategy: settings.name,
    reason: `${fresh.length} message(s) of the ${count} oldest group(s) summarized${placed}`,
  };
  return { actions: [action] };
}

/**
 * Prefix-ward, chunked summarization through a {@link Summarizer}: the oldest compactable groups become one
 * synthetic summary message, at the position of the oldest summarized message, and the verbatim tail behind it
 * stays byte-identical. A later run stacks its summary after the earlier ones, which stay byte-identical too (a
 * provider's prompt cache keeps them), until `maxStacked` are in force or they leave too little room; then the
 * new summary absorbs them all (their spans plus the next oldest groups, their texts and fields handed to the
 * summarizer as the earlier summary). Fires by count (`target` + `threshold`, MAF-style hysteresis) and, when the pipeline is
 * over its target, summarizes enough groups to reach the goal, keeping at least `minKeepGroups` verbatim.
 * Summaries are cached by span content hash, summarizer id and prompt version. A failed, empty or malformed
 * summary proposes nothing and comes back as an error note; the plan stays as it was.
 */
export function createSummarization(options: SummarizationOptions): Strategy & {
  due(ctx: StrategyContext): boolean;
} {
  const { summarizer, cache, ...json } = options;
  if (summarizer === undefined || typeof summarizer.summarize !== "function") {
    throw new ValidationError("summarization needs a summarizer", { field: "summarizer" });
  }
  const o = parseOptions(summarizationOptionsSchema, json, "summarization");
  const settings: Settings = {
    name: o.name ?? "summarize",
    target: o.target,
    threshold: o.threshold ?? 0,
    minKeepGroups: o.minKeepGroups ?? 2,
    minSpanGroups: o.minSpanGroups ?? 2,
    maxSummaryTokens: o.maxSummaryTokens,
    summaryShare: o.summaryShare ?? 0.5,
    maxStacked: o.maxStacked ?? 4,
    summarizer,
    cache,
  };
  return {
    name: settings.name,
    cost: "model",
    kinds: ["summarize"],
    propose: (ctx) => propose(ctx, settings),
    memo: summaryMemo,
    due: (ctx) => {
      if (settings.target === undefined) return false;
      const { groups } = absorbable(
        ctx.log,
        resolveForLog(ctx.plan, ctx.log),
        settings.name,
        ctx.taskSeq ?? -1,
      );
      return groups.length > settings.target + settings.threshold;
    },
  };
}
