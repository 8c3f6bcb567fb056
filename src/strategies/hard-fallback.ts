import { z } from "zod";
import { BudgetInfeasibleError } from "../errors/ledger-error.js";
import type { ThreadLog } from "../log/thread-log.js";
import { type CompactionPlan, nextPlan, type PlanAction } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog } from "../plan/resolve-for-log.js";
import { parseOptions } from "./options.js";
import type { Proposal, Strategy, StrategyContext } from "./strategy.js";

/** JSON-shaped options of {@link createHardFallback}. */
export const hardFallbackOptionsSchema = z.strictObject({
  name: z.string().trim().min(1).optional(),
  /**
   * What of the newest history is never dropped: `lastTurn` (default: the last user message and everything
   * after it) or `lastUserMessage` (only that message; older calls of a long agent turn may go).
   */
  protect: z.enum(["lastTurn", "lastUserMessage"]).optional(),
});

/** Options of {@link createHardFallback}. */
export type HardFallbackOptions = z.infer<typeof hardFallbackOptionsSchema>;

/**
 * Group indices the fallback never drops: system prompts, `meta.pinned` messages, pending calls, and the last
 * user message — with everything after it when `protect` is `lastTurn` (the newest non-system group when there
 * is no user message).
 */
export function protectedGroups(log: ThreadLog, protect: "lastTurn" | "lastUserMessage"): Uint8Array {
  const keep = new Uint8Array(log.groupCount);
  for (const group of log.groups) if (group.kind === "system") keep[group.index] = 1;
  for (const seq of log.pinnedSeqs) keep[log.groupIndexOf(seq)] = 1;
  for (const call of log.pendingCalls.values()) keep[log.groupIndexOf(call.seq)] = 1;
  let lastUser = log.length - 1;
  while (lastUser >= 0 && log.at(lastUser)!.role !== "user") lastUser--;
  if (lastUser >= 0) {
    const end = protect === "lastTurn" ? log.length : lastUser + 1;
    for (let seq = lastUser; seq < end; seq++) keep[log.groupIndexOf(seq)] = 1;
  } else {
    // No user message at all: the newest non-system group is what the model must answer, and a request needs a
    // message besides the system prompt.
    let g = log.groupCount - 1;
    while (g >= 0 && log.groupAt(g).kind === "system") g--;
    if (g >= 0) keep[g] = 1;
  }
  return keep;
}

/** Ids of every message of the unprotected groups below `cut` that the plan does not drop yet, in log order. */
function idsBelow(log: ThreadLog, plan: CompactionPlan, keep: Uint8Array, cut: number): string[] {
  const resolution = resolveForLog(plan, log);
  const groupOf = log.groupIndexTable();
  const ids = log.idTable();
  const out: string[] = [];
  for (let seq = 0; seq < log.length; seq++) {
    const g = groupOf[seq]!;
    if (g < cut && keep[g] === 0 && decisionAt(resolution, seq)?.kind !== "drop") out.push(ids[seq]!);
  }
  return out;
}

function dropAction(span: ReadonlyArray<string>, name: string, target: number): PlanAction {
  return {
    kind: "drop",
    span,
    record: { kind: "drop", reason: "over budget: oldest unprotected groups" },
    strategy: name,
    reason: `${span.length} message(s) of the oldest unprotected groups dropped to fit ${target} tokens`,
  };
}

function propose(ctx: StrategyContext, name: string, protect: "lastTurn" | "lastUserMessage"): Proposal {
  if (ctx.tokens <= ctx.target) return { actions: [] };
  const { log } = ctx;
  const keep = protectedGroups(log, protect);
  const measureCut = (cut: number): { tokens: number; action?: PlanAction } => {
    const span = idsBelow(log, ctx.plan, keep, cut);
    if (span.length === 0) return { tokens: ctx.tokens };
    const action = dropAction(span, name, ctx.target);
    const candidate = nextPlan(ctx.plan, [...ctx.plan.actions, action], log.length);
    return { tokens: ctx.measure(candidate), action };
  };
  const all = measureCut(log.groupCount);
  if (all.tokens > ctx.target) {
    throw new BudgetInfeasibleError(
      "the protected content (system, pinned, pending calls, the last user turn) alone exceeds the budget",
      all.tokens,
      ctx.target,
      { threadId: log.threadId },
    );
  }
  // Dropping more never costs more, so the smallest cut that reaches the goal is found by bisection; when the
  // goal is out of reach, the target is enough.
  const aim = all.tokens <= ctx.goal ? ctx.goal : ctx.target;
  let lo = 0;
  let hi = log.groupCount;
  let best = all;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const probe = measureCut(mid);
    if (probe.tokens <= aim) {
      best = probe;
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return { actions: best.action === undefined ? [] : [best.action] };
}

/**
 * The hard fallback: drops the oldest unprotected groups (one drop action) until the renderer's count reaches
 * the goal, or at least the target. Never dropped: system prompts, pinned messages, pending calls and the last
 * user turn (see `protect`). When even dropping everything else does not fit, it throws
 * `BudgetInfeasibleError` saying by how much; the pipeline turns that into a failed run.
 */
export function createHardFallback(options: HardFallbackOptions = {}): Strategy {
  const o = parseOptions(hardFallbackOptionsSchema, options, "hardFallback");
  const name = o.name ?? "hardFallback";
  const protect = o.protect ?? "lastTurn";
  return { name, cost: "free", kinds: ["drop"], propose: (ctx) => propose(ctx, name, protect) };
}
