/**
 * A committed plan version and its resolution as a thread checkpoint carries them (docs/decisions/0009): spans
 * as seq runs instead of id lists, the winning action per seq as runs, so a worker restoring a thread neither
 * parses nor resolves a span that names most of a 100,000-message history. The restored plan is the same value
 * as the stored version (its spans are materialized from the log's ids when first read); its resolution and
 * validity are seeded so that a turn only resolves and validates what it adds.
 */
import { CheckpointUnfitError, type ErrorLocation } from "../errors/ledger-error.js";
import { deepFreeze } from "../log/deep-freeze.js";
import type { ThreadLog } from "../log/thread-log.js";
import type { ActionKind, ActionRecord, CompactionPlan, PlanAction } from "../plan/compaction-plan.js";
import { setFirstSpanId } from "../plan/first-span-id.js";
import { resolveForLog, seedResolution } from "../plan/resolve-for-log.js";
import { runsOfSpan, spanOfRuns } from "../plan/span-seqs.js";
import { trustValid, validatePlan } from "../plan/validate-plan.js";
import { reportMiss } from "./checkpoint-misses.js";

/** Marks a value kept out of the header (`DeferredField` number `$deferred`). */
export interface DeferredMarker {
  readonly $deferred: number;
}

/**
 * One action with its span as ascending seq runs (flat `[start, end)` pairs), or, for a long run list, the
 * marker of the deferred field (`$runs`) holding them: only a span read needs them, and a span read needs the
 * ids of messages not held, which travel beside the deferred fields anyway.
 */
export interface ActionCheckpoint {
  readonly kind: ActionKind;
  readonly record: ActionRecord;
  readonly strategy: string;
  readonly reason: string;
  readonly runs: ReadonlyArray<number> | DeferredMarker;
  /** The span's first id (what audit records name a span by), or null for an empty span. */
  readonly first: string | null;
}

/**
 * An action that governs no message any more (a later summary or drop took all of it): only its kind up front;
 * the rest (`retired[index]`) is decoded when something first reads it. A long thread's plan is mostly these
 * (every clear a summary absorbed since), and a turn reads none of them.
 */
export interface RetiredAction {
  readonly kind: ActionKind;
  readonly retired: number;
}

/** A plan version and its resolution against the checkpoint's log. Plain data, JSON round-trippable. */
export interface PlanCheckpoint {
  readonly version: number;
  readonly basedOnSeq: number;
  readonly actions: ReadonlyArray<ActionCheckpoint | RetiredAction>;
  /** Seqs governed by an action as `[start, end, actionIndex]` triples, ascending; other seqs are included. */
  readonly governedRuns: ReadonlyArray<number>;
  /** The resolution's dropped runs. */
  readonly dropRuns: ReadonlyArray<number>;
  /**
   * How many retired actions and deferred fields the checkpoint's tail holds in all: the indices that entries
   * a later checkpoint adds to the same tail start from.
   */
  readonly retiredCount: number;
  readonly deferredCount: number;
}

/**
 * The action entries of a checkpoint already stored, for one whose tail continues that one's: the entries of
 * the actions a plan shares with it (the same action objects, in order) are reused as they are — an action is
 * never read or encoded twice, and its retired entry or deferred fields stay where the stored tail has them.
 */
export interface PlanCheckpointBase {
  /** The actions the entries encode, in plan order. */
  readonly actions: ReadonlyArray<PlanAction>;
  readonly entries: ReadonlyArray<ActionCheckpoint | RetiredAction>;
  readonly retiredCount: number;
  readonly deferredCount: number;
}

/** A base with no entries: the checkpoint holds a whole tail of its own. */
const NO_BASE: PlanCheckpointBase = { actions: [], entries: [], retiredCount: 0, deferredCount: 0 };

/** Whether `plan` starts with the base's actions (the same objects, in order), so it can continue that base. */
export function continuesBase(plan: CompactionPlan, base: PlanCheckpointBase): boolean {
  if (plan.actions.length < base.actions.length) return false;
  for (let i = 0; i < base.actions.length; i++) if (plan.actions[i] !== base.actions[i]) return false;
  return true;
}

