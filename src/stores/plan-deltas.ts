/**
 * Plan versions as deltas (docs/decisions/0007). A durable backend stores a version either whole (`full`) or as
 * the actions it appends to the version before it (`delta`), so a commit that extends the previous plan costs what
 * it adds, not the whole plan (a long thread's plan names every compacted id). Shared by the SQLite and PostgreSQL
 * plan stores; the memory store keeps plan objects and only shares the extension check (`plan-store.ts`).
 */
import * as z from "zod";
import { ValidationError } from "../errors/ledger-error.js";
import { canonicalJson } from "../log/canonical-json.js";
import { deepFreeze } from "../log/deep-freeze.js";
import { type CompactionPlan, nextPlan, type PlanAction } from "../plan/compaction-plan.js";
import { planActionSchema, planSchema, serializePlan } from "../plan/plan-schema.js";
import { checkAddedActions, checkCommitArguments, extendsPlan, planNotFound } from "./plan-store.js";
import { checkValue, parseRow } from "./store-row-schemas.js";

/** How one committed version is stored: the whole plan, or what it adds to the version before it. */
export type PlanRowKind = "full" | "delta";

/** A delta never follows more than this many deltas: a read applies at most 31 to its snapshot. */
export const MAX_PLAN_DELTAS = 31;

/** A committed plan version as one store instance knows it, with the deltas a read applies to reach it. */
export interface KnownPlan {
  readonly plan: CompactionPlan;
  /** Delta rows since the newest full row at or below this version (0 when this version is stored whole). */
  readonly deltas: number;
}

/** The newest version of a thread a store instance knows, with the plan objects it handed out or was given. */
interface KnownVersion {
  readonly version: number;
  readonly deltas: number;
  /** Most recent first: the committed object and the objects reads returned are all equal, but not identical. */
  readonly plans: ReadonlyArray<CompactionPlan>;
}

// Several objects of one version are kept because a commit is recognised as an extension by object identity:
// the writer that committed a version extends its own object, a reader of the same version extends the one it read.
const OBJECTS_PER_VERSION = 4;

/**
 * Each thread's newest plan version a store instance committed or read, threads most recently used last (at most
 * `capacity` threads). Committed versions never change, so a remembered version N is exactly what the database
 * holds as version N, and a commit that names N as its expected version can be stored relative to it.
 */
export class KnownPlans {
  readonly #entries = new Map<string, KnownVersion>();

  constructor(private readonly capacity = 1_000) {}

  /** The remembered version of a thread, if any. */
  get(threadId: string): KnownVersion | undefined {
    return this.#entries.get(threadId);
  }

  /**
   * Rebuilds version `version` of a thread from its stored rows (see `planFromRows`, which validates them) and
   * remembers it, so a commit extending what was read can be stored as a delta.
   */
  read(threadId: string, version: number, rows: ReadonlyArray<PlanRow>): CompactionPlan {
    const read = planFromRows(threadId, version, rows);
    this.offer(read);
    return read.plan;
  }

