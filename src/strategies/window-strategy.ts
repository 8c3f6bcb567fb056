/**
 * The flow every window strategy (sliding, rolling, truncation) follows: resolve the plan, check the trigger,
 * collect the windowed groups, let the window say which of them go, and drop those in one action. A window
 * states only its scope and its cut.
 */
import type { Group } from "../log/groups.js";
import type { LogView } from "../log/log-view.js";
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
  const cut = spec.cut(windowedGroups(ctx.log, resolution, spec.scope, ctx.taskSeq ?? -1), ctx.log);
  if (cut === undefined || cut.dropped.length === 0) return NO_PROPOSAL;
  return { actions: [dropGroupsAction(ctx.log, cut.dropped, spec.name, cut.recordReason, cut.reason)] };
}