/**
 * The checkpoint form of a plan valid for `log`, or undefined when the plan cannot travel as runs: a span id
 * the log does not know (or not before `basedOnSeq`), or a span out of log order or naming an id twice. With a
 * `base` the plan continues (see `continuesBase`), the actions it shares with the base keep the base's
 * entries, and `retired` and `deferred` list only what this checkpoint adds to the base's tail (their indices
 * continue the base's); without one, they are the whole tail's.
 */
export function planCheckpoint(
  plan: CompactionPlan,
  log: ThreadLog,
  base: PlanCheckpointBase = NO_BASE,
):
  | {
      readonly plan: PlanCheckpoint;
      readonly retired: ReadonlyArray<ActionCheckpoint>;
      readonly deferred: ReadonlyArray<DeferredField>;
    }
  | undefined {
  if (plan.threadId !== log.threadId || plan.basedOnSeq > log.length) return undefined;
  if (!continuesBase(plan, base)) return undefined;
  if (validatePlan(plan, log).length > 0) return undefined;
  const resolution = resolveForLog(plan, log);
  if (resolution.skippedIds || resolution.spanIssues.length > 0) return undefined;
  const actions: Array<ActionCheckpoint | RetiredAction> = [];
  const retired: ActionCheckpoint[] = [];
  const deferred: DeferredField[] = [];
  const retire = (entry: ActionCheckpoint): RetiredAction => {
    retired.push(entry);
    return { kind: entry.kind, retired: base.retiredCount + retired.length - 1 };
  };
  for (const [index, action] of plan.actions.entries()) {
    const governs = resolution.governed[index] !== 0;
    const known = base.entries[index];
    if (known !== undefined) {
      // An action of the base: its entry stands (an action only ever loses messages to later ones, so a retired
      // one stays retired); one that governed messages then and none now moves to the retired list as it was.
      actions.push(governs || "retired" in known ? known : retire(known));
      continue;
    }
    const runs = runsOfSpan(action.span, log);
    if (runs === undefined) return undefined;
    const full: ActionCheckpoint = {
      kind: action.kind,
      record: lightRecord(action.record, index, deferred, base.deferredCount),
      strategy: action.strategy,
      reason: action.reason,
      runs: Array.from(runs),
      first: action.span[0] ?? null,
    };
    if (!governs) actions.push(retire(full));
    else if (runs.length > DEFERRED_RUNS) {
      actions.push({ ...full, runs: { [DEFERRED_KEY]: base.deferredCount + deferred.length } });
      deferred.push({ action: index, field: RUNS_FIELD, value: full.runs });
    } else actions.push(full);
  }
  const governedRuns: number[] = [];
  const { actionAt } = resolution;
  for (let seq = 0; seq < actionAt.length; ) {
    const index = actionAt[seq]!;
    let end = seq + 1;
    while (end < actionAt.length && actionAt[end] === index) end++;
    if (index >= 0) governedRuns.push(seq, end, index);
    seq = end;
  }
  return {
    deferred,
    plan: {
      version: plan.version,
      basedOnSeq: plan.basedOnSeq,
      actions,
      governedRuns,
      dropRuns: Array.from(resolution.dropRuns),
      retiredCount: base.retiredCount + retired.length,
      deferredCount: base.deferredCount + deferred.length,
    },
    retired,
  };
}

/** A large field of an action's record kept out of the header (e.g. the items a clear lists for audits). */
export interface DeferredField {
  readonly action: number;
  readonly field: string;
  readonly value: unknown;
}

/** Record fields whose JSON is longer than this travel as deferred fields. */
const DEFERRED_CHARS = 1024;

/** Run lists longer than this (numbers, two a run) travel as a deferred field named `RUNS_FIELD`. */
const DEFERRED_RUNS = 256;

