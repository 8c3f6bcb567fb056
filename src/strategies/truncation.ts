import { z } from "zod";
import { resolveForLog } from "../plan/resolve-for-log.js";
import { parseOptions } from "./options.js";
import { NO_PROPOSAL, type Proposal, type Strategy, type StrategyContext } from "./strategy.js";
import {
  dropGroupsAction,
  hysteresisCut,
  lastUserGroup,
  triggerFires,
  type WindowTrigger,
  windowedGroups,
  windowThresholdSchema,
  windowTriggerSchema,
} from "./window-trigger.js";

/** JSON-shaped options of {@link createTruncation}. */
export const truncationOptionsSchema = z.strictObject({
  name: z.string().trim().min(1).optional(),
  /** Oldest groups kept (typically the task statement); 0 keeps only the tail. */
  keepFirst: z.number().int().nonnegative(),
  /** Newest groups kept; at least one. */
  keepLast: z.number().int().positive(),
  /** Hysteresis: act only when more than `keepFirst + keepLast + threshold` groups are in the window (default 0). */
  threshold: windowThresholdSchema.optional(),
  /** Typically `{ usage: 0.8 }`: truncate once the request uses more than 80 % of the context window. */
  trigger: windowTriggerSchema.optional(),
});

/** Options of {@link createTruncation}. */
export type TruncationOptions = z.input<typeof truncationOptionsSchema>;

interface Settings {
  readonly name: string;
  readonly keepFirst: number;
  readonly keepLast: number;
  readonly threshold: number;
  readonly trigger: WindowTrigger | undefined;
}

function propose(ctx: StrategyContext, s: Settings): Proposal {
  const resolution = resolveForLog(ctx.plan, ctx.log);
  if (!triggerFires(s.trigger, ctx, resolution)) return NO_PROPOSAL;
  // The latest user message counts like any group (so the head is the same before and after the user speaks
  // again) but is never dropped: it says what the agent is working on.
  const window = windowedGroups(ctx.log, resolution, { keepSystem: true, keepLastUser: false });
  const cut = hysteresisCut(window.length, s.keepFirst + s.keepLast, s.threshold);
  const lastUser = lastUserGroup(ctx.log);
  const dropped = window.slice(s.keepFirst, s.keepFirst + cut).filter((g) => g.index !== lastUser);
  if (dropped.length === 0) return NO_PROPOSAL;
  const action = dropGroupsAction(
    ctx.log,
    dropped,
    s.name,
    `truncation: between the first ${s.keepFirst} and the last ${s.keepLast} groups`,
    `${dropped.length} group(s) from the middle dropped: ${window.length} groups in the window, more than ${s.keepFirst} + ${s.keepLast} + ${s.threshold}`,
  );
  return { actions: [action] };
}

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
  const settings: Settings = {
    name: o.name ?? "truncation",
    keepFirst: o.keepFirst,
    keepLast: o.keepLast,
    threshold: o.threshold ?? 0,
    trigger: o.trigger,
  };
  return { name: settings.name, cost: "free", kinds: ["drop"], propose: (ctx) => propose(ctx, settings) };
}
