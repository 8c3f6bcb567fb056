import { deepFreeze } from "../log/deep-freeze.js";
import type { Sensitivity } from "../log/message.js";

/** What a plan does with the messages of a span. */
export type ActionKind = "include" | "clear" | "summarize" | "externalize" | "drop";

/** Precedence when actions overlap on a message: higher wins. */
export const PRECEDENCE: Readonly<Record<ActionKind, number>> = Object.freeze({
  include: 0,
  clear: 1,
  summarize: 2,
  externalize: 3,
  drop: 4,
});

/** Explicitly keep messages as they are (the default for anything a plan does not mention). */
export interface IncludeRecord {
  readonly kind: "include";
}

/** One tool result or argument list that a clear replaced, kept for audits. */
export interface ClearedItem {
  readonly messageId: string;
  readonly callId: string;
  readonly toolName: string;
  /** Characters of the content that was replaced. */
  readonly chars: number;
}

/**
 * The exact body one part of a cleared message shows instead of a bare placeholder: salient lines of an old tool
 * result, or the head and tail of an oversized message with a marker of what was left out. It is recorded as text
 * (not as the rule that chose it) so a replay renders the same bytes whatever the scorer does later.
 */
export interface ClearExcerpt {
  /** A message of the action's span. */
  readonly messageId: string;
  /** Index in the message's `parts` of a `tool_result` or `text` part; default 0. */
  readonly partIndex?: number;
  /** What the part's content (or text) becomes, verbatim. */
  readonly text: string;
}

/** One part of a span message that a clear with `onlyParts` clears. */
export interface ClearPartRef {
  /** A message of the action's span. */
  readonly messageId: string;
  /** Index in the message's `parts` of a `tool_result`, `tool_call`, `text` or `reasoning` part. */
  readonly partIndex: number;
}

/** Replace bodies by short placeholders while keeping call/result pairing. */
export interface ClearRecord {
  readonly kind: "clear";
  /** Also replace the arguments of the span's tool calls. */
  readonly clearArgs?: boolean;
  /** What was cleared (informational; the placeholder is derived from the message itself). */
  readonly cleared?: ReadonlyArray<ClearedItem>;
  /** Parts shown as an excerpt instead of the placeholder (absent: every cleared part gets its placeholder). */
  readonly excerpts?: ReadonlyArray<ClearExcerpt>;
  /**
   * Clear only these parts, so the unit of a clear can be one call: one result of a tool message answering
   * parallel calls, one call's arguments, one message's reasoning. A listed result or text gets its placeholder
   * (or excerpt), a listed call its arguments' placeholder, and a listed reasoning part is left out of the
   * request (a message left with no parts is not sent); parts not listed render unchanged. Absent: the whole
   * message is cleared as before (reasoning kept), so plans without it render and hash as they always did.
   */
  readonly onlyParts?: ReadonlyArray<ClearPartRef>;
}

/** A structured summary: the fields a drift-resistant summary keeps. */
export interface StructuredSummary {
  readonly goals?: ReadonlyArray<string>;
  readonly decisions?: ReadonlyArray<string>;
  readonly constraints?: ReadonlyArray<string>;
  readonly openItems?: ReadonlyArray<string>;
  readonly toolOutcomes?: ReadonlyArray<string>;
  readonly artifacts?: ReadonlyArray<string>;
}

/** Replace a span by one synthetic summary message. */
export interface SummarizationRecord {
  readonly kind: "summarize";
  /** The text the model sees. */
  readonly summary: string;
  readonly structured?: StructuredSummary;
  readonly summarizerId: string;
  readonly promptVersion: string;
  /** Content hash of the summarized span (the summary cache key). */
  readonly spanHash?: string;
  /**
   * The strictest class among the messages the summary stands for (a reader below it sees a stub instead);
   * absent in older plans and from custom strategies, when a render reads it from the span's messages.
   */
  readonly sensitivity?: Sensitivity;
}

/** Replace a span by a pointer to an artifact plus a short summary. */
export interface ExternalizationRecord {
  readonly kind: "externalize";
  readonly artifactId: string;
  readonly summary: string;
  readonly sizeChars?: number;
  /** Tenant the artifact was written for (so a read under another tenant can say so); absent in older plans. */
  readonly tenant?: string;
  /** The strictest class among the span's messages, as for a summary (absent in older plans). */
  readonly sensitivity?: Sensitivity;
}

/** Omit a span from the request. */
export interface DropRecord {
  readonly kind: "drop";
  readonly reason: string;
  /**
   * Leave one short marker where a dropped run begins when this drop governs its first message (render format
   * `cl-render/5` on): how many messages were left out, and that `recall` finds them by query. Without it a drop
   * leaves no trace. A strategy that sets it must measure what it drops by rendering (the marker costs tokens).
   */
  readonly marker?: boolean;
}