/** The deferred field holding an action's runs (found by its index; the name checks it is the entry meant). */
const RUNS_FIELD = "$runs";

/**
 * Record fields the renderer reads (a clear's excerpts are the very text it shows, its `onlyParts` what it
 * clears): they stay in the header whatever their size, so rendering a restored plan never needs the tail.
 */
const RENDERED_FIELDS: ReadonlySet<string> = new Set(["excerpts", "onlyParts"]);

/** Marks a record field kept out of the header: `{ "$deferred": index }`. */
const DEFERRED_KEY = "$deferred";

/**
 * The record with its large array fields replaced by markers (their values appended to `deferred`, numbered
 * from `offset` on).
 */
function lightRecord(
  record: ActionRecord,
  action: number,
  deferred: DeferredField[],
  offset: number,
): ActionRecord {
  let light: Record<string, unknown> | undefined;
  for (const [field, value] of Object.entries(record)) {
    if (RENDERED_FIELDS.has(field)) continue;
    if (!Array.isArray(value) || JSON.stringify(value).length <= DEFERRED_CHARS) continue;
    light ??= { ...record };
    light[field] = { [DEFERRED_KEY]: offset + deferred.length };
    deferred.push({ action, field, value });
  }
  return (light ?? record) as ActionRecord;
}

/** A frozen record whose deferred fields are getters reading `deferred()` when first read. */
function restoredRecord(
  record: ActionRecord,
  deferred: () => ReadonlyArray<DeferredField>,
  where: { threadId: string; field: string },
): ActionRecord {
  const out = {};
  for (const [field, value] of Object.entries(record)) {
    const marker = (value as Record<string, unknown> | null)?.[DEFERRED_KEY];
    if (typeof marker !== "number") {
      Object.defineProperty(out, field, { value: deepFreeze(value), enumerable: true });
      continue;
    }
    let cached: unknown;
    Object.defineProperty(out, field, {
      enumerable: true,
      get: () => {
        if (cached === undefined) {
          const entry = deferred()[marker];
          if (entry?.field !== field) throw unfit(`deferred field ${field} missing`, where);
          cached = deepFreeze(entry.value);
        }
        return cached;
      },
    });
  }
  return Object.freeze(out) as ActionRecord;
}

/**
 * The plan a checkpoint describes, on `log` (the checkpoint's log value, or one it restored): frozen, each span
 * built from its runs and the log's ids the first time it is read, its resolution and validity against `log`
 * seeded. Throws `CheckpointUnfitError` naming the field when the checkpoint does not fit the log — now, or for
 * a part decoded later (a retired action, a deferred field) when it is first read.
 */
export function restorePlan(
  threadId: string,
  checkpoint: PlanCheckpoint,
  log: ThreadLog,
  retired: () => ReadonlyArray<ActionCheckpoint>,
  deferred: () => ReadonlyArray<DeferredField>,
): CompactionPlan {
  const where = (field: string) => ({ threadId, field: `checkpoint.plan.${field}` });
  if (checkpoint.basedOnSeq > log.length) {
    throw unfit(`plan is based on seq ${checkpoint.basedOnSeq} past the log`, where("basedOnSeq"));
  }
  const limit = Math.min(checkpoint.basedOnSeq, log.length);
  let decoded: ReadonlyArray<ActionCheckpoint> | undefined;
  const actions = checkpoint.actions.map((a, i) => {
    const at = where(`actions[${i}]`);
    if (!("retired" in a)) return restoredAction(log, () => a, a.kind, limit, at, true, deferred);
    const entry = (): ActionCheckpoint => {
      decoded ??= retired();
      const found = decoded[a.retired];
      if (found?.kind !== a.kind) throw unfit("retired action missing or of another kind", at);
      return found;
    };
    return restoredAction(log, entry, a.kind, limit, at, false, deferred);
  });
  const plan: CompactionPlan = Object.freeze({
    threadId,
    version: checkpoint.version,
    basedOnSeq: checkpoint.basedOnSeq,
    actions: Object.freeze(actions),
  });
  const actionAt = new Int32Array(limit).fill(-1);
  const governed = new Int32Array(actions.length);
  const runs = checkpoint.governedRuns;
  let floor = 0;
  if (runs.length % 3 !== 0) throw unfit("governed runs must be triples", where("governedRuns"));
  for (let r = 0; r < runs.length; r += 3) {
    const start = runs[r]!;
    const end = runs[r + 1]!;
    const index = runs[r + 2]!;
    if (!(start >= floor && end > start && end <= limit && index >= 0 && index < actions.length)) {
      throw unfit(`governed run ${r / 3} is out of order or out of range`, where("governedRuns"));
    }
    actionAt.fill(index, start, end);
    governed[index]! += end - start;
    floor = end;
  }
  checkRuns(checkpoint.dropRuns, limit, where("dropRuns"));
  seedResolution(plan, log, { actionAt, governed, dropRuns: Int32Array.from(checkpoint.dropRuns) });
  trustValid(plan, log);
  return plan;
}

