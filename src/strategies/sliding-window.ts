import { z } from "zod";
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

/** JSON-shaped options of {@link createSlidingWindow}. */
export const slidingWindowOptionsSchema = z.strictObject({
  name: z.string().trim().min(1).optional(),
  /** Groups kept (the window's target); a window of size zero is not a window. */
  keepGroups: z.number().int().positive(),
  /** Hysteresis: act only when more than `keepGroups + threshold` groups are in the window (default 0). */
  threshold: windowThresholdSchema.optional(),
  /** Keep system prompts outside the window (default true); false lets old system messages go too. */
  keepSystem: z.boolean().optional(),
  trigger: windowTriggerSchema.optional(),
});

/** Options of {@link createSlidingWindow}. */
export type SlidingWindowOptions = z.input<typeof slidingWindowOptionsSchema>;

interface Settings {
  readonly name: string;
  readonly keepGroups: number;
  readonly threshold: number;
  readonly keepSystem: boolean;
  readonly trigger: WindowTrigger | undefined;
}

function propose(ctx: StrategyContext, s: Settings): Proposal {
  const resolution = resolveForLog(ctx.plan, ctx.log);
  if (!triggerFires(s.trigger, ctx, resolution)) return NO_PROPOSAL;
  const window = windowedGroups(ctx.log, resolution, { keepSystem: s.keepSystem, keepLastUser: true });
  const cut = hysteresisCut(window.length, s.keepGroups, s.threshold);
  if (cut === 0) return NO_PROPOSAL;
  const dropped = window.slice(0, cut);
  const action = dropGroupsAction(
    ctx.log,
    dropped,
    s.name,
    `sliding window: older than the last ${s.keepGroups} groups`,
    `${cut} group(s) dropped: ${window.length} groups in the window, more than ${s.keepGroups} + ${s.threshold}; kept the newest ${s.keepGroups}`,
  );
  return { actions: [action] };
}

/**
 * A sliding window over groups: keeps the newest `keepGroups` groups and drops the older ones in one drop
 * action, whole groups only. System prompts (unless `keepSystem` is false), pinned messages, pending calls and
 * the latest user message are never dropped and do not count against `keepGroups`; summarized or externalized
 * groups are left as they are and do not count either (see `windowedGroups`). With a `threshold` it waits until
 * the window holds more than `keepGroups + threshold` groups, then cuts back to `keepGroups`.
 *
 * @example
 * const window = createSlidingWindow({ keepGroups: 20, threshold: 10, trigger: { usage: 0.7 } });
 */
export function createSlidingWindow(options: SlidingWindowOptions): Strategy {
  const o = parseOptions(slidingWindowOptionsSchema, options, "slidingWindow");
  const settings: Settings = {
    name: o.name ?? "slidingWindow",
    keepGroups: o.keepGroups,
    threshold: o.threshold ?? 0,
    keepSystem: o.keepSystem ?? true,
    trigger: o.trigger,
  };
  return { name: settings.name, cost: "free", kinds: ["drop"], propose: (ctx) => propose(ctx, settings) };
}
