/**
 * The oversized-message strategy: a single message (typically one tool result) larger than a share of the target
 * is cut to its head and tail with a marker of what was left out, and the lines of the cut middle that carry the
 * thread's rarest words, errors or paths (`salientLines`), instead of pushing everything else out of the request.
 * The excerpt is recorded in a clear action, so a replay shows the same bytes.
 */

import * as z from "zod";
import type { LogView } from "../log/log-view.js";
import type { Message, Part } from "../log/message.js";
import type { ClearExcerpt, ClearRecord, PlanAction } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog } from "../plan/resolve-for-log.js";
import { clearMessage, recallCallHint } from "../texts/placeholders.js";
import { excerptText, textTokenCounter } from "../texts/text-excerpt.js";
import type { MessageCounter } from "../tokens/tokenizer.js";
import { classesOf, neverCleared } from "./durable-clears.js";
import { compactable, messageTokens } from "./group-accounting.js";
import { parseOptions } from "./options.js";
import { type Rarity, salientLines } from "./salient-lines.js";
import { nothingToDo, type Proposal, type Strategy, type StrategyContext } from "./strategy.js";
import { threadRarity } from "./thread-rarity.js";

/** Options of `createOversizedExcerpt`: JSON-shaped, so a pipeline config file can hold them. */
export interface OversizedExcerptOptions {
  /** Strategy name in plan actions; default `oversizedExcerpt`. */
  readonly name?: string;
  /** A message is oversized when it renders to more than this share of the target; default 0.25. */
  readonly share?: number;
  /** Share of the target an excerpt may take (at most `share`); default half of `share`. */
  readonly keepShare?: number;
  /** Share of an excerpt taken from the head of the text (the rest from its tail); default 0.5. */
  readonly headShare?: number;
  /** `overTarget` (default) cuts only while the request is over its target; `always` whenever one is oversized. */
  readonly when?: "overTarget" | "always";
}

const share = z.number().gt(0).lte(1);

/** The zod schema of `OversizedExcerptOptions`. */
export const oversizedExcerptOptionsSchema = z
  .strictObject({
    name: z
      .string()
      .trim()
      .min(1)
      .exactOptional()
      .meta({ description: "Strategy name in plan actions and audit records.", default: "oversizedExcerpt" }),
    share: share.exactOptional().meta({
      description: "A message is oversized when it renders to more than this share of the target.",
      default: 0.25,
    }),
    keepShare: share.exactOptional().meta({
      description: "Share of the target an excerpt may take (at most `share`).",
      defaultText: "half of `share`",
    }),
    headShare: z.number().min(0).max(1).exactOptional().meta({
      description: "Share of an excerpt taken from the head of the text (the rest from its tail).",
      default: 0.5,
    }),
    when: z.enum(["overTarget", "always"]).exactOptional().meta({
      description:
        "`overTarget` cuts only while the request is over its target; `always` whenever a message is oversized.",
      default: "overTarget",
    }),
  })
  .readonly()
  .refine((o) => o.keepShare === undefined || o.keepShare <= (o.share ?? 0.25), {
    message: "keepShare must not exceed share (an excerpt must be smaller than what made it oversized)",
    path: ["keepShare"],
  });

interface Settings {
  readonly name: string;
  readonly share: number;
  readonly keepShare: number;
  readonly headShare: number;
  readonly always: boolean;
}

/** A cut tool result's marker names its call id, so the model can recall the whole result. */
function wayBackOf(part: Part): { readonly wayBack?: string } {
  return part.type === "tool_result" ? { wayBack: recallCallHint(part.callId) } : {};
}

/** A part an excerpt can stand for: a tool result's content or a text. */
function bodyOf(part: Part): string | undefined {
  return part.type === "tool_result" ? part.content : part.type === "text" ? part.text : undefined;
}

/**
 * Seqs no strategy may touch (system, pinned, the task, the last user message) or that must stay whole (pending
 * calls). The protected core is cut only by the hard fallback, and only when it does not fit whole.
 */
