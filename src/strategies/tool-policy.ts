/**
 * The retention policy of tool results: what one tool's policy says, the options of the retention strategy that
 * hold policies, the built-in defaults, and the resolution of the policy in force for a tool and durability class.
 */
import * as z from "zod";
import type { Durability } from "../log/message.js";
import type { DurabilityClasses } from "./durability-classes.js";

/**
 * How long one tool's results stay verbatim. A result expires when any limit says so (older than `keepTurns`
 * turns, or not among the tool's last `keepLast` results); `null` switches an inherited limit off.
 */
export interface ToolPolicy {
  /** Keep results of the last K turns (1 = the current turn only; 0 = none, once answered). */
  readonly keepTurns?: number | null;
  /**
   * Keep the last N results of this tool, counted over the whole log; 0 keeps none (every answered call's result
   * expires: a noisy tool's traffic goes, or all tool traffic as the default with `mode: "hard"`).
   */
  readonly keepLast?: number | null;
  /** Results that are durable facts: never expire. */
  readonly neverEvict?: boolean;
  /** A tool message (soft) or group (hard) with fewer result characters than this is not worth clearing. */
  readonly minChars?: number;
  /** `soft` stubs expired result bodies; `hard` drops whole tool-call groups whose results all expired. */
  readonly mode?: "soft" | "hard";
  /** In soft mode, also stub the arguments of a call message once all of its results are cleared. */
  readonly clearArgs?: boolean;
}

/** Options of `createToolResultRetention`: JSON-shaped, so a pipeline config file can hold them. */
export interface ToolResultRetentionOptions {
  /** Strategy name in plan actions; default `toolResultRetention`. */
  readonly name?: string;
  /** Overrides `DEFAULT_TOOL_POLICY` field by field. */
  readonly default?: ToolPolicy;
  /** Per tool name (the call's `name`), overriding the default field by field. */
  readonly tools?: Readonly<Record<string, ToolPolicy>>;
  /** Per durability class, overriding `DURABILITY_POLICIES` field by field. */
  readonly durability?: { readonly [D in Durability]?: ToolPolicy };
  /**
   * A stubbed result keeps its most telling lines (rare words, errors, test outcomes; see `salient-lines.ts`)
   * under its placeholder while the request stays under target; `false` stubs bare. Default `DEFAULT_KEY_LINES`.
   */
  readonly keyLines?: KeyLinesOptions | false;
}

/** How many lines a cleared result keeps (see `ToolResultRetentionOptions.keyLines`). */
export interface KeyLinesOptions {
  /** Most lines per result. */
  readonly maxLines?: number;
  /** Most tokens of those lines per result. */
  readonly maxTokens?: number;
}

/** The default key lines of a cleared result: up to 4 lines and 80 tokens. */
export const DEFAULT_KEY_LINES: Required<KeyLinesOptions> = Object.freeze({ maxLines: 4, maxTokens: 80 });

const limit = z.number().int().nonnegative().nullable().exactOptional();

/** The zod schema of a `ToolPolicy` (unknown keys rejected, limits are whole numbers ≥ 0 or null). */
export const toolPolicySchema = z
  .strictObject({
    keepTurns: limit.meta({
      description:
        "Keep results of the last K turns (1 = the current turn only, 0 = none once answered); `null` switches the limit off.",
      default: 3,
    }),
    keepLast: limit.meta({
      description:
        "Keep the last N results of this tool, counted over the whole log (0 = none once answered); `null` switches the limit off.",
      default: 10,
    }),
    neverEvict: z
      .boolean()
      .exactOptional()
      .meta({ description: "Results that are durable facts: never expire.", default: false }),
    minChars: z.number().int().nonnegative().exactOptional().meta({
      description:
        "A tool message (soft) or group (hard) with fewer result characters is not worth clearing.",
      default: 200,
    }),
    mode: z.enum(["soft", "hard"]).exactOptional().meta({
      description:
        "`soft` stubs expired result bodies; `hard` drops whole tool-call groups whose results all expired.",
      default: "soft",
    }),
    clearArgs: z.boolean().exactOptional().meta({
      description: "In soft mode, also stub the arguments of a call once all of its results are cleared.",
      default: false,
    }),
  })
  .readonly();

