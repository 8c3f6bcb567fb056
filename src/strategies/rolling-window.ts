import { z } from "zod";
import type { Group } from "../log/groups.js";
import type { ThreadLog } from "../log/thread-log.js";
import { turnIndexOf } from "../log/turns.js";
import { resolveForLog } from "../plan/resolve-for-log.js";
import { parseOptions } from "./options.js";
import { NO_PROPOSAL, type Proposal, type Strategy, type StrategyContext } from "./strategy.js";
import {
  dropGroupsAction,
  hysteresisCut,
  triggerFires,
  type WindowTrigger,
  windowedGroups,
  windowThresholdSchema,
  windowTriggerSchema,
} from "./window-trigger.js";

/** JSON-shaped options of {@link createRollingWindow}. */
export const rollingWindowOptionsSchema = z.strictObject({
  name: z.string().trim().min(1).optional(),
  /** Turns kept (the window's target); at least the current one. */
  keepTurns: z.number().int().positive(),
  /** Hysteresis: act only when more than `keepTurns + threshold` turns are in the window (default 0). */
  threshold: windowThresholdSchema.optional(),
  trigger: windowTriggerSchema.optional(),
});

/** Options of {@link createRollingWindow}. */
export type RollingWindowOptions = z.input<typeof rollingWindowOptionsSchema>;

interface Settings {
  readonly name: string;
  readonly keepTurns: number;
  readonly threshold: number;
  readonly trigger: WindowTrigger | undefined;
}

/**
 * The turn each group belongs to for the window: the turn of its LAST message. A call made in one turn whose
 * result arrived in a later one therefore stays as long as that later turn does (a group goes whole or not at
 * all), and after a cut exactly `keepTurns` turns remain in the window.
 */
function turnsOf(log: ThreadLog, groups: ReadonlyArray<Group>): number[] {
  return groups.map((g) => turnIndexOf(log.turns, g.seqs[g.seqs.length - 1]!));
}

function propose(ctx: StrategyContext, s: Settings): Proposal {
  const resolution = resolveForLog(ctx.plan, ctx.log);
  if (!triggerFires(s.trigger, ctx, resolution)) return NO_PROPOSAL;
  const window = windowedGroups(ctx.log, resolution, { keepSystem: true, keepLastUser: false });
  const turnOfGroup = turnsOf(ctx.log, window);
  const turns = [...new Set(turnOfGroup)].sort((a, b) => a - b);
  const cut = hysteresisCut(turns.length, s.keepTurns, s.threshold);
  if (cut === 0) return NO_PROPOSAL;
  const firstKept = turns[cut]!;
  const dropped = window.filter((_, i) => turnOfGroup[i]! < firstKept);
  const action = dropGroupsAction(
    ctx.log,
    dropped,
    s.name,
    `rolling window: older than the last ${s.keepTurns} turns`,
    `${cut} turn(s) dropped (${dropped.length} groups): ${turns.length} turns in the window, more than ${s.keepTurns} + ${s.threshold}; kept the newest ${s.keepTurns}`,
  );
  return { actions: [action] };
}

/**
 * A rolling window over turns (a turn starts at a user message, see `ThreadLog.turns`): keeps the newest
 * `keepTurns` turns and drops the groups of older ones in one drop action. System prompts, pinned messages and
 * pending calls are never dropped and a turn left with only those does not count; summarized or externalized
 * groups stay as they are. With a `threshold` it waits until more than `keepTurns + threshold` turns are in the
 * window, then cuts back to `keepTurns`.
 *
 * @example
 * const window = createRollingWindow({ keepTurns: 12, threshold: 4 });
 */
export function createRollingWindow(options: RollingWindowOptions): Strategy {
  const o = parseOptions(rollingWindowOptionsSchema, options, "rollingWindow");
  const settings: Settings = {
    name: o.name ?? "rollingWindow",
    keepTurns: o.keepTurns,
    threshold: o.threshold ?? 0,
    trigger: o.trigger,
  };
  return { name: settings.name, cost: "free", kinds: ["drop"], propose: (ctx) => propose(ctx, settings) };
}
