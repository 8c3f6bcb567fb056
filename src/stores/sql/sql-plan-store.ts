import { backfillChain } from "../../ledger/chain-backfill.js";
import { planGenesis, planLink } from "../../ledger/ledger-chain.js";
import type { PlanChainRow } from "../../ledger/verify-chain.js";
import { type CompactionPlan, emptyPlan } from "../../plan/compaction-plan.js";
import { checkThreadId, type LogStore } from "../log-store.js";
import { KnownPlans, type PlanRow, prepareCommit } from "../plan-deltas.js";
import { checkPlanAgainstLog } from "../plan-log-check.js";
import {
  type CommitOptions,
  checkVersionArguments,
  type PlanStore,
  planConflict,
  planNotFound,
} from "../plan-store.js";
import {
  all,
  column,
  isNull,
  run,
  type SqlDialect,
  type SqlStatement,
  type SqlWork,
  storeOperations,
} from "./sql-dialect.js";
import { lockThread, type ThreadSql, threadVersions } from "./sql-threads.js";

/** A dialect's statements on the `plans` table; chain rows carry `version`, `kind` and `body`. */
export interface PlanSql {
  readonly threads: ThreadSql;
  /** Inserts a version as `full` or `delta` with its body (canonical JSON), commit time and chain hash. */
  insert(threadId: string, row: ChainedPlanRow): SqlStatement;
  /** The `chain_hash` of a version (no row for an unknown version; NULL for a version not chained yet). */
  chainHead(threadId: string, version: number): SqlStatement;
  /**
   * Versions 1 to `toVersion` ascending, carrying `version`, `kind`, `body`, `committed_at` (ISO text or a
   * date) and `chain_hash`.
   */
  chainRows(threadId: string, toVersion: number): SqlStatement;
  /** Sets the chain hash of a version written before the chain (its backfill). */
  setChain(threadId: string, version: number, chainHash: string): SqlStatement;
  /** The rows rebuilding `version`: the newest full row at or below it, then every delta after it. */
  chain(threadId: string, version: number): SqlStatement;
  /**
   * The rows rebuilding the thread's latest version in one statement (one snapshot), each also carrying that
   * version as `target`, and none without a committed version. Without it, `latest` reads the version first.
   */
  latestChain?(threadId: string): SqlStatement;
  /** Every version (`version`) of the thread, ascending. */
  versions(threadId: string): SqlStatement;
  /**
   * One row: the thread's latest version (`latest`, NULL without a thread row) and the newest full version at
   * or below `version` (`snapshot`, NULL or 0 for none), read without plan bodies.
   */
  adoption(threadId: string, version: number): SqlStatement;
}

/** A plan version as a commit writes it. */
export interface ChainedPlanRow {
  readonly version: number;
  readonly kind: string;
  readonly body: string;
  /** ISO time, written by the store (not the database's clock) so the chain covers exactly what is stored. */
  readonly committedAt: string;
  readonly chainHash: string;
}

/** A `committed_at` column as the chain covers it: ISO text (a date from the driver is written back as ISO). */
export function committedAtText(value: unknown): string {
  return value instanceof Date ? value.toISOString() : String(value);
}

/**
 * The `PlanStore` on a SQL database: a commit locks the thread (`ThreadSql.lock`), checks the plan version,
 * inserts the new version and bumps the counter in one write transaction, so concurrent committers on any
 * machine serialize and the stale ones get `VersionConflictError`. A version that extends the one this instance
 * last committed or read is stored as the actions it adds (a delta), others whole, as canonical JSON; a read
 * parses (validates) a snapshot and the deltas after it. Before the transaction, the plan's new actions are checked
 * against the thread's stored log (`checkPlanAgainstLog`).
 *
 * @example
 * const plans = createSqlPlanStore(sqliteDialect(db), sqlitePlanSql, logs); // db already migrated
 * await plans.commit(plan, plan.version - 1);
 */
