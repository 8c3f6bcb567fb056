import * as z from "zod";
import { ValidationError } from "../errors/ledger-error.js";
import { canonicalJson } from "../log/canonical-json.js";
import type { Group } from "../log/groups.js";
import type { LogView } from "../log/log-view.js";
import { type Sensitivity, type ToolResultPart, textOf, toolCallsOf } from "../log/message.js";
import { sensitivityOfGroup } from "../log/sensitivity.js";
import type { ExternalizationRecord, PlanAction } from "../plan/compaction-plan.js";
import { resolveForLog, type SeqResolution } from "../plan/resolve-for-log.js";
import { formatSize, pointerText } from "../texts/placeholders.js";
import { compactable, groupTokens, untouched } from "./group-accounting.js";
import { parseOptions } from "./options.js";
import type { Proposal, Strategy, StrategyContext, StrategyNote } from "./strategy.js";
import { optionalTriggerSchema, triggerFires, type WindowTrigger } from "./window-trigger.js";

/** JSON-shaped options of {@link createExternalization} (the store is passed beside them, see its options type). */
export const externalizationOptionsSchema = z.strictObject({
  name: z
    .string()
    .trim()
    .min(1)
    .optional()
    .meta({ description: "Strategy name in plan actions and audit records.", default: "externalization" }),
  tenant: z.string().min(1).meta({
    description: "Tenant the artifacts are written for (reads are checked against it).",
    defaultText: "the engine's `tenant` (in a pipeline config)",
  }),
  minChars: z.number().int().positive().meta({
    description:
      "A group moves out when its content (texts, call arguments, results) has more characters than this.",
  }),
  summaryChars: z
    .number()
    .int()
    .positive()
    .optional()
    .meta({ description: "Longest summary shown in the pointer, in characters.", default: 200 }),
  keepRecentGroups: z.number().int().nonnegative().optional().meta({
    description: "The newest groups never moved out (1: the results the model is about to read).",
    default: 1,
  }),
  // A pointer outliving its artifact is useless: leave it out unless the store must forget.
  ttlMs: z.number().int().positive().optional().meta({
    description: "Lifetime of the artifacts, in milliseconds.",
    defaultText: "never expire",
  }),
  trigger: optionalTriggerSchema,
});

/** What externalization writes for one group: the stores' `ArtifactInput`, as far as it fills it in. */
export interface ArtifactWrite {
  readonly content: string;
  readonly tenant: string;
  readonly sensitivity: Sensitivity;
  readonly threadId: string;
  readonly sourceIds: ReadonlyArray<string>;
  readonly ttlMs?: number;
}

/**
 * Where externalized groups go: the part of an artifact store the strategy uses (any `ArtifactStore` is one). A
 * put answers with the artifact's id, which the pointer names, and the size it stored.
 */
export interface ArtifactPort {
  put(input: ArtifactWrite): Promise<{ readonly artifactId: string; readonly sizeChars: number }>;
}

/** Options of {@link createExternalization}: the JSON part plus the store the artifacts go to. */
export type ExternalizationOptions = z.input<typeof externalizationOptionsSchema> & {
  readonly store: ArtifactPort;
};

interface Settings {
  readonly name: string;
  readonly store: ArtifactPort;
  readonly tenant: string;
  readonly minChars: number;
  readonly summaryChars: number;
  readonly keepRecentGroups: number;
  readonly ttlMs: number | undefined;
  readonly trigger: WindowTrigger | undefined;
}

/**
 * The artifact content of a group: one canonical JSON line (`id`, `role`, `parts`) per message in log order. It
 * is faithful (every part, reasoning included, byte for byte) and deterministic, so the same group always gives
 * the same content and, with a content-derived id, the same artifact.
 */
export function groupArtifactContent(log: LogView, group: Group): string {
  return group.seqs
    .map((seq) => {
      const m = log.at(seq)!;
      return canonicalJson({ id: m.id, role: m.role, parts: m.parts });
    })
    .join("\n");
}

/** Characters of a group's bulk: texts, call arguments and result contents. */
function bulkChars(log: LogView, group: Group): number {
  let chars = 0;
  for (const seq of group.seqs) {
    for (const p of log.at(seq)!.parts) {
      if (p.type === "text") chars += p.text.length;
      else if (p.type === "tool_call") chars += p.args.length;
      else if (p.type === "tool_result") chars += p.content.length;
    }
  }
  return chars;
}

