/**
 * Durability classes of tool results: which class a result is in (its own `meta.durability`, else its call's,
 * else the class configured for its tool, else the built-in class of its tool's name) and the order in which the
 * hard fallback gives up groups by class.
 */
import * as z from "zod";
import { type Group, isReasoningOnly } from "../log/groups.js";
import { type LogView, toolNameOfResult } from "../log/log-view.js";
import type { Durability, Message } from "../log/message.js";

/** Every durability class, from the first to go to the last. */
export const DURABILITIES: ReadonlyArray<Durability> = Object.freeze([
  "ephemeral",
  "replayable",
  "anchoring",
  "non-replayable",
]);

/**
 * Words of a tool name that place it in a class when no class is configured for it. The first word of the name
 * (split at `_`, `-`, `.`, `/` and lower-to-upper case changes) that appears here decides. Shell tools (`bash`,
 * `execute`, `run`) are left unclassed on purpose: a command may read or write, so its results follow the
 * ordinary policy.
 */
export const BUILT_IN_TOOL_WORDS: { readonly [D in Durability]: ReadonlyArray<string> } = Object.freeze({
  // Thinking aloud, waiting, progress pings: worthless once the next step happened.
  ephemeral: Object.freeze(["think", "sleep", "wait", "ping", "heartbeat", "progress", "status"]),
  // Reads the agent can repeat to get the same answer (or a newer one).
  replayable: Object.freeze([
    "read",
    "view",
    "open",
    "cat",
    "get",
    "fetch",
    "search",
    "find",
    "grep",
    "glob",
    "list",
    "ls",
    "lookup",
    "query",
    "show",
    "describe",
    "browse",
  ]),
  // The agent's own plan and memory: what it decided to keep track of.
  anchoring: Object.freeze(["todo", "plan", "memory", "remember", "note", "notes"]),
  // Side effects: the answer (a confirmation, a created id) cannot be had again by calling once more.
  "non-replayable": Object.freeze([
    "write",
    "create",
    "update",
    "delete",
    "remove",
    "send",
    "post",
    "submit",
    "transfer",
    "book",
    "cancel",
    "pay",
    "purchase",
    "deploy",
    "commit",
    "push",
  ]),
});

/** The zod schema of configured tool classes: a class per tool name, or `none` to leave a tool unclassed. */
export const toolClassesSchema = z
  .record(z.string().min(1), z.enum(["ephemeral", "anchoring", "replayable", "non-replayable", "none"]))
  .meta({
    description:
      "Durability class per tool name (`none`: unclassed), over the built-in classes of tool-name words; a message's own `meta.durability`, then its call's, come first.",
  });

/** Configured tool classes (see {@link toolClassesSchema}). */
export type ToolClasses = Readonly<Record<string, Durability | "none">>;

/** Options of {@link durabilityClasses}. */
export interface DurabilityClassOptions {
  /** Classes per tool name, over the built-in ones; `none` leaves a tool unclassed. */
  readonly tools?: ToolClasses;
  /** Whether tool names without a configured class get the built-in class of their words (default true). */
  readonly builtIn?: boolean;
}

/** How a pipeline classes tool results (one per pipeline; strategies read it from their context). */
export interface DurabilityClasses {
  /** Identifies the configuration, for memos that depend on it. */
  readonly key: string;
  /** The class of a tool by name when neither the result nor its call says (undefined: unclassed). */
  toolClass(name: string): Durability | undefined;
  /** The class of one result part: its message's own, its call's, else its tool's (undefined: unclassed). */
  classOfResult(log: LogView, seq: number, partIndex: number): Durability | undefined;
  /**
   * The class of the tool message at `seq` (the most durable of its results' classes) or of the call message at
   * `seq` (of its calls'); undefined for other messages and unclassed results.
   */
  classOfMessage(log: LogView, seq: number): Durability | undefined;
  /**
   * The most durable class among a group's results (undefined: none is classed), or among its calls while it has
   * no result yet.
   */
  classOfGroup(log: LogView, group: Group): Durability | undefined;
}

