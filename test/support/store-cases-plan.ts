import Database from "better-sqlite3";
import pg from "pg";
import { expect, it } from "vitest";
import { NotFoundError, ValidationError, VersionConflictError } from "../../src/errors/ledger-error.js";
import { deepFreeze } from "../../src/log/deep-freeze.js";
import {
  type ActionKind,
  type CompactionPlan,
  createPlan,
  emptyPlan,
  extendPlan,
  nextPlan,
  type PlanAction,
} from "../../src/plan/compaction-plan.js";
import { serializePlan } from "../../src/plan/plan-schema.js";
import type { PlanStore } from "../../src/stores/plan-store.js";
import { migratePostgres, POSTGRES_MIGRATIONS } from "../../src/stores/postgres/index.js";
import { migrateSqlite, SQLITE_MIGRATIONS } from "../../src/stores/sqlite/index.js";
import type { Stores } from "../../src/stores/stores.js";
import type { StoreOpener } from "./store-backends.js";
import { rejection } from "./store-cases-log.js";
import { stored } from "./store-fixtures.js";
import type { StoreTarget } from "./store-target.js";

/** A plan using every action kind and record field, with text that JSON and SQL text columns find awkward. */
function richPlan(threadId: string, version: number): CompactionPlan {
  return createPlan({
    threadId,
    version,
    basedOnSeq: BASE + 40 + version,
    actions: [
      { kind: "include", span: ["m0"], record: { kind: "include" }, strategy: "pin", reason: "system" },
      {
        kind: "clear",
        span: ["m1", "m2"],
        record: {
          kind: "clear",
          clearArgs: true,
          cleared: [{ messageId: "m2", callId: "c1", toolName: "search", chars: 48_000 }],
        },
        strategy: "tool-result-retention",
        reason: "older than 3 turns",
      },
      {
        kind: "summarize",
        span: ["m3", "m4", "m5"],
        record: {
          kind: "summarize",
          summary: `v${version}: «quotes" \\ back\u0000slash» 🧪`,
          structured: { goals: ["ship"], decisions: [], openItems: ["tests"] },
          summarizerId: "extractive",
          promptVersion: "p2",
          spanHash: "ab".repeat(32),
        },
        strategy: "summarization",
        reason: "over budget",
      },
      {
        kind: "externalize",
        span: ["m6"],
        record: { kind: "externalize", artifactId: "art_1", summary: "a big file", sizeChars: 90_000 },
        strategy: "externalization",
        reason: "large",
      },
      {
        kind: "drop",
        span: ["m7"],
        record: { kind: "drop", reason: "oldest" },
        strategy: "fallback",
        reason: "fit",
      },
    ],
  });
}

/**
 * A commit is checked against the thread's stored log, so these cases give thread t1 a log holding every id their
 * plans name (before seq {@link BASE}) and plans based at or past it: the plan mechanics are tested on plans a log
 * can carry. The log's own checks have cases of their own (`planLogCases`).
 */
const BASE = 1_000;
const LOG_LENGTH = 1_200;

function seededIds(): string[] {
  const ids = Array.from({ length: 8 }, (_, i) => `m${i}`);
  for (let v = 1; v <= 100; v++) for (let k = 0; k < 3; k++) ids.push(`v${v}_${k}`, `v${v}_${k}r`);
  return ids;
}

/** Appends thread t1's log (see {@link BASE}) to `stores`. */
export async function seedPlanLog(stores: Stores, threadId = "t1"): Promise<void> {
  const ids = seededIds();
  const entries = Array.from({ length: LOG_LENGTH }, (_, seq) => stored(seq, ids[seq] ?? `pad${seq}`));
  await stores.log.append(threadId, 0, entries);
}

/** Fresh stores whose thread t1 has the seeded log. */
async function freshWithLog(opener: StoreOpener): ReturnType<StoreOpener["fresh"]> {
  const fresh = await opener.fresh();
  await seedPlanLog(fresh.stores);
  return fresh;
}