function excluded(log: LogView, seq: number, taskSeq: number): boolean {
  if (seq === log.lastUserSeq || seq === taskSeq) return true;
  return !compactable(log, log.groupAt(log.groupIndexOf(seq)));
}

/**
 * Token allowances per excerptable part so their total is `budget`: parts smaller than an even share stay whole
 * and leave their unused share to the others (water-filling), largest parts cut evenly.
 */
function allowances(sizes: ReadonlyArray<number>, budget: number): number[] {
  const order = sizes.map((_, i) => i).sort((a, b) => sizes[a]! - sizes[b]! || a - b);
  const out = new Array<number>(sizes.length).fill(0);
  let left = budget;
  order.forEach((index, k) => {
    const fair = Math.floor(left / (order.length - k));
    out[index] = Math.min(sizes[index]!, fair);
    left -= out[index]!;
  });
  return out;
}

/**
 * Tokens of each excerptable body, and of the rest of the message (framing, calls, reasoning). The largest body
 * is not tokenized again (it can be megabytes, and the message's count is known): it gets what the rest leaves.
 */
function partSizes(
  message: Message,
  indices: ReadonlyArray<number>,
  bodies: ReadonlyArray<string>,
  tokens: number,
  counter: MessageCounter,
  countTokens: (text: string) => number,
): { sizes: number[]; fixed: number } {
  const emptied = message.parts.map((part, i): Part => {
    if (!indices.includes(i)) return part;
    return part.type === "tool_result" ? { ...part, content: "" } : { type: "text", text: "" };
  });
  const fixed = counter.countMessage({ role: message.role, parts: emptied });
  let largest = 0;
  bodies.forEach((body, k) => {
    if (body.length > bodies[largest]!.length) largest = k;
  });
  const sizes = bodies.map((body, k) => (k === largest ? 0 : countTokens(body)));
  sizes[largest] = Math.max(0, tokens - fixed - sizes.reduce((a, b) => a + b, 0));
  return { sizes, fixed };
}

/** Tokens of a message as the renderer sends it under a clear with `record`. */
function clearedTokens(message: Message, record: ClearRecord, counter: MessageCounter): number {
  const parts = clearMessage(message, record, () => String(message.meta.toolName ?? "tool"));
  return counter.countMessage({ role: message.role, parts });
}

/**
 * The excerpts that bring `message` to at most `allowance` tokens, or undefined when its bulk is not in parts an
 * excerpt can stand for (arguments, reasoning) or the allowance leaves nothing for them.
 */
/**
 * The excerpts that cut a message of `tokens` rendered tokens to at most `allowance` (head and tail of each text
 * or result body, measured by the renderer's counter), or undefined when no cut makes it smaller.
 */
export function excerptsFor(
  message: Message,
  tokens: number,
  allowance: number,
  settings: Pick<Settings, "headShare">,
  counter: MessageCounter,
  rarity?: Rarity,
): ClearExcerpt[] | undefined {
  const countTokens = textTokenCounter(counter);
  const indices = message.parts.flatMap((p, i) => (bodyOf(p) === undefined ? [] : [i]));
  if (indices.length === 0) return undefined;
  const bodies = indices.map((i) => bodyOf(message.parts[i]!)!);
  const { sizes, fixed } = partSizes(message, indices, bodies, tokens, counter, countTokens);
  let budget = allowance - fixed;
  // The renderer's count is the truth: measure the cleared message and shrink until it fits (a few rounds).
  for (let round = 0; round < 6 && budget > 0; round++) {
    const shares = allowances(sizes, budget);
    const excerpts = indices.map((partIndex, k) => ({
      messageId: message.id,
      partIndex,
      text: excerptText(bodies[k]!, {
        maxTokens: shares[k]!,
        totalTokens: sizes[k]!,
        countTokens,
        headShare: settings.headShare,
        ...(rarity === undefined ? {} : { keyLines: keyLinesBy(rarity) }),
        ...wayBackOf(message.parts[partIndex]!),
      }).text,
    }));
    const measured = clearedTokens(message, { kind: "clear", excerpts }, counter);
    if (measured <= allowance) return measured < tokens ? excerpts : undefined;
    budget = Math.floor(budget * (allowance / measured) * 0.97) - 1;
  }
  return undefined;
}

