import * as z from "zod";
import { parseOptions } from "./options.js";
import type { Strategy } from "./strategy.js";
import { createWindowStrategy } from "./window-strategy.js";
import {
  hysteresisCut,
  lastUserGroup,
  optionalTriggerSchema,
  windowThresholdSchema,
} from "./window-trigger.js";

/** JSON-shaped options of {@link createTruncation}. */
export const truncationOptionsSchema = z.strictObject({
  name: z
    .string()
    .trim()
    .min(1)
    .optional()
    .meta({ description: "Strategy name in plan actions and audit records.", default: "truncation" }),
  keepFirst: z.number().int().nonnegative().meta({
    description: "Oldest groups kept (typically the task statement); 0 keeps only the tail.",
  }),
  keepLast: z.number().int().positive().meta({ description: "Newest groups kept; at least one." }),
  threshold: windowThresholdSchema.optional().meta({
    description:
      "Hysteresis: act only when more than `keepFirst + keepLast + threshold` groups are in the window.",
    default: 0,
  }),
  // Typically `{ usage: 0.8 }`: truncate once the request uses more than 80 % of the context window.
  trigger: optionalTriggerSchema,
  startOn: z.literal("user").optional().meta({
    description:
      "`user`: the history kept after a cut starts at a user message (LangChain's `startOn`): the groups between the cut and the next user message go too, so no answer is kept whose question was dropped.",
    defaultText: "off",
  }),
});

/** Options of {@link createTruncation}. */
export type TruncationOptions = z.input<typeof truncationOptionsSchema>;

/**
 * Truncation: keeps the oldest `keepFirst` and the newest `keepLast` groups and drops the middle in one drop
 * action, whole groups only. The head stays the same from one cut to the next (those groups are never dropped
 * by this strategy), so the rendered prefix is stable. System prompts, pinned messages and pending calls are
 * never dropped and do not count; the latest user message counts but is never dropped (so the window may end a
 * cut one group over its target); summarized or externalized groups stay as they are.
 *
 * @example
 * const truncate = createTruncation({ keepFirst: 2, keepLast: 30, trigger: { usage: 0.8 } });
 */
export function createTruncation(options: TruncationOptions): Strategy {
  const o = parseOptions(truncationOptionsSchema, options, "truncation");
  const { keepFirst, keepLast, threshold = 0 } = o;
  return createWindowStrategy({
    name: o.name ?? "truncation",
    trigger: o.trigger,
    startOn: o.startOn,
    // The latest user message counts like any group (so the head is the same before and after the user speaks
    // again) but is never dropped: it says what the agent is working on.
    scope: { keepSystem: true, keepLastUser: false },
    cut: (window, log) => {
      const cut = hysteresisCut(window.length, keepFirst + keepLast, threshold);
      const lastUser = lastUserGroup(log);
      const dropped = window.slice(keepFirst, keepFirst + cut).filter((g) => g.index !== lastUser);
      return {
        dropped,
        recordReason: `truncation: between the first ${keepFirst} and the last ${keepLast} groups`,
        reason: `${dropped.length} group(s) from the middle dropped: ${window.length} groups in the window, more than ${keepFirst} + ${keepLast} + ${threshold}`,
      };
    },
  });
}