/**
 * A frozen action whose span is built from its runs when first read. A live action's fields are checked now;
 * a retired one's (`entry` decodes them) when first read — a bad one then throws `CheckpointUnfitError`.
 */
function restoredAction(
  log: ThreadLog,
  entry: () => ActionCheckpoint,
  kind: ActionKind,
  limit: number,
  where: { threadId: string; field: string },
  eager: boolean,
  deferred: () => ReadonlyArray<DeferredField>,
): PlanAction {
  let checked: ActionCheckpoint | undefined;
  const fields = (): ActionCheckpoint => {
    if (checked === undefined) {
      const a = entry();
      if (Array.isArray(a.runs)) checkRuns(a.runs, limit, where);
      if (a.record?.kind !== kind) throw unfit("record does not match the action's kind", where);
      checked = { ...a, record: restoredRecord(a.record, deferred, where) };
    }
    return checked;
  };
  const runsOf = (): ReadonlyArray<number> => {
    const runs = fields().runs;
    if (Array.isArray(runs)) return runs;
    const marker = (runs as DeferredMarker)[DEFERRED_KEY];
    const found = deferred()[marker];
    if (found?.field !== RUNS_FIELD || !Array.isArray(found.value)) {
      throw unfit("deferred runs missing", where);
    }
    checkRuns(found.value as ReadonlyArray<number>, limit, where);
    return found.value as ReadonlyArray<number>;
  };
  let span: ReadonlyArray<string> | undefined;
  const action = {} as PlanAction;
  // The fields in the order actions are written elsewhere; the span is built from the runs when first read.
  Object.defineProperties(action, {
    kind: { value: kind, enumerable: true },
    span: {
      enumerable: true,
      get: () => {
        span ??= Object.freeze(spanOfRuns(log, runsOf()));
        return span;
      },
    },
    record: { enumerable: true, get: () => fields().record },
    strategy: { enumerable: true, get: () => fields().strategy },
    reason: { enumerable: true, get: () => fields().reason },
  });
  Object.freeze(action);
  setFirstSpanId(action, () => fields().first ?? undefined);
  if (eager) fields();
  return action;
}

function checkRuns(runs: ReadonlyArray<number>, limit: number, where: object): void {
  let floor = 0;
  for (let r = 0; r < runs.length; r += 2) {
    const start = runs[r]!;
    const end = runs[r + 1]!;
    if (
      !(Number.isInteger(start) && Number.isInteger(end) && start >= floor && end > start && end <= limit)
    ) {
      throw unfit(`run ${r / 2} is out of order or outside the plan's seqs`, where);
    }
    floor = end;
  }
  if (runs.length % 2 !== 0) throw unfit("runs must come in [start, end) pairs", where);
}

/** Reports a part of a checkpoint that does not fit (the operation reading it runs again on the whole log). */
function unfit(problem: string, where: ErrorLocation): never {
  return reportMiss(new CheckpointUnfitError(problem, where));
}
