/**
 * The sums one replay collects, call by call, and how they add up over runs. Every measure keeps its numerator
 * and denominator, so runs of different lengths pool by summing both.
 */
import type { FactKind } from "./quality-facts.js";
import type { CallContext, RequestVerdict } from "./quality-judge.js";

type PerKind = Record<FactKind, number>;

/** A numerator over a denominator. */
export interface Share {
  hit: number;
  of: number;
}

/** What one replay (or many, added up) collected. */
export interface RunTally {
  calls: number;
  failed: number;
  overBudget: number;
  invalid: number;
  /** The first few failure messages and request problems, prefixed with the call number. */
  readonly notes: string[];
  /** Facts kept at the run's final call (a failed final call keeps none), per kind. */
  finalKept: PerKind;
  finalPlanted: PerKind;
  /** Over every call: facts kept / facts planted so far. */
  meanKept: PerKind;
  meanPlanted: PerKind;
  /** Over every call: tool calls visible / tool calls made so far. */
  callsVisible: Share;
  finalCalls: Share;
  /** Calls whose request holds the pinned constraint verbatim, over the calls where it fits. */
  pinned: Share;
  task: Share;
  /** Sum over consecutive sent requests of reused leading tokens / previous request's message tokens. */
  reuse: Share;
  /** Sum over sent requests of tokens / budget. */
  fill: Share;
  readonly ms: number[];
}

const kinds = (): PerKind => ({ identifier: 0, word: 0 });

/** An empty tally. */
export function emptyTally(): RunTally {
  return {
    calls: 0,
    failed: 0,
    overBudget: 0,
    invalid: 0,
    notes: [],
    finalKept: kinds(),
    finalPlanted: kinds(),
    meanKept: kinds(),
    meanPlanted: kinds(),
    callsVisible: { hit: 0, of: 0 },
    finalCalls: { hit: 0, of: 0 },
    pinned: { hit: 0, of: 0 },
    task: { hit: 0, of: 0 },
    reuse: { hit: 0, of: 0 },
    fill: { hit: 0, of: 0 },
    ms: [],
  };
}

const NOTES = 3;

function note(tally: RunTally, text: string): void {
  if (tally.notes.length < NOTES) tally.notes.push(`call ${tally.calls}: ${text}`);
}

function plantedOf(context: CallContext): PerKind {
  const out = kinds();
  for (const f of context.facts) if (f.messageIndex < context.appended) out[f.kind]++;
  return out;
}

/** The figures that depend only on what could fit (fits flags). */
interface Fits {
  readonly pinnedFits: boolean;
  readonly taskFits: boolean;
}

/** Adds one judged request. */
export function tallyVerdict(
  t: RunTally,
  v: RequestVerdict,
  previous: RequestVerdict | undefined,
  fits: Fits,
): void {
  t.calls++;
  if (v.overBudget) t.overBudget++;
  if (v.invalid) t.invalid++;
  if (v.overBudget) note(t, `over budget: ${v.tokens} tokens`);
  if (v.problem !== undefined) note(t, `invalid: ${v.problem.slice(0, 160)}`);
  for (const k of ["identifier", "word"] as const) {
    t.meanKept[k] += v.kept[k];
    t.meanPlanted[k] += v.planted[k];
  }
  t.finalKept = { ...v.kept };
  t.finalPlanted = { ...v.planted };
  t.callsVisible.hit += v.callsVisible;
  t.callsVisible.of += v.callsSoFar;
  t.finalCalls = { hit: v.callsVisible, of: v.callsSoFar };
  if (fits.pinnedFits) t.pinned = { hit: t.pinned.hit + (v.pinnedVerbatim ? 1 : 0), of: t.pinned.of + 1 };
  if (fits.taskFits) t.task = { hit: t.task.hit + (v.taskVerbatim ? 1 : 0), of: t.task.of + 1 };
  if (previous !== undefined && previous.messageTokens > 0) {
    t.reuse.hit += v.reusedTokens / previous.messageTokens;
    t.reuse.of++;
  }
  t.fill.hit += v.tokens / v.budget;
  t.fill.of++;
}

/** Adds one failed call: nothing was sent, so it keeps nothing, and its error is noted. */
export function tallyFailure(t: RunTally, context: CallContext, fits: Fits, error: unknown): void {
  t.calls++;
  t.failed++;
  note(t, `failed: ${error instanceof Error ? error.message : String(error)}`.slice(0, 240));
  const planted = plantedOf(context);
  for (const k of ["identifier", "word"] as const) t.meanPlanted[k] += planted[k];
  t.finalKept = kinds();
  t.finalPlanted = planted;
  t.callsVisible.of += context.calls.length;
  t.finalCalls = { hit: 0, of: context.calls.length };
  if (fits.pinnedFits) t.pinned.of++;
  if (fits.taskFits) t.task.of++;
}

function addShare(a: Share, b: Share): Share {
  return { hit: a.hit + b.hit, of: a.of + b.of };
}

function addKinds(a: PerKind, b: PerKind): PerKind {
  return { identifier: a.identifier + b.identifier, word: a.word + b.word };
}

/** Two tallies added up (the final-call figures of both runs are summed). */
export function addTallies(a: RunTally, b: RunTally): RunTally {
  return {
    calls: a.calls + b.calls,
    failed: a.failed + b.failed,
    overBudget: a.overBudget + b.overBudget,
    invalid: a.invalid + b.invalid,
    notes: [...a.notes, ...b.notes],
    finalKept: addKinds(a.finalKept, b.finalKept),
    finalPlanted: addKinds(a.finalPlanted, b.finalPlanted),
    meanKept: addKinds(a.meanKept, b.meanKept),
    meanPlanted: addKinds(a.meanPlanted, b.meanPlanted),
    callsVisible: addShare(a.callsVisible, b.callsVisible),
    finalCalls: addShare(a.finalCalls, b.finalCalls),
    pinned: addShare(a.pinned, b.pinned),
    task: addShare(a.task, b.task),
    reuse: addShare(a.reuse, b.reuse),
    fill: addShare(a.fill, b.fill),
    ms: [...a.ms, ...b.ms],
  };
}