export function createSqlPlanStore(dialect: SqlDialect, sql: PlanSql, logs: LogStore): PlanStore {
  const op = storeOperations(dialect);
  const known = new KnownPlans();
  const chainRows = (rows: ReadonlyArray<unknown>): PlanRow[] =>
    rows.map((row) => ({
      version: dialect.int(row, "version"),
      kind: column(row, "kind"),
      body: column(row, "body"),
    }));

  async function commit(
    plan: CompactionPlan,
    expectedVersion: number,
    options?: CommitOptions,
  ): Promise<void> {
    const prepared = prepareCommit(known, plan, expectedVersion);
    await checkPlanAgainstLog(logs, plan, prepared.base, options);
    const key = options?.ledgerKey;
    await dialect.transaction(function* () {
      const { planVersion } = yield* lockThread(dialect, sql.threads, plan.threadId);
      if (planVersion !== expectedVersion) throw planConflict(plan.threadId, expectedVersion, planVersion);
      const previous = yield* headAt(plan.threadId, expectedVersion, key);
      const content = {
        version: plan.version,
        kind: prepared.kind,
        body: prepared.body,
        committedAt: new Date().toISOString(),
      };
      yield* run(sql.insert(plan.threadId, { ...content, chainHash: planLink(previous, content, key) }));
      yield* run(sql.threads.setPlanVersion(plan.threadId, plan.version));
    });
    if (prepared.known !== undefined) known.offer(prepared.known);
  }

  /**
   * The plan chain's head at `version`, read once in the commit's transaction. Versions written before the chain
   * have no hash: the thread's first commit after the migration chains them. Only that legacy case is backfilled:
   * a version without a hash after chained ones refuses the commit (`backfillChain`).
   */
  function* headAt(threadId: string, version: number, key: string | undefined): SqlWork<string> {
    if (version === 0) return planGenesis(threadId, key);
    const [row] = yield* all(sql.chainHead(threadId, version));
    const stored = column(row, "chain_hash");
    if (typeof stored === "string") return stored;
    const rows = (yield* all(sql.chainRows(threadId, version))).map((r) => {
      const chained = planRowOf(r);
      return { ...chained, position: chained.version };
    });
    const spec = {
      threadId,
      chain: "plan" as const,
      first: 1,
      genesis: planGenesis(threadId, key),
      link: (previous: string, r: (typeof rows)[number]) => planLink(previous, r, key),
    };
    const { head, fills } = backfillChain(spec, rows, version + 1);
    for (const { row: r, hash } of fills) yield* run(sql.setChain(threadId, r.version, hash));
    return head;
  }

  const planRowOf = (row: unknown): PlanChainRow => {
    const hash = column(row, "chain_hash");
    return {
      version: dialect.int(row, "version"),
      kind: String(column(row, "kind")),
      body: String(column(row, "body")),
      committedAt: committedAtText(column(row, "committed_at")),
      chainHash: typeof hash === "string" ? hash : null,
    };
  };

  async function get(threadId: string, version: number): Promise<CompactionPlan> {
    checkVersionArguments(threadId, version);
    if (version === 0) return emptyPlan(threadId);
    const rows = await dialect.all(sql.chain(threadId, version));
    if (rows.length === 0) throw planNotFound(threadId, version);
    return known.read(threadId, version, chainRows(rows));
  }

  async function latest(threadId: string): Promise<CompactionPlan> {
    checkThreadId(threadId);
    if (sql.latestChain === undefined) {
      return get(threadId, (await threadVersions(dialect, sql.threads, threadId)).planVersion);
    }
    // No rows: no thread row, or plan version 0 (nothing committed yet).
    const rows = await dialect.all(sql.latestChain(threadId));
    if (rows.length === 0) return emptyPlan(threadId);
    return known.read(threadId, dialect.int(rows[0], "target"), chainRows(rows));
  }

  async function adopt(plan: CompactionPlan): Promise<void> {
    checkVersionArguments(plan?.threadId, plan?.version);
    if (plan.version === 0) return;
    const [row] = await dialect.all(sql.adoption(plan.threadId, plan.version));
    const latestVersion = isNull(row, "latest") ? 0 : dialect.int(row, "latest");
    if (plan.version > latestVersion) throw planNotFound(plan.threadId, plan.version);
    // Versions are 1, 2, … and never removed: the deltas since the snapshot are the versions' difference (no
    // count over rows, and a seek past a snapshot of megabytes reads none of it).
    const snapshot = isNull(row, "snapshot") ? 0 : dialect.int(row, "snapshot");
    known.offer({ plan, deltas: plan.version - snapshot });
  }

  return Object.freeze({
    commit: (plan: CompactionPlan, expectedVersion: number, options?: CommitOptions) =>
      op("commit", plan?.threadId, () => commit(plan, expectedVersion, options)),
    latest: (threadId: string) => op("latest", threadId, () => latest(threadId)),
    get: (threadId: string, version: number) => op("get", threadId, () => get(threadId, version)),
    adopt: (plan: CompactionPlan) => op("adopt", plan?.threadId, () => adopt(plan)),
    versions: (threadId: string) =>
      op("versions", threadId, async () => {
        checkThreadId(threadId);
        const rows = await dialect.all(sql.versions(threadId));
        return Object.freeze(rows.map((row) => dialect.int(row, "version")));
      }),
    chainHead: (threadId: string, version: number) =>
      op("chainHead", threadId, async () => {
        checkVersionArguments(threadId, version);
        if (version === 0) return undefined;
        const [row] = await dialect.all(sql.chainHead(threadId, version));
        const stored = column(row, "chain_hash");
        return typeof stored === "string" ? stored : undefined;
      }),
    chainRows: (threadId: string, toVersion: number) =>
      op("chainRows", threadId, async () => {
        checkVersionArguments(threadId, toVersion);
        if (toVersion === 0) return Object.freeze([]);
        return Object.freeze((await dialect.all(sql.chainRows(threadId, toVersion))).map(planRowOf));
      }),
    latestVersion: (threadId: string) =>
      op("latestVersion", threadId, async () => {
        checkThreadId(threadId);
        return (await threadVersions(dialect, sql.threads, threadId)).planVersion;
      }),
  });
}