/** Plan store cases: versions, conflicts, exact round trips (and versions stored as deltas). */
export function planCases(opener: StoreOpener, title: (t: string) => string): void {
  it(title("before any commit: latest and version 0 are the empty plan, versions is empty"), async () => {
    const { stores } = await freshWithLog(opener);
    expect(await stores.plans.latest("t1")).toEqual(emptyPlan("t1"));
    expect(await stores.plans.get("t1", 0)).toEqual(emptyPlan("t1"));
    expect(await stores.plans.versions("t1")).toEqual([]);
    expect(await stores.plans.latestVersion?.("t1")).toBe(0);
  });

  it(title("commits versions in order; every past version reads back JSON-exact"), async () => {
    const { stores } = await freshWithLog(opener);
    const plans = [1, 2, 3].map((v) => richPlan("t1", v));
    for (const plan of plans) await stores.plans.commit(plan, plan.version - 1);
    expect(await stores.plans.versions("t1")).toEqual([1, 2, 3]);
    expect(await stores.plans.latestVersion?.("t1")).toBe(3);
    expect(await stores.plans.latestVersion?.("other")).toBe(0);
    expect(serializePlan(await stores.plans.latest("t1"))).toBe(serializePlan(plans[2]!));
    for (const plan of plans) {
      const back = await stores.plans.get("t1", plan.version);
      expect(serializePlan(back)).toBe(serializePlan(plan));
      expect(back).toEqual(plan);
      expect(Object.isFrozen(back.actions[2]!.record)).toBe(true);
    }
    expect(await stores.plans.versions("other")).toEqual([]);
  });

  it(
    title("a stale commit gets VersionConflictError naming thread and versions; nothing is written"),
    async () => {
      const { stores } = await freshWithLog(opener);
      await stores.plans.commit(richPlan("t1", 1), 0);
      await stores.plans.commit(richPlan("t1", 2), 1);
      const error = await rejection(stores.plans.commit(richPlan("t1", 2), 1), VersionConflictError);
      expect([error.expected, error.actual, error.where.threadId]).toEqual([1, 2, "t1"]);
      expect(error.message).toMatch(/"t1".*expected version 1 but the store holds 2/);
      await rejection(stores.plans.commit(richPlan("t1", 5), 4), VersionConflictError);
      expect(await stores.plans.versions("t1")).toEqual([1, 2]);
    },
  );

  it(title("a plan that breaks the plan schema is refused before anything is written"), async () => {
    const { stores } = await freshWithLog(opener);
    await stores.plans.commit(richPlan("t1", 1), 0);
    const bad = { ...richPlan("t1", 2), actions: [{ kind: "drop", span: [], record: { kind: "drop" } }] };
    const error = await rejection(stores.plans.commit(bad as unknown as CompactionPlan, 1), ValidationError);
    expect(error.where.threadId).toBe("t1");
    expect(await stores.plans.versions("t1")).toEqual([1]);
    expect(serializePlan(await stores.plans.latest("t1"))).toBe(serializePlan(richPlan("t1", 1)));
  });

  it(title("a plan whose version is not expectedVersion + 1 is refused"), async () => {
    const { stores } = await freshWithLog(opener);
    const error = await rejection(stores.plans.commit(richPlan("t1", 3), 0), ValidationError);
    expect([error.where.threadId, error.where.field]).toEqual(["t1", "version"]);
    expect(await stores.plans.versions("t1")).toEqual([]);
  });

  it(title("a version never committed throws NotFoundError"), async () => {
    const { stores } = await freshWithLog(opener);
    await stores.plans.commit(richPlan("t1", 1), 0);
    const error = await rejection(stores.plans.get("t1", 2), NotFoundError);
    expect(error.message).toContain("version 2");
    await rejection(stores.plans.get("t2", 1), NotFoundError);
  });

  deltaCases(opener, title);
}

