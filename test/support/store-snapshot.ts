// A full picture of what stores hold, to compare before and after an operation that must write nothing. A
// database is read whole, every row of every table of the target, with SQL behind the stores' back (so a write
// to any table, of any thread, shows); memory stores have no tables, so their threads are read through the
// stores' raw rows (`MEMORY_ROWS`: log rows with their chain hashes, plan versions with theirs) and their API
// (model calls, checkpoints), and artifacts through `trackMemoryStores`, which notes every one written so the
// snapshot can read each back. The summary cache is left out on every backend: it is a cache keyed by the content
// summarized, shared by threads, and a turn refused after its summarizer ran keeps the (valid) summary for the
// next turn, as a turn whose summary was not needed in the end does.
import Database from "better-sqlite3";
import pg from "pg";
import type { ArtifactStore } from "../../src/stores/artifact-store.js";
import { MEMORY_ROWS, type MemoryLogRows } from "../../src/stores/memory/memory-log-store.js";
import type { MemoryPlanRows } from "../../src/stores/memory/memory-plan-store.js";
import type { Stores } from "../../src/stores/stores.js";
import type { StoreTarget } from "./store-target.js";

/** What `trackMemoryStores` noted: every artifact (tenant and id) ever written. */
interface Written {
  readonly artifacts: Map<string, { tenant: string; artifactId: string }>;
  /** The artifact store wrapped, for its `size` (a spread copy would hold the size at the time of the copy). */
  readonly artifactStore: ArtifactStore;
}

const WRITTEN = new WeakMap<object, Written>();

/**
 * Memory stores whose artifact writes are noted, for every tenant they are bound to (the engine
 * rebinds the stores it is given with `forTenant`, so the wrapper rebinds to itself). Other backends: as given.
 */
export function trackMemoryStores(stores: Stores, target: StoreTarget): Stores {
  if (target.kind !== "memory") return stores;
  const written: Written = { artifacts: new Map(), artifactStore: stores.artifacts };
  const artifacts: ArtifactStore = {
    ...stores.artifacts,
    put: async (input) => {
      const meta = await stores.artifacts.put(input);
      written.artifacts.set(`${meta.tenant}\u0000${meta.artifactId}`, {
        tenant: meta.tenant,
        artifactId: meta.artifactId,
      });
      return meta;
    },
  };
  const wrap = (bound: Stores): Stores => {
    const wrapped: Stores = {
      ...bound,
      artifacts,
      forTenant: (tenant: string) => wrap(bound.forTenant!(tenant)),
    };
    WRITTEN.set(wrapped, written);
    return wrapped;
  };
  return wrap(stores);
}

/** Every row of every table of a database target, each table's rows as sorted JSON lines (one connection). */
async function databaseRows(target: StoreTarget): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  const put = (name: string, rows: ReadonlyArray<unknown>) => {
    out[name] = rows.map((row) => JSON.stringify(row)).sort();
  };
  if (target.kind === "sqlite") {
    const db = new Database(target.path, { readonly: true });
    try {
      // Virtual tables (the FTS5 index) are read through their shadow tables, which hold what they store.
      const tables = db
        .prepare(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name",
        )
        .all() as Array<{ name: string }>;
      for (const { name } of tables)
        if (name !== "summaries") put(name, db.prepare(`SELECT * FROM "${name}"`).all());
    } finally {
      db.close();
    }
    return out;
  }
  if (target.kind !== "postgres") throw new Error("memory stores have no tables");
  const client = new pg.Client({ connectionString: target.connectionString });
  await client.connect();
  try {
    const tables = await client.query<{ name: string }>(
      "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name",
      [target.schema],
    );
    for (const { name } of tables.rows) {
      if (name === "summaries") continue;
      put(name, (await client.query(`SELECT * FROM "${target.schema}"."${name}"`)).rows);
    }
  } finally {
    await client.end();
  }
  return out;
}

/** The checkpoints of a thread at plan versions up to `maxVersion`, each with its tail. */
async function checkpointsOf(stores: Stores, threadId: string, maxVersion: number, maxLength: number) {
  const out: unknown[] = [];
  if (stores.checkpoints === undefined) return out;
  for (let version = 1; version <= maxVersion; version++) {
    for (let length = maxLength; length >= 1; ) {
      const checkpoint = await stores.checkpoints.latest(threadId, version, length);
      if (checkpoint === undefined) break;
      const tail = await stores.checkpoints.tail(threadId, version, checkpoint.logLength);
      out.push({ checkpoint, tail });
      length = checkpoint.logLength - 1;
    }
  }
  return out;
}

/** A memory thread as stored: raw log and plan rows with their chain hashes, model calls and checkpoints. */
async function memoryThread(stores: Stores, threadId: string) {
  const logRows = (stores.log as unknown as Record<symbol, (t: string) => MemoryLogRows | undefined>)[
    MEMORY_ROWS
  ]!(threadId);
  const planRows = (stores as unknown as Record<symbol, (t: string) => MemoryPlanRows | undefined>)[
    MEMORY_ROWS
  ]!(threadId);
  const log =
    logRows === undefined
      ? undefined
      : {
          entries: JSON.stringify(logRows.entries),
          chain: [...logRows.chain],
          chainedTokens: [...logRows.chainedTokens],
        };
  const plans =
    planRows === undefined
      ? undefined
      : { plans: JSON.stringify(planRows.plans), rows: JSON.stringify(planRows.rows) };
  const length = logRows?.entries.length ?? 0;
  // One version past the last: a refused commit must not leave a checkpoint of the version it tried either.
  const maxVersion = (planRows?.plans.length ?? 0) + 1;
  return {
    log,
    plans,
    calls: JSON.stringify(await stores.calls.list(threadId)),
    checkpoints: JSON.stringify(await checkpointsOf(stores, threadId, maxVersion, length + 1)),
  };
}

/** Artifacts a tracked memory bundle has written, read back now (expired or gone reads as such). */
async function memoryShared(stores: Stores) {
  const written = WRITTEN.get(stores);
  if (written === undefined) throw new Error("memory stores must come from trackMemoryStores to be snapshot");
  const artifacts: unknown[] = [];
  for (const [key, { tenant, artifactId }] of [...written.artifacts].sort()) {
    artifacts.push([key, await stores.artifacts.get(artifactId, { tenant, clearance: "restricted" })]);
  }
  return {
    artifactCount: (written.artifactStore as { size?: number }).size,
    artifacts: JSON.stringify(artifacts),
  };
}

/**
 * Everything the stores hold: on a database, every row of every table; in memory, the given threads (read with
 * `readers[threadId]`, the owner's stores, or `stores` when absent) and every artifact written; never the summary cache (above).
 */
export async function snapshotStores(
  stores: Stores,
  target: StoreTarget,
  threadIds: ReadonlyArray<string>,
  readers: Readonly<Record<string, Stores>> = {},
): Promise<unknown> {
  if (target.kind !== "memory") return databaseRows(target);
  const threads: Record<string, unknown> = {};
  for (const threadId of threadIds)
    threads[threadId] = await memoryThread(readers[threadId] ?? stores, threadId);
  return { threads, shared: await memoryShared(stores) };
}
