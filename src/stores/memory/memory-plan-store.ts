import { ChainBrokenError } from "../../errors/ledger-error.js";
import { planGenesis, planLink } from "../../ledger/ledger-chain.js";
import type { PlanChainRow } from "../../ledger/verify-chain.js";
import { canonicalJson } from "../../log/canonical-json.js";
import { type CompactionPlan, createPlan, emptyPlan } from "../../plan/compaction-plan.js";
import { checkThreadId, type LogStore } from "../log-store.js";
import { checkPlanAgainstLog } from "../plan-log-check.js";
import {
  type CommitOptions,
  checkAddedActions,
  checkCommit,
  checkCommitArguments,
  checkVersionArguments,
  extendsPlan,
  type PlanStore,
  planConflict,
  planNotFound,
} from "../plan-store.js";
import { MEMORY_ROWS } from "./memory-log-store.js";

/**
 * How a memory plan version is chained: whole, or as the actions it adds to the version before it (`from`: how
 * many leading actions it shares with that version, by identity), so a commit costs what it adds, as in SQL.
 */
export interface MemoryPlanRow {
  readonly kind: "full" | "delta";
  readonly from: number;
  readonly committedAt: string;
  readonly chainHash: string;
}

/** The raw versions of a memory thread (index i holds version i + 1), for tests that play a rewritten store. */
export interface MemoryPlanRows {
  readonly plans: CompactionPlan[];
  readonly rows: MemoryPlanRow[];
}

/**
 * The body a memory version is chained with, from the plan objects as held now: a delta whose leading actions
 * are no longer the previous version's own objects gets a body that cannot match (the version was replaced).
 */
function chainBody(
  plan: CompactionPlan,
  previous: CompactionPlan | undefined,
  row: Pick<MemoryPlanRow, "kind" | "from">,
) {
  if (row.kind === "full") return canonicalJson(plan);
  const shared =
    previous !== undefined &&
    previous.actions.length >= row.from &&
    plan.actions.length >= row.from &&
    plan.actions.slice(0, row.from).every((a, i) => a === previous.actions[i]);
  const added = plan.actions.slice(row.from);
  return canonicalJson(shared ? { added, basedOnSeq: plan.basedOnSeq } : { replaced: plan });
}

/**
 * An in-memory `PlanStore`. Committed plans are kept as frozen values (the caller's own value when it is
 * already frozen, so in-process helpers such as `parentOf` keep working on what `latest` returns). A commit's new
 * actions are checked against the thread's log in `logs` (`checkPlanAgainstLog`).
 *
 * @example
 * const plans = createMemoryPlanStore(logs);
 * await plans.commit(extendPlan(emptyPlan("t1"), actions, 10), 0);
 */
