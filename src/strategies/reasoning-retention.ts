/**
 * Reasoning retention: the thinking of turns older than the newest N leaves the request, the rest of each message
 * staying as it is (a clear with `onlyParts` naming the reasoning parts, so a reasoning-only message is not sent
 * at all). Providers that take reasoning back only need the current turn's (Anthropic drops earlier turns'
 * thinking blocks itself, and validates only the tool-use loop in progress), so older thinking is paid for and
 * unused.
 */
import * as z from "zod";
import type { LogView } from "../log/log-view.js";
import type { Message } from "../log/message.js";
import type { ClearPartRef, PlanAction } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog, type SeqResolution } from "../plan/resolve-for-log.js";
import type { MessageCounter } from "../tokens/tokenizer.js";
import { parseOptions } from "./options.js";
import { nothingToDo, type Proposal, type Strategy, type StrategyContext } from "./strategy.js";

/** Options of `createReasoningRetention`: JSON-shaped, so a pipeline config file can hold them. */
export interface ReasoningRetentionOptions {
  /** Strategy name in plan actions; default `reasoningRetention`. */
  readonly name?: string;
  /** The reasoning of the newest N turns stays (1 = the current turn only); default 1. */
  readonly keepTurns?: number;
}

/** The zod schema of `ReasoningRetentionOptions` (unknown keys rejected, `keepTurns` a whole number ≥ 1). */
export const reasoningRetentionOptionsSchema = z
  .strictObject({
    name: z.string().trim().min(1).exactOptional().meta({
      description: "Strategy name in plan actions and audit records.",
      default: "reasoningRetention",
    }),
    keepTurns: z.number().int().positive().exactOptional().meta({
      description: "The reasoning of the newest N turns stays (1 = the current turn only).",
      default: 1,
    }),
  })
  .readonly();

/**
 * Tokens the message's reasoning costs in the request: its count less its count without the reasoning (framing
 * aside, so reasoning that is not sent costs nothing, even in a message of reasoning only).
 */
function reasoningTokens(message: Message, counter: MessageCounter): number {
  const without = message.parts.filter((p) => p.type !== "reasoning");
  if (without.length === message.parts.length) return 0;
  const all = counter.countMessage({ role: message.role, parts: message.parts }, message.hash);
  return all - counter.countMessage({ role: message.role, parts: without });
}

/**
 * Assistant messages below `end` whose reasoning can go: left as they are by the plan (cleared, summarized,
 * externalized or dropped messages are someone else's), not pinned, not in a pending group, and whose reasoning
 * the counter says costs tokens (reasoning no adapter sends costs none, and clearing it would change nothing).
 */
function clearable(log: LogView, res: SeqResolution, end: number, counter: MessageCounter): number[] {
  const seqs: number[] = [];
  for (let seq = 0; seq < end; seq++) {
    const message = log.at(seq)!;
    if (message.role !== "assistant" || message.meta.pinned === true) continue;
    const kind = decisionAt(res, seq)?.kind;
    if (kind !== undefined && kind !== "include") continue;
    if (!message.parts.some((p) => p.type === "reasoning")) continue;
    if (log.groupAt(log.groupIndexOf(seq)).pending) continue;
    if (reasoningTokens(message, counter) > 0) seqs.push(seq);
  }
  return seqs;
}

/**
 * Creates the reasoning retention strategy (free; proposes `clear`): the reasoning parts of assistant messages in
 * turns older than the newest `keepTurns` are left out of the request, everything else of those messages kept
 * (a message the plan already changes is left alone). Throws `ValidationError` naming the field on bad options.
 *
 * @example
 * const pipeline = createPipeline({ strategies: [createReasoningRetention({ keepTurns: 2 })] });
 */
export function createReasoningRetention(options: ReasoningRetentionOptions = {}): Strategy {
  const o = parseOptions(reasoningRetentionOptionsSchema, options, "reasoningRetention");
  const name = o.name ?? "reasoningRetention";
  const keepTurns = o.keepTurns ?? 1;
  const propose = (ctx: StrategyContext): Proposal => {
    const { log } = ctx;
    const turns = log.turns;
    if (turns.length <= keepTurns) return nothingToDo(`at most ${keepTurns} turn(s): all reasoning is kept`);
    const end = turns[turns.length - keepTurns]!.startSeq;
    const seqs = clearable(log, resolveForLog(ctx.plan, log), end, ctx.counter);
    if (seqs.length === 0) return nothingToDo("no reasoning older than the kept turns costs tokens");
    const onlyParts: ClearPartRef[] = [];
    let saved = 0;
    for (const seq of seqs) {
      const message = log.at(seq)!;
      saved += reasoningTokens(message, ctx.counter);
      message.parts.forEach((p, partIndex) => {
        if (p.type === "reasoning") onlyParts.push({ messageId: message.id, partIndex });
      });
    }
    const action: PlanAction = {
      kind: "clear",
      span: seqs.map((seq) => log.at(seq)!.id),
      record: { kind: "clear", onlyParts },
      strategy: name,
      reason: `reasoning of ${seqs.length} message(s) older than the newest ${keepTurns} turn(s) left out (~${saved} tokens)`,
    };
    return { actions: [action] };
  };
  return Object.freeze({ name, cost: "free", kinds: Object.freeze(["clear"] as const), propose });
}
