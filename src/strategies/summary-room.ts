/**
 * How much a summary takes and is given: how many of the oldest groups go into the span, where the new summary
 * goes (stacked after the summaries in force, or absorbing them), and how many tokens its text may have. All of
 * it measured by the renderer's own tokens per group, which the pipeline hands over through the context.
 */
import type { Group } from "../log/groups.js";
import { summaryText } from "../texts/placeholders.js";
import type { StrategyContext } from "./strategy.js";
import type { StackedSummary } from "./summary-span.js";

/** The options of summarization that size the span and the summary (see `summarizationOptionsSchema`). */
export interface RoomSettings {
  readonly target: number | undefined;
  readonly threshold: number;
  readonly minKeepGroups: number;
  readonly maxSummaryTokens: number | undefined;
  readonly summaryShare: number;
  readonly maxStacked: number;
}

/** The smallest summary worth asking for; a span is chosen so that at least this much room is left for it. */
export const MIN_SUMMARY_TOKENS = 64;
/** The largest summary asked for when no `maxSummaryTokens` is set (it is also held to half the span). */
const MAX_SUMMARY_TOKENS = 8_000;
/** Tokens kept spare for the seam between the summary's header and its text. */
const SEAM_TOKENS = 2;

/** What the span choice and the summary's size are measured against: the renderer's tokens under the plan. */
export interface Accounting {
  /** Rendered tokens per group (index = group index). */
  readonly perGroup: ArrayLike<number>;
  /** Rendered tokens of the summaries the new one absorbs (they go with the span). */
  readonly previousTokens: number;
  /** Tokens of the new summary message without its text (framing and header). */
  readonly overhead: number;
  /** The least room the span must leave for the new summary's text. */
  readonly allowance: number;
}

/** Rendered tokens of a summary in force, counted from its record: a restored log may not hold its first source. */
function summaryTokensOf(ctx: StrategyContext, summary: StackedSummary): number {
  const text = summaryText(summary.record, summary.seqs.length);
  return ctx.counter.countMessage({ role: "assistant", parts: [{ type: "text", text }] });
}

/** The accounting of a span choice: tokens per group, the absorbed summaries, the new one's overhead and room. */
export function accountingOf(
  ctx: StrategyContext,
  previousTokens: number,
  messages: number,
  allowance: number,
): Accounting {
  const perGroup = ctx.tokensByGroup(ctx.plan);
  const header = summaryText(
    { kind: "summarize", summary: "", summarizerId: "", promptVersion: "" },
    Math.max(messages, 10),
  );
  const overhead = ctx.counter.countMessage({ role: "assistant", parts: [{ type: "text", text: header }] });
  return { perGroup, previousTokens, overhead: overhead + SEAM_TOKENS, allowance };
}

/**
 * How many of the oldest candidates to summarize: by the count rule, then more while the request would stay over
 * the goal with the smallest summary in place of the span (the verbatim tail stays as long as the goal allows).
 * `room` is what the goal leaves for the summary's text once that many are gone (infinite when under the goal).
 */
export function spanLength(
  ctx: StrategyContext,
  settings: RoomSettings,
  groups: ReadonlyArray<Group>,
  accounting: () => Accounting,
): { count: number; room: number } {
  const maxSpan = Math.max(0, groups.length - settings.minKeepGroups);
  let count = 0;
  if (settings.target !== undefined && groups.length > settings.target + settings.threshold) {
    count = groups.length - settings.target;
  }
  let room = Number.POSITIVE_INFINITY;
  if (ctx.tokens > ctx.goal) {
    const { perGroup, previousTokens, overhead, allowance } = accounting();
    const smallest = overhead + Math.min(allowance, settings.maxSummaryTokens ?? allowance);
    let saved = previousTokens;
    for (let i = 0; i < groups.length; i++) {
      if (i >= count && ctx.tokens - saved + smallest <= ctx.goal) break;
      saved += perGroup[groups[i]!.index]!;
      count = Math.max(count, i + 1);
    }
    const taken = Math.min(count, maxSpan);
    saved = previousTokens;
    for (let i = 0; i < taken; i++) saved += perGroup[groups[i]!.index]!;
    room = ctx.goal - (ctx.tokens - saved) - overhead;
  }
  return { count: Math.min(count, maxSpan), room };
}

/**
 * The summary's size: the room the goal leaves once the span (and the summaries it absorbs) is gone, held
 * between the floor and the cap (`maxSummaryTokens`, else half of what the span costs and at most 8,000; a
 * summary stacked after others also at most the room they leave it). Below the floor the floor wins: a span
 * kept whole would cost more.
 */
export function summaryTokens(
  ctx: StrategyContext,
  settings: RoomSettings,
  span: ReadonlyArray<Group>,
  { perGroup, previousTokens, overhead }: Accounting,
  stackedRoom: number | undefined,
): number {
  let spanTokens = previousTokens;
  for (const group of span) spanTokens += perGroup[group.index]!;
  const room = ctx.goal - (ctx.tokens - spanTokens) - overhead;
  let cap =
    settings.maxSummaryTokens ??
    Math.min(MAX_SUMMARY_TOKENS, Math.max(MIN_SUMMARY_TOKENS, Math.floor(spanTokens / 2)));
  if (stackedRoom !== undefined) cap = Math.min(cap, stackedRoom);
  return Math.max(MIN_SUMMARY_TOKENS, Math.min(room, cap));
}

/** Where the next summary goes: after the summaries in force, or in place of them all, and the room it has. */
export interface Placement {
  /** The summaries in force that the new one absorbs: none (it is stacked after them) or all. */
  readonly absorbed: ReadonlyArray<StackedSummary>;
  /** Rendered tokens of the absorbed summaries (they go with the span). */
  readonly absorbedTokens: number;
  /** The least room the span must leave for the new summary's text. */
  readonly allowance: number;
  /** The most a stacked summary may take: what the ones before it leave of the allowance. */
  readonly stackedRoom: number | undefined;
}

/**
 * The placements worth trying, the prompt cache's favourite first: stacked after the summaries in force (the
 * request keeps their bytes), while there are fewer than `maxStacked` and they leave a quarter of the summaries'
 * allowance; then absorbing them all. Each summary in force is counted once.
 */
export function placements(
  ctx: StrategyContext,
  settings: RoomSettings,
  stack: ReadonlyArray<StackedSummary>,
): Placement[] {
  const allowance = Math.max(MIN_SUMMARY_TOKENS, Math.floor(ctx.goal * settings.summaryShare));
  let used = 0;
  for (const summary of stack) used += summaryTokensOf(ctx, summary);
  const absorb: Placement = { absorbed: stack, absorbedTokens: used, allowance, stackedRoom: undefined };
  if (stack.length === 0 || stack.length >= settings.maxStacked) return [absorb];
  const room = allowance - used;
  if (room < Math.max(MIN_SUMMARY_TOKENS, allowance / 4)) return [absorb];
  return [{ absorbed: [], absorbedTokens: 0, allowance: room, stackedRoom: room }, absorb];
}