/**
 * The lines of a cut text's omitted middle worth sending anyway: those with the thread's rarest words, errors,
 * test outcomes, `key: value` statements and paths (`salientLines`), within about `maxChars`.
 */
export function keyLinesBy(rarity: Rarity): (middle: string, maxChars: number) => ReadonlyArray<string> {
  return (middle, maxChars) =>
    maxChars < 40 ? [] : salientLines(middle, rarity, { maxLines: 12, maxTokens: Math.floor(maxChars / 4) });
}

function propose(ctx: StrategyContext, settings: Settings): Proposal {
  const { log, plan, counter, target } = ctx;
  if (!settings.always && ctx.tokens <= target) return nothingToDo("the request is under its target");
  const threshold = settings.share * target;
  const allowance = Math.floor(settings.keepShare * target);
  const resolution = resolveForLog(plan, log);
  const actions: PlanAction[] = [];
  const classes = classesOf(ctx);
  let rarity: Rarity | undefined;
  for (let seq = 0; seq < log.length; seq++) {
    const kind = decisionAt(resolution, seq)?.kind;
    if ((kind !== undefined && kind !== "include") || excluded(log, seq, ctx.taskSeq ?? -1)) continue;
    const tokens = messageTokens(log, seq, counter);
    // A non-replayable result cannot be had again: no strategy cuts it (the fallback may, as a last resort).
    if (tokens <= threshold || neverCleared(log, classes, seq)) continue;
    const message = log.at(seq)!;
    rarity ??= threadRarity(log, resolution);
    const excerpts = excerptsFor(message, tokens, allowance, settings, counter, rarity);
    if (excerpts === undefined) continue;
    actions.push({
      kind: "clear",
      span: [message.id],
      record: { kind: "clear", excerpts },
      strategy: settings.name,
      reason: `message of ${tokens} tokens is over ${Math.round(settings.share * 100)} % of the ${target}-token target: cut to its head, key lines and tail (at most ${allowance} tokens)`,
    });
  }
  return actions.length === 0
    ? nothingToDo(`no message renders to more than ${Math.floor(threshold)} tokens`)
    : { actions };
}

/**
 * Creates the oversized-message strategy (free; proposes `clear`): every message that renders to more than
 * `share` of the target (a huge tool result, a pasted file) is cut to an excerpt of at most `keepShare` of the
 * target — its head and tail, with a marker saying how many characters, lines and tokens were left out and a
 * quarter of the excerpt given to the key lines of the middle — so
 * nothing else has to go to make room for it. Texts and tool results of the message are cut; small ones beside a
 * big one stay whole. System prompts, pinned messages, pending calls and the last user message are left alone.
 * Throws `ValidationError` naming the field on bad options.
 *
 * @example
 * const oversized = createOversizedExcerpt({ share: 0.25, keepShare: 0.1, headShare: 0.4 });
 */
export function createOversizedExcerpt(options: OversizedExcerptOptions = {}): Strategy {
  const o = parseOptions(oversizedExcerptOptionsSchema, options, "oversizedExcerpt");
  const settings: Settings = {
    name: o.name ?? "oversizedExcerpt",
    share: o.share ?? 0.25,
    keepShare: o.keepShare ?? (o.share ?? 0.25) / 2,
    headShare: o.headShare ?? 0.5,
    always: o.when === "always",
  };
  return Object.freeze({
    name: settings.name,
    cost: "free",
    kinds: Object.freeze(["clear"] as const),
    propose: (ctx: StrategyContext) => propose(ctx, settings),
  });
}