export function createMemoryPlanStore(logs: LogStore): PlanStore {
  // Index i holds version i + 1.
  const byThread = new Map<string, CompactionPlan[]>();
  const chainOf = new Map<string, MemoryPlanRow[]>();
  // Per thread, an object equal to the newest version taken with `adopt`: a commit extending it only adds actions.
  const adopted = new Map<string, CompactionPlan>();

  async function commit(
    plan: CompactionPlan,
    expectedVersion: number,
    options?: CommitOptions,
  ): Promise<void> {
    checkCommitArguments(plan, expectedVersion);
    const before = byThread.get(plan.threadId) ?? [];
    if (before.length !== expectedVersion) throw planConflict(plan.threadId, expectedVersion, before.length);
    // A version extending the stored one (the engine's every turn) only adds actions: check those, not the whole
    // plan, which names every compacted id of a long thread.
    const parent = parentOf(plan, expectedVersion);
    if (parent !== undefined) checkAddedActions(plan, parent.actions.length);
    else checkCommit(plan, expectedVersion);
    await checkPlanAgainstLog(logs, plan, parent ?? before[expectedVersion - 1], options);
    // Another commit may have landed while the log was read: check again, and write without awaiting.
    store(plan, expectedVersion, parent, options?.ledgerKey);
  }

  /** The stored (or adopted) version `expectedVersion` that `plan` extends, if it extends one. */
  function parentOf(plan: CompactionPlan, expectedVersion: number): CompactionPlan | undefined {
    const stored = byThread.get(plan.threadId)?.[expectedVersion - 1];
    const alias = adopted.get(plan.threadId);
    if (stored !== undefined && extendsPlan(plan, stored)) return stored;
    return alias?.version === expectedVersion && extendsPlan(plan, alias) ? alias : undefined;
  }

  function store(
    plan: CompactionPlan,
    expectedVersion: number,
    parent: CompactionPlan | undefined,
    key: string | undefined,
  ): void {
    const versions = byThread.get(plan.threadId) ?? [];
    if (versions.length !== expectedVersion)
      throw planConflict(plan.threadId, expectedVersion, versions.length);
    const stored = versions.at(-1);
    const alias = adopted.get(plan.threadId);
    // A plan extending an adopted value (a thread restored from a checkpoint, whose actions read their spans
    // from the worker's projected log when first asked) is kept on the stored version's own actions instead.
    const kept =
      parent !== undefined && parent === alias && parent !== stored && stored !== undefined
        ? Object.freeze({
            ...plan,
            actions: Object.freeze([...stored.actions, ...plan.actions.slice(alias.actions.length)]),
          })
        : plan;
    const value = Object.isFrozen(kept) ? kept : createPlan(kept);
    const rows = chainOf.get(plan.threadId) ?? [];
    const shape =
      stored !== undefined && extendsPlan(value, stored)
        ? { kind: "delta" as const, from: stored.actions.length }
        : { kind: "full" as const, from: 0 };
    const committedAt = new Date().toISOString();
    const previous =
      expectedVersion === 0 ? planGenesis(plan.threadId, key) : rows[expectedVersion - 1]?.chainHash;
    // Memory versions are chained from their first commit: a head without a hash was removed behind the store's back.
    if (!previous) {
      throw new ChainBrokenError(plan.threadId, "plan", expectedVersion, "it has no chain hash (removed)");
    }
    const content = {
      version: value.version,
      kind: shape.kind,
      body: chainBody(value, stored, shape),
      committedAt,
    };
    rows.push({ ...shape, committedAt, chainHash: planLink(previous, content, key) });
    versions.push(value);
    byThread.set(plan.threadId, versions);
    chainOf.set(plan.threadId, rows);
  }

  function chainRows(threadId: string, toVersion: number): ReadonlyArray<PlanChainRow> {
    checkVersionArguments(threadId, toVersion);
    const plans = byThread.get(threadId) ?? [];
    const rows = chainOf.get(threadId) ?? [];
    return Object.freeze(
      plans.slice(0, toVersion).map((plan, i) => {
        const row = rows[i];
        return {
          version: i + 1,
          kind: row?.kind ?? "full",
          body: chainBody(plan, plans[i - 1], row ?? { kind: "full", from: 0 }),
          committedAt: row?.committedAt ?? "",
          chainHash: row?.chainHash ?? null,
        };
      }),
    );
  }

  function get(threadId: string, version: number): CompactionPlan {
    checkVersionArguments(threadId, version);
    if (version === 0) return emptyPlan(threadId);
    const plan = byThread.get(threadId)?.[version - 1];
    if (plan === undefined) throw planNotFound(threadId, version);
    return plan;
  }

  return Object.freeze({
    [MEMORY_ROWS]: (threadId: string): MemoryPlanRows | undefined => {
      const plans = byThread.get(threadId);
      const rows = chainOf.get(threadId);
      return plans === undefined || rows === undefined ? undefined : { plans, rows };
    },
    commit: (plan: CompactionPlan, expectedVersion: number, options?: CommitOptions) =>
      commit(plan, expectedVersion, options),
    chainHead: async (threadId: string, version: number) => {
      checkVersionArguments(threadId, version);
      return version === 0 ? undefined : chainOf.get(threadId)?.[version - 1]?.chainHash;
    },
    chainRows: async (threadId: string, toVersion: number) => chainRows(threadId, toVersion),
    latest: async (threadId: string) => {
      checkThreadId(threadId);
      return byThread.get(threadId)?.at(-1) ?? emptyPlan(threadId);
    },
    get: async (threadId: string, version: number) => get(threadId, version),
    adopt: async (plan: CompactionPlan) => {
      get(plan?.threadId, plan.version);
      if (plan.version > 0 && Object.isFrozen(plan)) adopted.set(plan.threadId, plan);
    },
    versions: async (threadId: string) => {
      checkThreadId(threadId);
      return Object.freeze((byThread.get(threadId) ?? []).map((_, i) => i + 1));
    },
    latestVersion: async (threadId: string) => {
      checkThreadId(threadId);
      return byThread.get(threadId)?.length ?? 0;
    },
  });
}
