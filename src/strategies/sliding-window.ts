import * as z from "zod";
import { parseOptions } from "./options.js";
import type { Strategy } from "./strategy.js";
import { createWindowStrategy } from "./window-strategy.js";
import { hysteresisCut, optionalTriggerSchema, windowThresholdSchema } from "./window-trigger.js";

/** JSON-shaped options of {@link createSlidingWindow}. */
export const slidingWindowOptionsSchema = z.strictObject({
  name: z
    .string()
    .trim()
    .min(1)
    .optional()
    .meta({ description: "Strategy name in plan actions and audit records.", default: "slidingWindow" }),
  // A window of size zero is not a window.
  keepGroups: z.number().int().positive().meta({ description: "Newest groups kept (the window's size)." }),
  threshold: windowThresholdSchema.optional().meta({
    description: "Hysteresis: act only when more than `keepGroups + threshold` groups are in the window.",
    default: 0,
  }),
  keepSystem: z
    .boolean()
    .refine((v) => v, {
      message:
        "false cannot take effect: system prompts are part of the protected core and are never dropped; leave keepSystem out (to stop sending a system prompt, leave it out of the thread)",
    })
    .optional()
    .meta({
      description:
        "Kept for configs that spell out the default: system prompts are part of the protected core every request keeps, so they always stay outside the window; `false` is refused up front (it could never take effect).",
      default: true,
    }),
  trigger: optionalTriggerSchema,
  startOn: z.literal("user").optional().meta({
    description:
      "`user`: the history kept after a cut starts at a user message (LangChain's `startOn`): the groups between the cut and the next user message go too, so no answer is kept whose question was dropped.",
    defaultText: "off",
  }),
});

/** Options of {@link createSlidingWindow}. */
export type SlidingWindowOptions = z.input<typeof slidingWindowOptionsSchema>;

/**
 * A sliding window over groups: keeps the newest `keepGroups` groups and drops the older ones in one drop
 * action, whole groups only. System prompts (always: `keepSystem: false` is refused), pinned messages, pending calls and
 * the latest user message are never dropped and do not count against `keepGroups`; summarized or externalized
 * groups are left as they are and do not count either (see `windowedGroups`). With a `threshold` it waits until
 * the window holds more than `keepGroups + threshold` groups, then cuts back to `keepGroups`.
 *
 * @example
 * const window = createSlidingWindow({ keepGroups: 20, threshold: 10, trigger: { usage: 0.7 } });
 */
export function createSlidingWindow(options: SlidingWindowOptions): Strategy {
  const o = parseOptions(slidingWindowOptionsSchema, options, "slidingWindow");
  const { keepGroups, threshold = 0 } = o;
  return createWindowStrategy({
    name: o.name ?? "slidingWindow",
    trigger: o.trigger,
    startOn: o.startOn,
    scope: { keepSystem: true, keepLastUser: true },
    cut: (window) => {
      const cut = hysteresisCut(window.length, keepGroups, threshold);
      return {
        dropped: window.slice(0, cut),
        recordReason: `sliding window: older than the last ${keepGroups} groups`,
        reason: `${cut} group(s) dropped: ${window.length} groups in the window, more than ${keepGroups} + ${threshold}; kept the newest ${keepGroups}`,
      };
    },
  });
}