  /** Remembers a version unless a newer one of the thread is known (reading an old version for an audit keeps it). */
  offer({ plan, deltas }: KnownPlan): void {
    const current = this.#entries.get(plan.threadId);
    this.#entries.delete(plan.threadId);
    this.#entries.set(plan.threadId, merged(current, plan, deltas));
    if (this.#entries.size > this.capacity) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }
}

function merged(current: KnownVersion | undefined, plan: CompactionPlan, deltas: number): KnownVersion {
  if (current === undefined || current.version < plan.version) {
    return { version: plan.version, deltas, plans: [plan] };
  }
  if (current.version > plan.version || current.plans.includes(plan)) return current;
  return { ...current, plans: [plan, ...current.plans].slice(0, OBJECTS_PER_VERSION) };
}

/** A checked commit, ready for a backend to write inside its version-checking transaction. */
export interface PreparedCommit {
  readonly kind: PlanRowKind;
  /** Canonical JSON: the whole plan, or `{ added, basedOnSeq }` for a delta. */
  readonly body: string;
  /** What to remember once the row is committed (absent when the plan is not safely immutable). */
  readonly known?: KnownPlan;
  /**
   * The committed version `expectedVersion` as this instance holds it, if it does: the check against the stored
   * log reads only what the new version changes from it.
   */
  readonly base: CompactionPlan | undefined;
}

/**
 * Checks a commit and encodes it: as a delta when `plan` extends the remembered version `expectedVersion` of its
 * thread (same leading action objects, `basedOnSeq` not lower) and the chain since the last snapshot is short
 * enough, whole otherwise. A delta validates only the header and the added actions: the leading ones are the
 * remembered version's, validated when it was committed or read. The version check stays with the backend's
 * transaction, so a stale `expectedVersion` still writes nothing.
 */
export function prepareCommit(
  known: KnownPlans,
  plan: CompactionPlan,
  expectedVersion: number,
): PreparedCommit {
  checkCommitArguments(plan, expectedVersion);
  const remembered = known.get(plan.threadId);
  const parent = extendedParent(remembered, plan, expectedVersion);
  if (parent !== undefined) {
    const from = parent.plan.actions.length;
    checkAddedActions(plan, from);
    const added = plan.actions.slice(from);
    const body = canonicalJson({ added, basedOnSeq: plan.basedOnSeq });
    return withKnown({ kind: "delta", body, base: parent.plan }, plan, from, parent.deltas + 1);
  }
  checkValue(planSchema, plan, { what: `plan version ${plan.version}`, threadId: plan.threadId });
  // A version stored whole may still share most actions with a known one (past the delta limit, a replacement).
  const base =
    remembered?.version === expectedVersion
      ? (remembered.plans.find((candidate) => extendsPlan(plan, candidate)) ?? remembered.plans[0])
      : undefined;
  return withKnown({ kind: "full", body: serializePlan(plan), base }, plan, 0, 0);
}

/** The remembered object of version `expectedVersion` that `plan` extends, when a delta may follow it. */
function extendedParent(
  known: KnownVersion | undefined,
  plan: CompactionPlan,
  expectedVersion: number,
): KnownPlan | undefined {
  if (known?.version !== expectedVersion || known.deltas >= MAX_PLAN_DELTAS || !Array.isArray(plan.actions)) {
    return undefined;
  }
  const parent = known.plans.find((candidate) => extendsPlan(plan, candidate));
  return parent === undefined ? undefined : { plan: parent, deltas: known.deltas };
}

// A plan is remembered (and later compared by identity) only when nothing in it can change after the commit;
// the actions before `from` are the remembered parent's, already checked.
function withKnown(row: PreparedCommit, plan: CompactionPlan, from: number, deltas: number): PreparedCommit {
  const frozen =
    Object.isFrozen(plan) && Object.isFrozen(plan.actions) && plan.actions.slice(from).every(isFrozenAction);
  return frozen ? { ...row, known: { plan, deltas } } : row;
}

function isFrozenAction(action: PlanAction): boolean {
  return Object.isFrozen(action) && Object.isFrozen(action.span) && isDeepFrozen(action.record);
}

function isDeepFrozen(value: unknown): boolean {
  if (value === null || typeof value !== "object") return true;
  return Object.isFrozen(value) && Object.values(value).every(isDeepFrozen);
}

/** One stored row of a plan version as read back; `kind` and `body` are unchecked (they come from outside). */
export interface PlanRow {
  readonly version: number;
  readonly kind: unknown;
  readonly body: unknown;
}

const planDeltaSchema = z
  .object({ added: z.array(planActionSchema), basedOnSeq: z.number().int().nonnegative() })
  .strict();
const rowKindSchema = z.enum(["full", "delta"]);

/**
 * Rebuilds version `version` of a thread from its rows in version order — the newest full row at or below it,
 * then the deltas after it — validating each row; throws `NotFoundError` when the rows do not end at `version`
 * (never committed) and `ValidationError` naming the thread, the version and the field for a bad row. Each delta
 * is applied with `nextPlan`, so the result carries its lineage (`parentOf`) for resolution to reuse.
 */
export function planFromRows(threadId: string, version: number, rows: ReadonlyArray<PlanRow>): KnownPlan {
  if (rows.at(-1)?.version !== version) throw planNotFound(threadId, version);
  let plan = snapshotFromRow(threadId, rows[0]!);
  for (let i = 1; i < rows.length; i++) plan = applyDelta(plan, rows[i]!);
  return { plan, deltas: rows.length - 1 };
}

function rowKind(threadId: string, row: PlanRow): PlanRowKind {
  return checkValue(rowKindSchema, row.kind, {
    what: `the stored row of plan version ${row.version}`,
    threadId,
    fieldPrefix: "kind",
  });
}

function snapshotFromRow(threadId: string, row: PlanRow): CompactionPlan {
  if (rowKind(threadId, row) !== "full") {
    throw new ValidationError(
      `plan version ${row.version} is stored as a delta, but no full version of the thread precedes it`,
      { threadId, field: "kind" },
    );
  }
  const what = `the stored row of plan version ${row.version}`;
  const plan = parseRow(planSchema, row.body, { what, threadId }) as CompactionPlan;
  if (plan.threadId !== threadId || plan.version !== row.version) {
    throw new ValidationError(
      `the row of plan version ${row.version} holds version ${plan.version} of thread ${JSON.stringify(plan.threadId)}`,
      { threadId, field: "version" },
    );
  }
  // zod's output is a fresh value (new objects and arrays) nothing else holds: freezing it in place is what
  // `createPlan` does after a copy, and the copy of a 100,000-id span is not free.
  return deepFreeze(plan);
}

function applyDelta(previous: CompactionPlan, row: PlanRow): CompactionPlan {
  const threadId = previous.threadId;
  const what = `the stored delta of plan version ${row.version}`;
  if (rowKind(threadId, row) !== "delta") {
    throw new ValidationError(`${what} is not a delta`, { threadId, field: "kind" });
  }
  const delta = parseRow(planDeltaSchema, row.body, { what, threadId });
  if (delta.basedOnSeq < previous.basedOnSeq) {
    throw new ValidationError(
      `${what} lowers basedOnSeq from ${previous.basedOnSeq} to ${delta.basedOnSeq}`,
      {
        threadId,
        field: "basedOnSeq",
      },
    );
  }
  const plan = nextPlan(previous, [...previous.actions, ...(delta.added as PlanAction[])], delta.basedOnSeq);
  // nextPlan numbers the result previous.version + 1: a missing row shows up as a different stored version.
  if (plan.version !== row.version) {
    throw new ValidationError(
      `the stored plan versions of thread ${JSON.stringify(threadId)} are not contiguous: version ${row.version} follows ${previous.version}`,
      { threadId, field: "version" },
    );
  }
  return plan;
}
