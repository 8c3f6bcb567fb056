/**
 * The flow every window strategy (sliding, rolling, truncation) follows: resolve the plan, check the trigger,
 * collect the windowed groups, let the window say which of them go, and drop those in one action. A window
 * states only its scope and its cut.
 */
import type { Group } from "../log/groups.js";
import type { LogView } from "../log/log-view.js";
import { turnIndexOf } from "../log/turns.js";
import { resolveForLog } from "../plan/resolve-for-log.js";
import { NO_PROPOSAL, type Proposal, type Strategy, type StrategyContext } from "./strategy.js";
import {
  dropGroupsAction,
  triggerFires,
  type WindowScope,
  type WindowTrigger,
  windowedGroups,
  windowMemo,
} from "./window-trigger.js";

/** The groups a window drops now and the reasons its drop action gives. */
export interface WindowCut {
  readonly dropped: ReadonlyArray<Group>;
  /** The reason kept in the drop record. */
  readonly recordReason: string;
  /** The reason of the plan action, with the counts that led to it. */
  readonly reason: string;
}

/** What a window strategy states; everything else is the shared flow. */
export interface WindowSpec {
  readonly name: string;
  readonly trigger: WindowTrigger | undefined;
  readonly scope: WindowScope;
  /**
   * `user`: a cut never leaves a kept run starting mid-turn: the window groups after the last dropped one go too,
   * up to the next user message (or the newest user message's turn), so no answer stays whose question went.
   */
  readonly startOn?: "user" | undefined;
  /** Which of the windowed groups (oldest first) go now; `undefined` or no groups when nothing does. */
  readonly cut: (window: ReadonlyArray<Group>, log: LogView) => WindowCut | undefined;
}

/** A free strategy proposing at most one drop action, the cut of `spec` over the windowed groups. */
export function createWindowStrategy(spec: WindowSpec): Strategy {
  return {
    name: spec.name,
    cost: "free",
    kinds: ["drop"],
    propose: (ctx) => proposeCut(ctx, spec),
    memo: windowMemo,
  };
}

function proposeCut(ctx: StrategyContext, spec: WindowSpec): Proposal {
  const resolution = resolveForLog(ctx.plan, ctx.log);
  if (!triggerFires(spec.trigger, ctx, resolution)) return NO_PROPOSAL;
  const window = windowedGroups(ctx.log, resolution, spec.scope, ctx.taskSeq ?? -1);
  const cut = spec.cut(window, ctx.log);
  if (cut === undefined || cut.dropped.length === 0) return NO_PROPOSAL;
  if (spec.startOn !== "user") {
    return { actions: [dropGroupsAction(ctx.log, cut.dropped, spec.name, cut.recordReason, cut.reason)] };
  }
  const extended = toTurnStart(ctx.log, window, cut.dropped);
  const held = turnsHeldByPendingCalls(ctx.log);
  const dropped =
    held.size === 0 ? extended : extended.filter((g) => !held.has(turnIndexOf(ctx.log.turns, g.seqs[0]!)));
  if (dropped.length === 0) return NO_PROPOSAL;
  const more = extended.length - cut.dropped.length;
  const kept = extended.length - dropped.length;
  const reason = [
    cut.reason,
    ...(more === 0 ? [] : [`${more} more group(s) so the kept history starts at a user message`]),
    ...(kept === 0 ? [] : [`${kept} group(s) kept with the turn of a call still pending`]),
  ].join("; ");
  return { actions: [dropGroupsAction(ctx.log, dropped, spec.name, cut.recordReason, reason)] };
}

/**
 * The turns (before the newest) where a pending call begins. A window never sees a pending group, so a cut could
 * drop the question of its turn and keep the call; once the call is answered, the answer would be kept without
 * its question. Such a turn stays whole, as the hard fallback keeps it.
 */
function turnsHeldByPendingCalls(log: LogView): Set<number> {
  const held = new Set<number>();
  const newest = log.turns.length - 1;
  for (const call of log.pendingCalls.values()) {
    const group = log.groupAt(log.groupIndexOf(call.seq));
    const turn = turnIndexOf(log.turns, group.seqs[0]!);
    if (turn >= 0 && turn < newest) held.add(turn);
  }
  return held;
}

/**
 * `dropped` extended with the window groups right after its last one that come before the next user message's
 * group (`startOn: "user"`): the kept run then starts where a turn does. Groups from the newest user message on
 * are never added (the turn in progress stays).
 */
export function toTurnStart(
  log: LogView,
  window: ReadonlyArray<Group>,
  dropped: ReadonlyArray<Group>,
): ReadonlyArray<Group> {
  const last = dropped[dropped.length - 1]!;
  let i = window.indexOf(last) + 1;
  const lastUser = log.lastUserSeq;
  const added: Group[] = [];
  for (; i < window.length; i++) {
    const group = window[i]!;
    if (group.kind === "user" || (lastUser >= 0 && group.seqs[0]! > lastUser)) break;
    added.push(group);
  }
  return added.length === 0 ? dropped : [...dropped, ...added];
}
