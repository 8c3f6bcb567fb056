import * as z from "zod";
import type { Group } from "../log/groups.js";
import type { LogView } from "../log/log-view.js";
import { turnIndexOf } from "../log/turns.js";
import { parseOptions } from "./options.js";
import type { Strategy } from "./strategy.js";
import { createWindowStrategy } from "./window-strategy.js";
import { hysteresisCut, optionalTriggerSchema, windowThresholdSchema } from "./window-trigger.js";

/** JSON-shaped options of {@link createRollingWindow}. */
export const rollingWindowOptionsSchema = z.strictObject({
  name: z
    .string()
    .trim()
    .min(1)
    .optional()
    .meta({ description: "Strategy name in plan actions and audit records.", default: "rollingWindow" }),
  keepTurns: z
    .number()
    .int()
    .positive()
    .meta({ description: "Newest turns kept (the window's size); at least the current one." }),
  threshold: windowThresholdSchema.optional().meta({
    description: "Hysteresis: act only when more than `keepTurns + threshold` turns are in the window.",
    default: 0,
  }),
  trigger: optionalTriggerSchema,
  startOn: z.literal("user").optional().meta({
    description:
      "`user`: the history kept after a cut starts at a user message (LangChain's `startOn`): the groups between the cut and the next user message go too, so no answer is kept whose question was dropped.",
    defaultText: "off",
  }),
});

/** Options of {@link createRollingWindow}. */
export type RollingWindowOptions = z.input<typeof rollingWindowOptionsSchema>;

/**
 * The turn each group belongs to for the window: the turn of its LAST message. A call made in one turn whose
 * result arrived in a later one therefore stays as long as that later turn does (a group goes whole or not at
 * all), and after a cut exactly `keepTurns` turns remain in the window.
 */
function turnsOf(log: LogView, groups: ReadonlyArray<Group>): number[] {
  return groups.map((g) => turnIndexOf(log.turns, g.seqs[g.seqs.length - 1]!));
}

/**
 * A rolling window over turns (a turn starts at a user message, see `LogView.turns`): keeps the newest
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
  const { keepTurns, threshold = 0 } = o;
  return createWindowStrategy({
    name: o.name ?? "rollingWindow",
    trigger: o.trigger,
    startOn: o.startOn,
    scope: { keepSystem: true, keepLastUser: false },
    cut: (window, log) => {
      const turnOfGroup = turnsOf(log, window);
      const turns = [...new Set(turnOfGroup)].sort((a, b) => a - b);
      const cut = hysteresisCut(turns.length, keepTurns, threshold);
      if (cut === 0) return undefined;
      const firstKept = turns[cut]!;
      const dropped = window.filter((_, i) => turnOfGroup[i]! < firstKept);
      return {
        dropped,
        recordReason: `rolling window: older than the last ${keepTurns} turns`,
        reason: `${cut} turn(s) dropped (${dropped.length} groups): ${turns.length} turns in the window, more than ${keepTurns} + ${threshold}; kept the newest ${keepTurns}`,
      };
    },
  });
}
