import type { LogView } from "../log/log-view.js";
import type { ActionKind, CompactionPlan } from "./compaction-plan.js";
import { resolveForLog, type SeqResolution } from "./resolve-for-log.js";

/** What became of a message under a plan, in the words of an audit. */
export type MessageFate = "kept" | "cleared" | "summarized" | "externalized" | "dropped";

/** The audit word for each action kind (an explicit include keeps the message, like the default). */
export const FATE_OF: Readonly<Record<ActionKind, MessageFate>> = Object.freeze({
  include: "kept",
  clear: "cleared",
  summarize: "summarized",
  externalize: "externalized",
  drop: "dropped",
});

/** Messages per final state; the five counts add up to the log's length. */
export type FateCounts = Readonly<Record<MessageFate, number>>;

/**
 * The final state of every message of a log under a plan: each message counted once, under the action that
 * governs it after precedence (drop > externalize > summarize > clear > include). Every figure an audit shows —
 * `compact`, `explain`, `diff`, the summary header, the model-call record — comes from here, so a message
 * summarized and then dropped is counted as dropped everywhere, and never twice.
 */
export interface FinalStates {
  readonly resolution: SeqResolution;
  /** Messages of the log (the counts add up to this). */
  readonly length: number;
  readonly counts: FateCounts;
  /** Per action index, how many messages it governs after precedence (0: overruled on every message). */
  governedBy(actionIndex: number): number;
}

/** Counts the final states of a log's messages under a plan (from the resolution's per-action tallies). */
export function finalStates(log: LogView, plan: CompactionPlan): FinalStates {
  const resolution = resolveForLog(plan, log);
  const counts: Record<MessageFate, number> = {
    kept: 0,
    cleared: 0,
    summarized: 0,
    externalized: 0,
    dropped: 0,
  };
  let governedTotal = 0;
  plan.actions.forEach((action, i) => {
    const n = resolution.governed[i] ?? 0;
    counts[FATE_OF[action.kind]] += n;
    governedTotal += n;
  });
  // Messages no action governs (never mentioned, or appended after the plan was made) are kept.
  counts.kept += log.length - governedTotal;
  return {
    resolution,
    length: log.length,
    counts: Object.freeze(counts),
    governedBy: (actionIndex) => resolution.governed[actionIndex] ?? 0,
  };
}

/** `kept 2, cleared 2, summarized 44, dropped 56`: the states that occur (all five with `all`). */
export function describeFates(counts: FateCounts, all = false): string {
  const parts = Object.entries(counts)
    .filter(([, n]) => all || n > 0)
    .map(([fate, n]) => `${fate} ${n}`);
  return parts.join(", ") || "no messages";
}