const RANK: { readonly [D in Durability]: number } = Object.freeze({
  ephemeral: 0,
  replayable: 1,
  anchoring: 2,
  "non-replayable": 3,
});

/**
 * The fallback's drop rank of a class: ephemeral groups go first (0), then unclassed and replayable ones (1),
 * then anchoring (2), then non-replayable (3).
 */
export function dropRank(durability: Durability | undefined): number {
  return durability === undefined ? RANK.replayable : RANK[durability];
}

function moreDurable(a: Durability | undefined, b: Durability | undefined): Durability | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return RANK[b] > RANK[a] ? b : a;
}

/** The words of a tool name: `readFile`, `read_file`, `fs.read-file` all give `read`, `file`. */
export function toolNameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0);
}

function builtInClass(name: string): Durability | undefined {
  for (const word of toolNameWords(name)) {
    for (const d of DURABILITIES) if (BUILT_IN_TOOL_WORDS[d].includes(word)) return d;
  }
  return undefined;
}

function explicit(message: Message): Durability | undefined {
  const d = message.meta.durability;
  return typeof d === "string" && Object.hasOwn(RANK, d) ? d : undefined;
}

/** Builds the classes of a pipeline; throws nothing (the pipeline config validates `tools`). */
export function durabilityClasses(options: DurabilityClassOptions = {}): DurabilityClasses {
  const tools = new Map(Object.entries(options.tools ?? {}));
  const builtIn = options.builtIn !== false;
  const memo = new Map<string, Durability | undefined>();
  const toolClass = (name: string): Durability | undefined => {
    if (memo.has(name)) return memo.get(name);
    const configured = tools.get(name);
    const d = configured === "none" ? undefined : (configured ?? (builtIn ? builtInClass(name) : undefined));
    memo.set(name, d);
    return d;
  };
  const classOfResult = (log: LogView, seq: number, partIndex: number): Durability | undefined => {
    const message = log.at(seq)!;
    if (message.parts[partIndex]?.type !== "tool_result") return undefined;
    const call = log.at(log.callSeqsOfParts(seq)[partIndex]!);
    return (
      explicit(message) ??
      (call === undefined ? undefined : explicit(call)) ??
      toolClass(toolNameOfResult(log, seq, partIndex) ?? "")
    );
  };
  // Per message object: its class under this configuration (messages are immutable).
  const byMessage = new WeakMap<Message, Durability | null>();
  const classOfMessage = (log: LogView, seq: number): Durability | undefined => {
    const message = log.at(seq)!;
    const known = byMessage.get(message);
    if (known !== undefined) return known ?? undefined;
    let d: Durability | undefined;
    if (message.role === "tool") {
      for (let i = 0; i < message.parts.length; i++) d = moreDurable(d, classOfResult(log, seq, i));
    } else {
      const own = explicit(message);
      for (const part of message.parts) {
        if (part.type === "tool_call") d = moreDurable(d, own ?? toolClass(part.name));
      }
    }
    byMessage.set(message, d ?? null);
    return d;
  };
  const key = JSON.stringify([builtIn, [...tools].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))]);
  return Object.freeze({
    key,
    toolClass,
    classOfResult,
    classOfMessage,
    classOfGroup: (log: LogView, group: Group) => {
      if (group.kind !== "tool_call") return undefined;
      // By its results (each already weighs its call's class); a group without results yet, by its calls.
      let d: Durability | undefined;
      let results = 0;
      for (const seq of group.seqs) {
        if (log.at(seq)!.role !== "tool") continue;
        results++;
        d = moreDurable(d, classOfMessage(log, seq));
      }
      // (The calls' message: a reasoning-only message may open the group.)
      return results > 0 ? d : classOfMessage(log, group.seqs.find((s) => !isReasoningOnly(log.at(s)))!);
    },
  });
}

/** The classes a pipeline uses when none are configured: the built-in ones. */
export const DEFAULT_DURABILITY_CLASSES: DurabilityClasses = durabilityClasses();
