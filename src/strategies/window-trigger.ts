/**
 * What the window strategies (sliding, rolling, truncation) share: a trigger saying when to look at all, the
 * hysteresis rule saying when a window is overfull and how far to cut it, and which groups a window counts.
 */

import * as z from "zod";
import type { Group } from "../log/groups.js";
import type { LogView } from "../log/log-view.js";
import type { PlanAction } from "../plan/compaction-plan.js";
import { decisionAt, type SeqResolution } from "../plan/resolve-for-log.js";
import type { Decision } from "../plan/resolve-plan.js";
import { spanOfSeqs } from "../plan/span-seqs.js";
import { type DecisionChange, GroupSweep } from "./group-sweep.js";
import type { StrategyContext } from "./strategy.js";
import type { StrategyMemo } from "./strategy-memo.js";

/**
 * JSON-shaped trigger of a window: it fires when any given limit is exceeded (tokens over `usage` × context
 * window, or more live messages, turns or groups than given). Leave the trigger out to evaluate on every run; an
 * empty trigger is rejected, since it could never fire.
 */
export const windowTriggerSchema = z
  .strictObject({
    usage: z.number().gt(0).lte(1).optional().meta({
      description: "Fire when the request's tokens exceed this share of the context window.",
      defaultText: "no token limit",
    }),
    messages: z.number().int().positive().optional().meta({
      description:
        "Fire when the request carries more messages than this (a summary or pointer counts as one).",
      defaultText: "no message limit",
    }),
    turns: z.number().int().positive().optional().meta({
      description: "Fire when more turns than this still have a message in the request.",
      defaultText: "no turn limit",
    }),
    groups: z.number().int().positive().optional().meta({
      description: "Fire when more groups than this still have a message in the request.",
      defaultText: "no group limit",
    }),
  })
  .refine((t) => Object.values(t).some((v) => v !== undefined), {
    message:
      "a trigger needs at least one of usage, messages, turns, groups (leave it out to always evaluate)",
  });

/** When a window looks at the history at all (see {@link windowTriggerSchema}). */
export type WindowTrigger = z.infer<typeof windowTriggerSchema>;

/** The hysteresis band above a window's target: an integer ≥ 0 (default 0, i.e. act as soon as it is over). */
export const windowThresholdSchema = z.number().int().nonnegative();

const TRIGGER_META = {
  description: "When the strategy looks at the history at all; it fires when any given limit is exceeded.",
  defaultText: "evaluate on every run",
};

/** The optional `trigger` option of a strategy, described for the configuration reference. */
export const optionalTriggerSchema = windowTriggerSchema.optional().meta(TRIGGER_META);

/** What the plan still sends, counted the way a trigger reads it. */
export interface LiveCounts {
  /** Messages kept verbatim or cleared, plus one per summary or pointer in force. */
  readonly messages: number;
  /** Groups with at least one message the plan does not drop. */
  readonly groups: number;
  /** Turns with at least one message the plan does not drop. */
  readonly turns: number;
}

/** Counts what the plan still sends of the log (one pass over the seqs it does not drop). */
export function liveCounts(log: LogView, resolution: SeqResolution): LiveCounts {
  const groupOf = log.groupIndexTable();
  const liveGroup = new Uint8Array(log.groupCount);
  const replacements = new Set<number>();
  let messages = 0;
  let groups = 0;
  let turns = 0;
  let turn = 0;
  let turnCounted = false;
  const turnList = log.turns;
  const { dropRuns } = resolution;
  let run = 0;
  const length = log.length;
  for (let seq = 0; seq < length; seq++) {
    // Dropped runs count for nothing: jump over them (a long thread's compacted history is mostly one run).
    while (run < dropRuns.length && dropRuns[run + 1]! <= seq) run += 2;
    if (run < dropRuns.length && dropRuns[run]! <= seq) {
      seq = dropRuns[run + 1]! - 1;
      continue;
    }
    while (seq >= turnList[turn]!.endSeq) {
      turn++;
      turnCounted = false;
    }
    const decision = decisionAt(resolution, seq);
    if (decision?.kind === "drop") continue;
    if (decision?.kind === "summarize" || decision?.kind === "externalize") {
      // The whole span renders as one synthetic message.
      if (!replacements.has(decision.actionIndex)) messages++;
      replacements.add(decision.actionIndex);
    } else {
      messages++;
    }
    const g = groupOf[seq]!;
    if (liveGroup[g] === 0) groups++;
    liveGroup[g] = 1;
    if (!turnCounted) turns++;
    turnCounted = true;
  }
  return { messages, groups, turns };
}

/** Whether a trigger fires for the request in `ctx` (always, when there is no trigger). */
export function triggerFires(
  trigger: WindowTrigger | undefined,
  ctx: StrategyContext,
  resolution: SeqResolution,
): boolean {
  if (trigger === undefined) return true;
  if (trigger.usage !== undefined && ctx.tokens > trigger.usage * ctx.contextWindow) return true;
  if (trigger.messages === undefined && trigger.turns === undefined && trigger.groups === undefined)
    return false;
  const live = liveCounts(ctx.log, resolution);
  const over = (limit: number | undefined, count: number): boolean => limit !== undefined && count > limit;
  return (
    over(trigger.messages, live.messages) ||
    over(trigger.turns, live.turns) ||
    over(trigger.groups, live.groups)
  );
}

