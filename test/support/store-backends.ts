import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Clock, Stores } from "../../src/stores/stores.js";
import { type PostgresCluster, postgresUnavailableReason, startPostgresCluster } from "./postgres-cluster.js";
import { openTarget, type StoreTarget } from "./store-target.js";

/** One backend of the conformance suite: how to make fresh, isolated stores and where they live. */
export interface StoreBackend {
  readonly name: "memory" | "sqlite" | "postgres";
  /** Whether stores outlive their handle, so other processes and reopened handles see the same data. */
  readonly durable: boolean;
  /** Why the backend cannot run on this machine, or `undefined`. */
  unavailable(): string | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** A new, empty place for stores (a file, a schema). */
  newTarget(): StoreTarget;
}

function memoryBackend(): StoreBackend {
  return {
    name: "memory",
    durable: false,
    unavailable: () => undefined,
    start: async () => {},
    stop: async () => {},
    newTarget: () => ({ kind: "memory" }),
  };
}

function sqliteBackend(): StoreBackend {
  let dir: string | undefined;
  let n = 0;
  return {
    name: "sqlite",
    durable: true,
    unavailable: () => undefined,
    start: async () => {
      dir = mkdtempSync(join(tmpdir(), "context-ledger-sqlite-"));
    },
    stop: async () => {
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    },
    newTarget: () => ({ kind: "sqlite", path: join(dir!, `ledger-${++n}.db`) }),
  };
}

function postgresBackend(): StoreBackend {
  let cluster: PostgresCluster | undefined;
  let n = 0;
  return {
    name: "postgres",
    durable: true,
    unavailable: postgresUnavailableReason,
    start: async () => {
      cluster = await startPostgresCluster();
    },
    stop: async () => {
      await cluster?.stop();
    },
    // A schema per test keeps tests apart on one database (and exercises migrations every time).
    newTarget: () => ({
      kind: "postgres",
      connectionString: cluster!.connectionString,
      schema: `t${++n}_ledger`,
    }),
  };
}

/** Every backend, in the order the suite runs them. */
export const STORE_BACKENDS: ReadonlyArray<StoreBackend> = [
  memoryBackend(),
  sqliteBackend(),
  postgresBackend(),
];

/** Opens stores and remembers them, so a test's stores are closed afterwards even when it fails. */
export class StoreOpener {
  readonly #open: Stores[] = [];
  constructor(readonly backend: StoreBackend) {}

  /** Fresh, empty stores on a new target. */
  async fresh(now?: Clock): Promise<{ stores: Stores; target: StoreTarget }> {
    const target = this.backend.newTarget();
    return { stores: await this.at(target, now), target };
  }

  /** Stores on an existing target (for a memory target: new, empty ones). */
  async at(target: StoreTarget, now?: Clock): Promise<Stores> {
    const stores = await openTarget(target, now);
    this.#open.push(stores);
    return stores;
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.#open.splice(0).map((s) => s.close()));
  }
}