/** The record an action of kind K carries. */
export interface RecordByKind {
  readonly include: IncludeRecord;
  readonly clear: ClearRecord;
  readonly summarize: SummarizationRecord;
  readonly externalize: ExternalizationRecord;
  readonly drop: DropRecord;
}

/** Any action record. */
export type ActionRecord = RecordByKind[ActionKind];

/** One span action of a plan, tagged by `kind`. */
export type PlanAction = {
  readonly [K in ActionKind]: {
    readonly kind: K;
    /** Explicit message ids (never index ranges), in log order. */
    readonly span: ReadonlyArray<string>;
    readonly record: RecordByKind[K];
    /** Name of the strategy that proposed the action. */
    readonly strategy: string;
    /** Why, in words a person reads in an audit. */
    readonly reason: string;
  };
}[ActionKind];

/** A versioned compaction plan: pure data, JSON round-trippable. */
export interface CompactionPlan {
  readonly threadId: string;
  /** 0 is the empty plan; each commit increments it. */
  readonly version: number;
  /** Log length the plan was computed against; it may only mention messages with seq < basedOnSeq. */
  readonly basedOnSeq: number;
  readonly actions: ReadonlyArray<PlanAction>;
}

/** The empty plan (version 0): every message is included. */
export function emptyPlan(threadId: string): CompactionPlan {
  return deepFreeze({ threadId, version: 0, basedOnSeq: 0, actions: [] });
}

/** Builds a frozen plan value. */
export function createPlan(plan: CompactionPlan): CompactionPlan {
  return deepFreeze(structuredClone(plan) as CompactionPlan);
}

const parents = new WeakMap<CompactionPlan, CompactionPlan>();
// The first plan made with each frozen actions list. A plan made from another plan's very list (a background
// run's result committed as the next version of a newer plan) resolves exactly like it, so it is its parent.
const byActions = new WeakMap<ReadonlyArray<PlanAction>, CompactionPlan>();

/**
 * The next version of a plan: same thread, version + 1, the given actions and log length. When the new actions
 * start with the previous plan's actions (the same objects), the previous plan is remembered as the parent so
 * resolution and validation can extend its results instead of starting over; failing that, a plan made with the
 * same frozen actions list and `basedOnSeq` is (a twin resolves and validates exactly like it).
 */
export function nextPlan(
  previous: CompactionPlan,
  actions: ReadonlyArray<PlanAction>,
  basedOnSeq: number,
): CompactionPlan {
  // Freeze new actions without walking their spans: ids are strings, and a span can hold 100k of them.
  for (const action of actions) {
    if (Object.isFrozen(action)) continue;
    Object.freeze(action.span);
    deepFreeze(action.record);
    Object.freeze(action);
  }
  const plan: CompactionPlan = Object.freeze({
    threadId: previous.threadId,
    version: previous.version + 1,
    basedOnSeq,
    actions: Object.isFrozen(actions) ? actions : Object.freeze([...actions]),
  });
  if (basedOnSeq >= previous.basedOnSeq && previous.actions.every((a, i) => actions[i] === a)) {
    parents.set(plan, previous);
  } else {
    const twin = byActions.get(plan.actions);
    if (twin?.threadId === plan.threadId && twin.basedOnSeq === basedOnSeq) parents.set(plan, twin);
  }
  if (!byActions.has(plan.actions)) byActions.set(plan.actions, plan);
  forgetDistantAncestor(plan);
  return plan;
}

/**
 * How many generations of parents a plan keeps reachable. Parents are an optimization (memos of strategies and
 * resolution are found along the lineage), and an unbounded chain would keep every plan a long-lived thread ever
 * had, with its memos, in memory.
 */
export const LINEAGE_DEPTH = 32;

function forgetDistantAncestor(plan: CompactionPlan): void {
  let ancestor: CompactionPlan | undefined = plan;
  for (let i = 0; i < LINEAGE_DEPTH && ancestor !== undefined; i++) ancestor = parents.get(ancestor);
  if (ancestor !== undefined) parents.delete(ancestor);
}

/** A plan whose actions are the previous plan's followed by `added`. */
export function extendPlan(
  previous: CompactionPlan,
  added: ReadonlyArray<PlanAction>,
  basedOnSeq: number,
): CompactionPlan {
  return nextPlan(previous, [...previous.actions, ...added], basedOnSeq);
}

/** The plan this one extends (same leading actions), when it was made by `nextPlan`/`extendPlan`. */
export function parentOf(plan: CompactionPlan): CompactionPlan | undefined {
  return parents.get(plan);
}