/** One line of at most `max` characters: whitespace collapsed, cut with `…` (never inside a surrogate pair). */
export function clip(text: string, max: number): string {
  const start = text.search(/\S/);
  if (start < 0) return "";
  // Only the head can survive, so a huge result is never scanned whole.
  const window = max * 2 + 64;
  const head = text
    .slice(start, start + window)
    .replace(/\s+/g, " ")
    .trim();
  if (text.length - start <= window && head.length <= max) return head;
  let end = Math.min(head.length, max - 1);
  const last = head.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${head.slice(0, end).trimEnd()}…`;
}

/** `name(args) → result head` for every call of a tool-call group, or the head of an assistant text. */
export function describeGroup(log: LogView, group: Group, maxChars: number): string {
  const bits: string[] = [];
  for (const seq of group.seqs) {
    const message = log.at(seq)!;
    if (message.role !== "assistant") continue;
    const calls = toolCallsOf(message);
    if (calls.length === 0) {
      bits.push(`assistant: ${clip(textOf(message), maxChars)}`);
      continue;
    }
    for (const call of calls) {
      const result = resultOf(log, group, seq, call.callId);
      const outcome =
        result === undefined
          ? ""
          : ` → ${result.isError === true ? "error: " : ""}${clip(result.content, 80)}`;
      bits.push(`${call.name}(${clip(call.args, 60)})${outcome}`);
    }
  }
  return clip(bits.join("; "), maxChars);
}

/** The result part answering a call of the message at `callSeq`, by the log's own pairing (ids may be reused). */
function resultOf(log: LogView, group: Group, callSeq: number, callId: string): ToolResultPart | undefined {
  for (const seq of group.seqs) {
    const message = log.at(seq)!;
    if (message.role !== "tool") continue;
    const owners = log.callSeqsOfParts(seq);
    for (let i = 0; i < message.parts.length; i++) {
      const part = message.parts[i]!;
      if (part.type === "tool_result" && owners[i] === callSeq && part.callId === callId) return part;
    }
  }
  return undefined;
}

/** A group worth moving out: its pointer costs fewer tokens than the group itself. */
function worthIt(
  ctx: StrategyContext,
  resolution: SeqResolution,
  group: Group,
  summary: string,
  size: number,
): boolean {
  // The real id is known only after the put; a generous stand-in keeps the estimate on the safe side.
  const record: ExternalizationRecord = {
    kind: "externalize",
    artifactId: "x".repeat(40),
    summary,
    sizeChars: size,
  };
  const pointer = ctx.counter.countMessage({
    role: "assistant",
    parts: [{ type: "text", text: pointerText(record, group.seqs.length) }],
  });
  return pointer < groupTokens(ctx.log, group, resolution, ctx.counter);
}

/** Groups to move out, oldest first: untouched, compactable, not among the newest, big enough. */
function candidates(log: LogView, resolution: SeqResolution, s: Settings): Group[] {
  const out: Group[] = [];
  const limit = log.groupCount - s.keepRecentGroups;
  for (let g = 0; g < limit; g++) {
    const group = log.groupAt(g);
    // User messages stay: a pointer is an assistant message, and would put the user's words in the model's mouth.
    if (group.kind !== "tool_call" && group.kind !== "assistant_text") continue;
    if (!compactable(log, group) || !untouched(group, resolution)) continue;
    if (bulkChars(log, group) > s.minChars) out.push(group);
  }
  return out;
}

type Outcome = { readonly action: PlanAction } | { readonly note: StrategyNote } | undefined;

async function externalize(
  ctx: StrategyContext,
  resolution: SeqResolution,
  s: Settings,
  group: Group,
): Promise<Outcome> {
  const { log } = ctx;
  const content = groupArtifactContent(log, group);
  const summary = describeGroup(log, group, s.summaryChars);
  if (!worthIt(ctx, resolution, group, summary, content.length)) return undefined;
  try {
    const meta = await s.store.put({
      content,
      tenant: s.tenant,
      sensitivity: sensitivityOfGroup(log, group),
      threadId: log.threadId,
      sourceIds: group.messageIds,
      ...(s.ttlMs === undefined ? {} : { ttlMs: s.ttlMs }),
    });
    const record: ExternalizationRecord = {
      kind: "externalize",
      artifactId: meta.artifactId,
      summary,
      sizeChars: meta.sizeChars,
      tenant: s.tenant,
      sensitivity: sensitivityOfGroup(log, group),
    };
    const reason = `${group.messageIds.length} message(s) (${formatSize(meta.sizeChars)}) moved to artifact ${meta.artifactId}`;
    return { action: { kind: "externalize", span: group.messageIds, record, strategy: s.name, reason } };
  } catch (cause) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    const message = `could not store group ${group.messageIds[0]} (${formatSize(content.length)}): ${detail}; it stays in the request`;
    return { note: { level: "error", code: "artifact_store_failed", message, cause } };
  }
}

async function propose(ctx: StrategyContext, s: Settings): Promise<Proposal> {
  const resolution = resolveForLog(ctx.plan, ctx.log);
  if (!triggerFires(s.trigger, ctx, resolution)) return { actions: [] };
  const actions: PlanAction[] = [];
  const notes: StrategyNote[] = [];
  for (const group of candidates(ctx.log, resolution, s)) {
    if (ctx.signal?.aborted === true) {
      notes.push({
        level: "warning",
        code: "aborted",
        message: "aborted; the remaining groups stay for the next run",
      });
      break;
    }
    const outcome = await externalize(ctx, resolution, s, group);
    if (outcome === undefined) continue;
    if ("action" in outcome) actions.push(outcome.action);
    else notes.push(outcome.note);
  }
  return notes.length === 0 ? { actions } : { actions, notes };
}

/**
 * Externalization: moves big, settled groups (a tool call with its results, or a long assistant text) to an
 * artifact store and replaces each by a pointer with a short deterministic summary (tool names, short arguments,
 * the head of each result). Only groups the plan leaves untouched qualify; system prompts, user messages,
 * pinned messages, pending calls and the newest `keepRecentGroups` groups stay. Each group is one put and one
 * externalize action: a failed put becomes an error note and that group stays in place. The store is not JSON,
 * so it comes in the options beside the fields `externalizationOptionsSchema` checks.
 *
 * @example
 * const externalize = createExternalization({ store: createMemoryArtifactStore(), tenant: "acme", minChars: 8_000 });
 */
export function createExternalization(options: ExternalizationOptions): Strategy {
  const { store, ...json } = options ?? ({} as ExternalizationOptions);
  const o = parseOptions(externalizationOptionsSchema, json, "externalization");
  if (typeof store?.put !== "function") {
    throw new ValidationError(
      "invalid externalization option store: an ArtifactStore (with put) is required",
      {
        field: "store",
      },
    );
  }
  const settings: Settings = {
    name: o.name ?? "externalization",
    store,
    tenant: o.tenant,
    minChars: o.minChars,
    summaryChars: o.summaryChars ?? 200,
    keepRecentGroups: o.keepRecentGroups ?? 1,
    ttlMs: o.ttlMs,
    trigger: o.trigger,
  };
  return {
    name: settings.name,
    cost: "free",
    kinds: ["externalize"],
    propose: (ctx) => propose(ctx, settings),
  };
}

/** Where {@link storeGroup} writes: the store, the tenant, and the pointer's settings. */
export interface GroupStore {
  readonly store: ArtifactPort;
  readonly tenant: string;
  /** Strategy name in the action. */
  readonly name: string;
  /** Longest summary shown in the pointer (default 200 characters). */
  readonly summaryChars?: number;
}

/**
 * Writes one group to the artifact store and returns the externalize action whose pointer stands for it (no
 * check that the pointer is cheaper: for a caller that would otherwise drop the group, any pointer is a gain for
 * the model). Throws what the store throws.
 */
export async function storeGroup(ctx: StrategyContext, group: Group, to: GroupStore): Promise<PlanAction> {
  const { log } = ctx;
  const content = groupArtifactContent(log, group);
  const summary = describeGroup(log, group, to.summaryChars ?? 200);
  const meta = await to.store.put({
    content,
    tenant: to.tenant,
    sensitivity: sensitivityOfGroup(log, group),
    threadId: log.threadId,
    sourceIds: group.messageIds,
  });
  const record: ExternalizationRecord = {
    kind: "externalize",
    artifactId: meta.artifactId,
    summary,
    sizeChars: meta.sizeChars,
    tenant: to.tenant,
    sensitivity: sensitivityOfGroup(log, group),
  };
  const reason = `${group.messageIds.length} message(s) (${formatSize(meta.sizeChars)}) moved to artifact ${meta.artifactId} rather than dropped`;
  return { kind: "externalize", span: group.messageIds, record, strategy: to.name, reason };
}
