import { NotFoundError, ValidationError, VersionConflictError } from "../errors/ledger-error.js";
import type { LedgerWriteOptions } from "../ledger/ledger-chain.js";
import type { PlanChainRow } from "../ledger/verify-chain.js";
import type { LogView } from "../log/log-view.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import { planActionSchema, planHeaderSchema, planSchema } from "../plan/plan-schema.js";
import { checkSeq, checkThreadId } from "./log-store.js";
import { checkValue } from "./store-row-schemas.js";

/**
 * Keeps every committed version of each thread's compaction plan. `commit` is optimistic: the caller names the
 * version it built on (`expectedVersion`, 0 for the empty plan), the plan must carry `expectedVersion + 1`, and
 * a writer whose expected version is stale gets `VersionConflictError` and nothing is written. Past versions
 * stay readable for audits and replay; version 0 is always the empty plan.
 *
 * @example
 * const current = await plans.latest("t1"); // emptyPlan("t1") before the first commit
 * const next = extendPlan(current, actions, log.length);
 * await plans.commit(next, current.version); // VersionConflictError when another worker committed first
 * await plans.get("t1", next.version); // the same plan, JSON-exact
 */
export interface PlanStore {
  /**
   * Stores `plan` as version `expectedVersion + 1` of its thread. The plan is checked against the thread's stored
   * log first (ids it names, call groups it would split, pending calls, `basedOnSeq`): a plan the log cannot
   * carry throws `PlanValidationError` naming the version and the id, and nothing is written.
   */
  commit(plan: CompactionPlan, expectedVersion: number, options?: CommitOptions): Promise<void>;
  /** The newest committed plan, or the empty plan (version 0) when none was committed. */
  latest(threadId: string): Promise<CompactionPlan>;
  /** One version (0 is the empty plan); throws `NotFoundError` for a version never committed. */
  get(threadId: string, version: number): Promise<CompactionPlan>;
  /** The committed versions (1, 2, …) in ascending order. */
  versions(threadId: string): Promise<ReadonlyArray<number>>;
  /**
   * The newest committed version (0 when none), without listing them all: what a worker asks before every turn.
   * Optional for stores written elsewhere; the engine falls back to `versions`.
   */
  latestVersion?(threadId: string): Promise<number>;
  /**
   * Takes `plan` as committed version `plan.version` of its thread, as if it had been read from this store, so
   * that a commit extending it is stored as a delta. The caller vouches that it equals the stored version (a plan
   * restored from a thread checkpoint, docs/decisions/0009); throws `NotFoundError` for a version never
   * committed. Optional: without it such a commit stores the whole plan.
   */
  adopt?(plan: CompactionPlan): Promise<void>;
  /**
   * The stored chain hash of `version` (the plan chain's head there; `undefined` for version 0, whose head is the
   * genesis, and for a version written before the chain). Optional, as for `LogStore.chainHead`.
   */
  chainHead?(threadId: string, version: number): Promise<string | undefined>;
  /** Versions 1 to `toVersion` as stored, for verifying the chain (optional, with `chainHead`). */
  chainRows?(threadId: string, toVersion: number): Promise<ReadonlyArray<PlanChainRow>>;
}

/** Options of `PlanStore.commit` (`ledgerKey`: the key the version is chained with, see `LedgerWriteOptions`). */
export interface CommitOptions extends LedgerWriteOptions {
  /**
   * A log of the plan's thread read from these stores, which the plan was validated against (the engine's own
   * commits pass it). The store then checks that the log is its thread's (its last message is where the store
   * holds it) and validates the plan against it, instead of reading the messages the plan names.
   */
  readonly checkedAgainst?: LogView;
}

/** Checks the arguments of `get` (and of `adopt`, with the plan's thread and version): thread id and version. */
export function checkVersionArguments(threadId: string, version: number): void {
  checkThreadId(threadId);
  checkSeq(threadId, version, "version");
}

/** Checks the arguments of `commit` except the plan's contents: thread id, expected version, plan version. */
export function checkCommitArguments(plan: CompactionPlan, expectedVersion: number): void {
  checkThreadId(plan?.threadId);
  checkSeq(plan.threadId, expectedVersion, "expectedVersion");
  if (plan.version !== expectedVersion + 1) {
    throw new ValidationError(
      `plan version ${plan.version} must be expectedVersion + 1 = ${expectedVersion + 1}`,
      { threadId: plan.threadId, field: "version" },
    );
  }
}

/**
 * Whether `plan` extends `parent`: the same leading action objects (identity: committed plans are frozen) and a
 * `basedOnSeq` not lower. Such a commit only adds actions, and only those need checking.
 */
export function extendsPlan(plan: CompactionPlan, parent: CompactionPlan): boolean {
  if (!Array.isArray(plan.actions)) return false;
  if (plan.basedOnSeq < parent.basedOnSeq || plan.actions.length < parent.actions.length) return false;
  for (let i = 0; i < parent.actions.length; i++) if (plan.actions[i] !== parent.actions[i]) return false;
  return true;
}

/** Checks a plan's header and its actions from index `from` on against the schema (fields named `actions[i]…`). */
export function checkAddedActions(plan: CompactionPlan, from: number): void {
  const where = { what: `plan version ${plan.version}`, threadId: plan.threadId };
  checkValue(planHeaderSchema, plan, where);
  for (let i = from; i < plan.actions.length; i++) {
    checkValue(planActionSchema, plan.actions[i], { ...where, fieldPrefix: `actions[${i}]` });
  }
}

/**
 * Checks the arguments of `commit`, including the plan against its schema (a plan no backend could read back
 * would make the thread unusable); throws `ValidationError` naming the thread and field.
 */
export function checkCommit(plan: CompactionPlan, expectedVersion: number): void {
  checkCommitArguments(plan, expectedVersion);
  checkValue(planSchema, plan, { what: `plan version ${plan.version}`, threadId: plan.threadId });
}

/** The conflict raised when a commit names a stale plan version. */
export function planConflict(
  threadId: string,
  expectedVersion: number,
  actual: number,
): VersionConflictError {
  return new VersionConflictError(
    `commit of the plan of thread ${JSON.stringify(threadId)}`,
    expectedVersion,
    actual,
    { threadId },
  );
}

/** The error raised for a plan version that was never committed. */
export function planNotFound(threadId: string, version: number): NotFoundError {
  return new NotFoundError(
    `plan version ${version} of thread ${JSON.stringify(threadId)} was never committed`,
    {
      threadId,
      field: "version",
    },
  );
}