const SMALL_ACTIONS: Readonly<Record<ActionKind, (id: string) => PlanAction>> = {
  include: (id) => ({
    kind: "include",
    span: [id],
    record: { kind: "include" },
    strategy: "pin",
    reason: "",
  }),
  clear: (id) => ({
    kind: "clear",
    span: [id, `${id}r`],
    record: {
      kind: "clear",
      cleared: [{ messageId: `${id}r`, callId: `c_${id}`, toolName: "grep", chars: 7 }],
    },
    strategy: "tool-result-retention",
    reason: "old",
  }),
  summarize: (id) => ({
    kind: "summarize",
    span: [id],
    record: { kind: "summarize", summary: `«${id}» \u0000 🧪`, summarizerId: "x", promptVersion: "p1" },
    strategy: "summarization",
    reason: "budget",
  }),
  externalize: (id) => ({
    kind: "externalize",
    span: [id],
    record: { kind: "externalize", artifactId: `art_${id}`, summary: "" },
    strategy: "externalization",
    reason: "large",
  }),
  drop: (id) => ({
    kind: "drop",
    span: [id],
    record: { kind: "drop", reason: "fit" },
    strategy: "x",
    reason: "",
  }),
};
const KINDS = Object.keys(SMALL_ACTIONS) as ActionKind[];

/** The actions version `version` adds in a chain: 0 to 3 of them, of every kind in turn. */
function addedBy(version: number): PlanAction[] {
  return Array.from({ length: version % 4 }, (_, k) =>
    SMALL_ACTIONS[KINDS[(version + k) % 5]!](`v${version}_${k}`),
  );
}

/** Commits `count` versions after `from`, each extending the previous (basedOnSeq growing or unchanged). */
async function commitChain(plans: PlanStore, from: CompactionPlan, count: number): Promise<CompactionPlan[]> {
  const chain: CompactionPlan[] = [];
  let plan = from;
  for (let i = 0; i < count; i++) {
    const basedOnSeq = Math.max(plan.basedOnSeq, BASE) + ((plan.version + 1) % 3);
    const next = extendPlan(plan, addedBy(plan.version + 1), basedOnSeq);
    await plans.commit(next, plan.version);
    chain.push(next);
    plan = next;
  }
  return chain;
}

/** Every committed plan reads back JSON-exact and frozen, and the last one is `latest`. */
async function expectExact(plans: PlanStore, committed: ReadonlyArray<CompactionPlan>): Promise<void> {
  await expectVersions(plans, committed);
  const last = committed.at(-1)!;
  expect(serializePlan(await plans.latest(last.threadId))).toBe(serializePlan(last));
}

/** Every committed plan reads back JSON-exact and frozen. */
async function expectVersions(plans: PlanStore, committed: ReadonlyArray<CompactionPlan>): Promise<void> {
  for (const plan of committed) {
    const back = await plans.get(plan.threadId, plan.version);
    expect(serializePlan(back)).toBe(serializePlan(plan));
    expect(back).toEqual(plan);
    expect(Object.isFrozen(back.actions.at(-1) ?? back)).toBe(true);
  }
}

// `{table}` in a statement given to `rawSql`.
const TABLE = /\{(\w+)\}/g;