/**
 * Hysteresis: how many of `count` items a window with `target` and `threshold` removes now. Nothing while
 * `count ≤ target + threshold`; once over, it cuts back to exactly `target`, so the next cut waits until the
 * history has grown by more than `threshold` again (and the rendered prefix stays stable in between).
 */
export function hysteresisCut(count: number, target: number, threshold: number): number {
  return count > target + threshold ? count - target : 0;
}

/** What a window never counts or drops besides system prompts, pinned messages and pending calls. */
export interface WindowScope {
  /** System groups stay and are not counted (default true); false makes them ordinary groups of the window. */
  readonly keepSystem: boolean;
  /** The group of the latest user message stays and is not counted: it says what the agent is working on. */
  readonly keepLastUser: boolean;
}

/** The history-memo key prefix of window sweeps (`keepSystem:keepLastUser` follows it). */
export const WINDOW_PREFIX = "windowedGroups:";

/** The history-memo key of the window sweep of `scope`. */
function windowMemoKey(scope: WindowScope): string {
  return `${WINDOW_PREFIX}${scope.keepSystem}:${scope.keepLastUser}`;
}

/** The scope a window sweep's history-memo key (see `windowMemoKey`) was made for. */
export function windowScopeOf(key: string): WindowScope {
  const [keepSystem, keepLastUser] = key.slice(WINDOW_PREFIX.length).split(":");
  return { keepSystem: keepSystem === "true", keepLastUser: keepLastUser === "true" };
}

/** The group index of the latest user message, or -1. */
export function lastUserGroup(log: LogView): number {
  const seq = log.lastUserSeq;
  return seq < 0 ? -1 : log.groupIndexOf(seq);
}

/**
 * The groups a window counts and may drop, oldest first: not pending, no `meta.pinned` message, not a system
 * prompt (unless `keepSystem` is false), not the latest user message when asked, and every message either
 * untouched or only cleared by the plan, and not the task's group (`taskSeq`, -1 for none). Cleared groups qualify because dropping one supersedes the clear
 * cleanly (drop wins, the group goes whole); otherwise a window behind a clearing strategy could never shrink.
 * Groups already dropped are gone, and summarized or externalized groups are condensed already: a window
 * neither counts nor touches them.
 */
export function windowedGroups(
  log: LogView,
  resolution: SeqResolution,
  scope: WindowScope,
  taskSeq = -1,
): Group[] {
  const lastUser = scope.keepLastUser ? lastUserGroup(log) : -1;
  const task = taskSeq >= 0 ? log.groupIndexOf(taskSeq) : -1;
  // Only groups left open for the plan (or an ancestor) are looked at: a pinned group, a kept system prompt and
  // a summarized, externalized or dropped group stay out of every window until an action changes that.
  const sweep = log.historyMemo(windowMemoKey(scope), () => new GroupSweep());
  const out: Group[] = [];
  const open: number[] = [];
  for (const index of sweep.groupsToVisit(
    log,
    resolution,
    sweep.base(log, resolution.plan),
    condensedChanged,
  )) {
    const group = log.groupAt(index);
    if (group.pending || group.index === lastUser || group.index === task) {
      open.push(index);
      continue;
    }
    if (group.kind === "system" && scope.keepSystem) continue;
    const movable = group.seqs.every(
      (seq) => !condensed(decisionAt(resolution, seq)) && log.at(seq)!.meta.pinned !== true,
    );
    if (!movable) continue;
    open.push(index);
    out.push(group);
  }
  sweep.remember(log, resolution, open, undefined);
  return out;
}

/** A decision that takes a message out of every window: anything but include and clear. */
function condensed(decision: Decision | undefined): boolean {
  const kind = decision?.kind;
  return kind !== undefined && kind !== "include" && kind !== "clear";
}

const condensedChanged: DecisionChange = (_seq, was, now) => condensed(was) !== condensed(now);

/** One drop action covering whole groups: their message ids in log order (groups may interleave). */
export function dropGroupsAction(
  log: LogView,
  groups: ReadonlyArray<Group>,
  strategy: string,
  recordReason: string,
  reason: string,
): PlanAction {
  const seqs = groups.flatMap((g) => g.seqs).sort((a, b) => a - b);
  return {
    kind: "drop",
    span: spanOfSeqs(log, seqs),
    record: { kind: "drop", reason: recordReason },
    strategy,
    reason,
  };
}

/** How a window strategy's sweep travels in a thread checkpoint (its groups left open; no data of its own). */
export const windowMemo: StrategyMemo = {
  prefix: WINDOW_PREFIX,
  prime: (log, resolution, key) => {
    windowedGroups(log, resolution, windowScopeOf(key));
    return true;
  },
  sweep: (log, key) => log.peekHistoryMemo(key) as GroupSweep<unknown> | undefined,
  encodeData: () => null,
  restore: (log, resolution, key, sweep) => {
    const restored = log.historyMemo(key, () => new GroupSweep<undefined>());
    restored.restore(log, resolution, { ...sweep, data: undefined });
  },
};