/** The zod schema of `ToolResultRetentionOptions`. */
export const toolResultRetentionOptionsSchema = z
  .strictObject({
    name: z.string().trim().min(1).exactOptional().meta({
      description: "Strategy name in plan actions and audit records.",
      default: "toolResultRetention",
    }),
    default: toolPolicySchema.exactOptional().meta({
      description: "The policy of every tool, overriding the built-in one field by field.",
      defaultText: "the built-in policy (the defaults of ToolPolicy)",
    }),
    tools: z.record(z.string().min(1), toolPolicySchema).readonly().exactOptional().meta({
      description: "Per tool name (the call's `name`), overriding `default` field by field.",
      defaultText: "none",
    }),
    durability: z
      .strictObject({
        ephemeral: toolPolicySchema.exactOptional().meta({
          description: "Results stale once the next step happened (thinking aloud, waiting, progress pings).",
          defaultText: "`{ keepTurns: 1, keepLast: 1 }`",
        }),
        anchoring: toolPolicySchema.exactOptional().meta({
          description: "What the agent keeps track of (its todo list, plan, notes).",
          defaultText: "`{ neverEvict: true }`",
        }),
        replayable: toolPolicySchema.exactOptional().meta({
          description: "Reads the agent can repeat to get the same answer (read, search, list).",
          defaultText: "the tool's policy",
        }),
        "non-replayable": toolPolicySchema.exactOptional().meta({
          description: "A side effect's answer, which calling again cannot give (write, send, pay).",
          defaultText: "`{ neverEvict: true }`",
        }),
      })
      .readonly()
      .exactOptional()
      .meta({
        description: "Per durability class, applied over the tool's policy field by field.",
        defaultText: "the built-in classes below",
      }),
    keyLines: z
      .union([
        z.literal(false),
        z
          .strictObject({
            maxLines: z
              .number()
              .int()
              .positive()
              .exactOptional()
              .meta({ description: "Most lines kept per cleared result.", default: 4 }),
            maxTokens: z
              .number()
              .int()
              .positive()
              .exactOptional()
              .meta({ description: "Most tokens of those lines per cleared result.", default: 80 }),
          })
          .readonly(),
      ])
      .exactOptional()
      .meta({
        description:
          "A stubbed result keeps its most telling lines (rare words, errors, test outcomes) under its placeholder while the request stays under target; `false` stubs bare.",
        defaultText: "`{ maxLines: 4, maxTokens: 80 }`",
      }),
  })
  .readonly();

/**
 * The built-in default: results stay for 3 turns and while among their tool's last 10 (one-turn agent runs with
 * hundreds of calls only ever trip the count), results under 200 characters are left alone, eviction is soft.
 */
export const DEFAULT_TOOL_POLICY: ResolvedToolPolicy = Object.freeze({
  keepTurns: 3,
  keepLast: 10,
  neverEvict: false,
  minChars: 200,
  mode: "soft",
  clearArgs: false,
});

/**
 * Built-in durability classes, applied after the tool policy: `ephemeral` results expire soonest (after their
 * turn, or as soon as the tool returns again); `replayable` results follow the tool policy (their placeholder
 * repeats their determinism stamp, see `durable-clears.ts`); `anchoring` results never expire; `non-replayable`
 * results cannot be had again, so retention never clears them (no strategy does; the fallback drops their groups
 * last).
 */
export const DURABILITY_POLICIES: { readonly [D in Durability]: ToolPolicy } = Object.freeze({
  ephemeral: Object.freeze({ keepTurns: 1, keepLast: 1 }),
  anchoring: Object.freeze({ neverEvict: true }),
  replayable: Object.freeze({}),
  "non-replayable": Object.freeze({ neverEvict: true }),
});

/** A policy with every field decided; a limit switched off is `Infinity`. */
export type ResolvedToolPolicy = {
  readonly [K in keyof ToolPolicy]-?: Exclude<ToolPolicy[K], null | undefined>;
};

/** The policy in force for a tool name and a durability class (`unknown`: whatever the message meta holds). */
export type PolicyResolver = (tool: string, durability: unknown) => ResolvedToolPolicy;

function merge(base: ResolvedToolPolicy, over: ToolPolicy | undefined): ResolvedToolPolicy {
  if (over === undefined) return base;
  const lim = (v: number | null | undefined, b: number) => (v === undefined ? b : v === null ? Infinity : v);
  return {
    keepTurns: lim(over.keepTurns, base.keepTurns),
    keepLast: lim(over.keepLast, base.keepLast),
    neverEvict: over.neverEvict ?? base.neverEvict,
    minChars: over.minChars ?? base.minChars,
    mode: over.mode ?? base.mode,
    clearArgs: over.clearArgs ?? base.clearArgs,
  };
}

/** Resolves (and memoizes) the policy of a tool name and durability class: default, tool, durability class. */
export function policyResolver(o: ToolResultRetentionOptions): PolicyResolver {
  const base = merge(DEFAULT_TOOL_POLICY, o.default);
  const tools = new Map(Object.entries(o.tools ?? {}));
  const memo = new Map<string, ResolvedToolPolicy>();
  return (tool, durability) => {
    const key = `${tool}\u0000${String(durability)}`;
    let policy = memo.get(key);
    if (policy === undefined) {
      policy = merge(base, tools.get(tool));
      if (typeof durability === "string" && Object.hasOwn(DURABILITY_POLICIES, durability)) {
        const d = durability as Durability;
        policy = merge(merge(policy, DURABILITY_POLICIES[d]), o.durability?.[d]);
      }
      memo.set(key, policy);
    }
    return policy;
  };
}

/**
 * The policy resolver under a pipeline's durability classes: a result neither it nor its call classes gets its
 * tool's configured or built-in class. Memoized per classes object (one per pipeline).
 */
export function classedPolicies(policyOf: PolicyResolver, classes: DurabilityClasses): PolicyResolver {
  let resolver = classedResolvers.get(policyOf)?.get(classes);
  if (resolver === undefined) {
    resolver = (tool, durability) => policyOf(tool, durability ?? classes.toolClass(tool));
    const byClasses = classedResolvers.get(policyOf) ?? new WeakMap();
    byClasses.set(classes, resolver);
    classedResolvers.set(policyOf, byClasses);
  }
  return resolver;
}

const classedResolvers = new WeakMap<PolicyResolver, WeakMap<DurabilityClasses, PolicyResolver>>();