/** Runs one statement straight on a durable target's database: `{table}` names a table, `?` a parameter. */
export async function rawSql(
  target: StoreTarget,
  text: string,
  ...params: unknown[]
): Promise<ReadonlyArray<Record<string, unknown>>> {
  if (target.kind === "sqlite") {
    const db = new Database(target.path);
    try {
      const statement = db.prepare(text.replace(TABLE, (_, table: string) => table));
      if (!statement.reader) statement.run(...params);
      return statement.reader ? (statement.all(...params) as Record<string, unknown>[]) : [];
    } finally {
      db.close();
    }
  }
  if (target.kind !== "postgres") throw new Error("in-memory stores have no database to reach");
  const client = new pg.Client({ connectionString: target.connectionString });
  await client.connect();
  try {
    let n = 0;
    const sql = text
      .replace(TABLE, (_, table: string) => `"${target.schema}".${table}`)
      .replaceAll("?", () => `$${++n}`);
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** How each stored version of a thread is kept ("full" or "delta"), by version. */
async function storedKinds(target: StoreTarget, threadId: string): Promise<string[]> {
  const rows = await rawSql(
    target,
    "SELECT kind FROM {plans} WHERE thread_id = ? ORDER BY version",
    threadId,
  );
  return rows.map((row) => String(row.kind));
}

/** The versions (1-based) a list of kinds stores whole. */
const fullVersions = (kinds: ReadonlyArray<string>) =>
  kinds.flatMap((kind, i) => (kind === "full" ? [i + 1] : []));

/** Cases for versions stored as the actions they add to their parent, with periodic full snapshots. */
function deltaCases(opener: StoreOpener, title: (t: string) => string): void {
  const durable = opener.backend.durable;

  it(
    title("80 versions, each extending the previous, read back JSON-exact, also from a new instance"),
    async () => {
      const { stores, target } = await freshWithLog(opener);
      const chain = [richPlan("t1", 1)];
      await stores.plans.commit(chain[0]!, 0);
      chain.push(...(await commitChain(stores.plans, chain[0]!, 79)));
      await expectExact(stores.plans, chain);
      expect(await stores.plans.versions("t1")).toEqual(chain.map((p) => p.version));
      if (!durable) return;
      // A newly opened instance knows nothing of the chain: every version is rebuilt from the rows alone.
      await expectExact((await opener.at(target)).plans, chain);
      // Whole at version 1, then every 32nd version: a read applies at most 31 deltas.
      expect(fullVersions(await storedKinds(target, "t1"))).toEqual([1, 33, 65]);
    },
  );

  it(
    title("a version that does not extend its parent (actions replaced or removed, basedOnSeq lowered)"),
    async () => {
      const { stores, target } = await freshWithLog(opener);
      const chain = [richPlan("t1", 1)];
      await stores.plans.commit(chain[0]!, 0);
      const grow = async (count: number) => {
        chain.push(...(await commitChain(stores.plans, chain.at(-1)!, count)));
      };
      const commitNext = async (actions: ReadonlyArray<PlanAction>, basedOnSeq: number) => {
        const previous = chain.at(-1)!;
        const plan = nextPlan(previous, actions, basedOnSeq);
        await stores.plans.commit(plan, previous.version);
        chain.push(plan);
      };
      await grow(9);
      await commitNext([...chain.at(-1)!.actions].reverse(), chain.at(-1)!.basedOnSeq); // version 11
      await grow(4);
      await commitNext(chain.at(-1)!.actions.slice(0, -1), chain.at(-1)!.basedOnSeq + 1); // 16
      await grow(1);
      await commitNext(chain.at(-1)!.actions, chain.at(-1)!.basedOnSeq - 1); // 18
      await grow(2);
      await expectExact(stores.plans, chain);
      if (!durable) return;
      await expectExact((await opener.at(target)).plans, chain);
      expect(fullVersions(await storedKinds(target, "t1"))).toEqual([1, 11, 16, 18]);
    },
  );

  it(
    title("after another instance commits, this instance's next commit is stored against the right version"),
    async () => {
      const { stores: a, target } = await freshWithLog(opener);
      const b = durable ? await opener.at(target) : a;
      const [v1, v2] = await commitChain(a.plans, emptyPlan("t1"), 2);
      const v3 = extendPlan(await b.plans.latest("t1"), addedBy(3), BASE + 9);
      await b.plans.commit(v3, 2);
      // A still remembers version 2: a plan built on it is stale, and nothing is written.
      await rejection(a.plans.commit(extendPlan(v2!, addedBy(5), BASE + 9), 2), VersionConflictError);
      // Version 4 made of A's version 2 plus one action: it does not extend the stored version 3.
      const v4 = Object.freeze({
        ...v3,
        version: 4,
        actions: Object.freeze([...v2!.actions, ...addedBy(6).map(deepFreeze)]),
      });
      await a.plans.commit(v4, 3);
      const v5 = extendPlan(v4, addedBy(7), BASE + 12);
      await a.plans.commit(v5, 4);
      const v6 = extendPlan(await a.plans.latest("t1"), addedBy(6), BASE + 12);
      await a.plans.commit(v6, 5);
      const chain = [v1!, v2!, v3, v4, v5, v6];
      for (const stores of [a, b]) await expectExact(stores.plans, chain);
      if (!durable) return;
      await expectExact((await opener.at(target)).plans, chain);
      expect(await storedKinds(target, "t1")).toEqual(["full", "delta", "delta", "full", "delta", "delta"]);
    },
  );

  it(
    title("adopt: an equal plan object taken as the stored version; the next commit extends it as a delta"),
    async () => {
      const { stores, target } = await freshWithLog(opener);
      const chain = [richPlan("t1", 1)];
      await stores.plans.commit(chain[0]!, 0);
      chain.push(...(await commitChain(stores.plans, chain[0]!, 2)));
      // Another worker holds an object equal to version 3 that no store handed out (a checkpoint restored it).
      const other = durable ? await opener.at(target) : stores;
      const copy = createPlan(JSON.parse(serializePlan(chain[2]!)) as CompactionPlan);
      await other.plans.adopt!(copy);
      const v4 = extendPlan(copy, addedBy(4), copy.basedOnSeq);
      await other.plans.commit(v4, 3);
      chain.push(v4);
      await expectExact(other.plans, chain);
      await rejection(other.plans.adopt!({ ...v4, version: 9 }), NotFoundError);
      if (!durable) return;
      await expectExact((await opener.at(target)).plans, chain);
      expect(await storedKinds(target, "t1")).toEqual(["full", "delta", "delta", "delta"]);
    },
  );

  it(
    title("a plan committed unfrozen and changed afterwards: later versions read back as committed"),
    async () => {
      const { stores, target } = await freshWithLog(opener);
      type Mutable = { -readonly [K in keyof CompactionPlan]: CompactionPlan[K] };
      const v1 = JSON.parse(serializePlan(richPlan("t1", 1))) as Mutable;
      await stores.plans.commit(v1, 0);
      const committed = [richPlan("t1", 1)];
      // The caller reuses its objects: what they hold now must not be taken for the stored version 1.
      (v1.actions[4]!.record as { reason: string }).reason = "changed after the commit";
      const v2 = { ...v1, version: 2, actions: [...v1.actions, ...addedBy(3)] };
      await stores.plans.commit(v2, 1);
      committed.push(createPlan(v2));
      await expectExact(stores.plans, committed);
      if (durable) await expectExact((await opener.at(target)).plans, committed);
    },
  );

  it(
    title("an added action that breaks the schema is refused naming its field; nothing is written"),
    async () => {
      const { stores } = await freshWithLog(opener);
      const v1 = richPlan("t1", 1);
      await stores.plans.commit(v1, 0);
      const bad = Object.freeze({
        kind: "drop",
        span: Object.freeze([]),
        record: Object.freeze({ kind: "drop" }),
      });
      const v2 = Object.freeze({ ...v1, version: 2, actions: Object.freeze([...v1.actions, bad]) });
      const error = await rejection(stores.plans.commit(v2 as unknown as CompactionPlan, 1), ValidationError);
      expect([error.where.threadId, error.where.field]).toEqual(["t1", "actions[5].span"]);
      expect(await stores.plans.versions("t1")).toEqual([1]);
      const good = extendPlan(v1, addedBy(2), BASE + 50);
      await stores.plans.commit(good, 1);
      await expectExact(stores.plans, [v1, good]);
    },
  );

  it.skipIf(!durable)(
    title("a tampered or missing row is reported with the thread and version"),
    async () => {
      const { stores, target } = await freshWithLog(opener);
      const chain = await commitChain(stores.plans, emptyPlan("t1"), 6);
      const setBody = (version: number, body: string) =>
        rawSql(
          target,
          "UPDATE {plans} SET body = ? WHERE thread_id = ? AND version = ?",
          body,
          "t1",
          version,
        );
      const bad = {
        added: [{ kind: "drop", span: [], record: { kind: "drop", reason: "x" }, strategy: "s", reason: "" }],
      };
      await setBody(4, JSON.stringify({ ...bad, basedOnSeq: 99 }));
      for (const plans of [stores.plans, (await opener.at(target)).plans]) {
        const error = await rejection(plans.get("t1", 5), ValidationError);
        expect(error.message).toMatch(/plan version 4/);
        expect(error.where).toMatchObject({ threadId: "t1", field: "added[0].span" });
        await expectVersions(plans, chain.slice(0, 3));
      }
      await setBody(4, "{not json");
      expect((await rejection(stores.plans.latest("t1"), ValidationError)).message).toMatch(
        /plan version 4 .*not valid JSON/,
      );
      const whole = JSON.parse(serializePlan(chain[0]!));
      await setBody(1, JSON.stringify({ ...whole, actions: [{ ...whole.actions[0], strategy: "" }] }));
      const error = await rejection(stores.plans.get("t1", 2), ValidationError);
      expect(error.message).toMatch(/plan version 1/);
      expect(error.where).toMatchObject({ threadId: "t1", field: "actions[0].strategy" });
      await setBody(1, serializePlan(chain[0]!));
      await rawSql(target, "DELETE FROM {plans} WHERE thread_id = ? AND version = ?", "t1", 2);
      const gap = await rejection(stores.plans.get("t1", 3), ValidationError);
      expect(gap.message).toMatch(/not contiguous: version 3 follows 1/);
      expect(gap.where).toMatchObject({ threadId: "t1", field: "version" });
    },
  );

  it.skipIf(!durable)(title("plans stored before deltas existed (schema 1) read back and grow"), async () => {
    const target = opener.backend.newTarget();
    const old = [richPlan("t1", 1), richPlan("t1", 2)];
    await createAtSchema(target, 1);
    for (const plan of old) {
      await rawSql(
        target,
        "INSERT INTO {plans} (thread_id, version, body, committed_at) VALUES (?, ?, ?, ?)",
        "t1",
        plan.version,
        serializePlan(plan),
        new Date().toISOString(),
      );
    }
    await rawSql(target, "INSERT INTO {threads} (thread_id, plan_version) VALUES (?, ?)", "t1", 2);
    const stores = await opener.at(target);
    await seedPlanLog(stores);
    const latest = await stores.plans.latest("t1");
    await expectExact(stores.plans, old);
    const grown = await commitChain(stores.plans, latest, 3);
    await expectExact((await opener.at(target)).plans, [...old, ...grown]);
    expect(await storedKinds(target, "t1")).toEqual(["full", "full", "delta", "delta", "delta"]);
  });
}

/** Creates a target's database with only the first `count` migrations, as an older release left it. */
export async function createAtSchema(target: StoreTarget, count: number): Promise<void> {
  if (target.kind === "sqlite") {
    const db = new Database(target.path);
    migrateSqlite(db, SQLITE_MIGRATIONS.slice(0, count));
    db.close();
  } else if (target.kind === "postgres") {
    const pool = new pg.Pool({ connectionString: target.connectionString, max: 1 });
    await migratePostgres(pool, target.schema, POSTGRES_MIGRATIONS.slice(0, count));
    await pool.end();
  }
}
