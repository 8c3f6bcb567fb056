import { freeze } from "immer";
import { type ActionKind, type CompactionPlan, type PlanAction, PRECEDENCE } from "./compaction-plan.js";

/** The action that governs one message after precedence. */
export interface Decision {
  readonly kind: ActionKind;
  /** Index of the winning action in `plan.actions`. */
  readonly actionIndex: number;
  readonly action: PlanAction;
}

/** A message claimed by more than one action, and how precedence settled it. */
export interface Overlap {
  readonly messageId: string;
  readonly winner: number;
  readonly losers: ReadonlyArray<number>;
}

/** Per message id, the action in force; messages not in `decisions` are included. */
export interface ResolvedPlan {
  readonly plan: CompactionPlan;
  readonly decisions: ReadonlyMap<string, Decision>;
  readonly overlaps: ReadonlyArray<Overlap>;
}

const memo = new WeakMap<CompactionPlan, ResolvedPlan>();

/**
 * Resolves a plan: each mentioned message gets the action of highest precedence
 * (drop > externalize > summarize > clear > include); among equals the later action wins, so a newer summary
 * supersedes an older one. Overlaps are reported, not hidden. Pure and memoized per plan value.
 */
export function resolvePlan(plan: CompactionPlan): ResolvedPlan {
  const cached = memo.get(plan);
  if (cached !== undefined) return cached;
  const decisions = new Map<string, Decision>();
  const contested = new Map<string, number[]>();
  plan.actions.forEach((action, actionIndex) => {
    for (const id of action.span) {
      const current = decisions.get(id);
      if (current !== undefined) {
        const claims = contested.get(id) ?? [current.actionIndex];
        claims.push(actionIndex);
        contested.set(id, claims);
        if (PRECEDENCE[action.kind] < PRECEDENCE[current.kind]) continue;
      }
      decisions.set(id, { kind: action.kind, actionIndex, action });
    }
  });
  const overlaps: Overlap[] = [];
  for (const [messageId, claims] of contested) {
    const winner = decisions.get(messageId)!.actionIndex;
    overlaps.push({ messageId, winner, losers: [...new Set(claims)].filter((c) => c !== winner) });
  }
  const resolved: ResolvedPlan = { plan, decisions, overlaps: freeze(overlaps, true) };
  memo.set(plan, resolved);
  return resolved;
}

/** The kind of action in force for a message (`include` when the plan does not mention it). */
export function kindOf(resolved: ResolvedPlan, messageId: string): ActionKind {
  return resolved.decisions.get(messageId)?.kind ?? "include";
}

/**
 * An equivalent plan without overlaps: each action keeps only the ids it won, empty actions disappear and the
 * order of actions is kept. Resolving it gives the same decision kinds and records per message.
 */
export function normalizePlan(plan: CompactionPlan): CompactionPlan {
  const resolved = resolvePlan(plan);
  if (resolved.overlaps.length === 0) return plan;
  const actions: PlanAction[] = [];
  plan.actions.forEach((action, index) => {
    const span = action.span.filter((id) => resolved.decisions.get(id)?.actionIndex === index);
    if (span.length > 0) actions.push({ ...action, span: [...new Set(span)] } as PlanAction);
  });
  return freeze({ ...plan, actions }, true);
}
