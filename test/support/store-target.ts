import { createMemoryStores } from "../../src/stores/memory/memory-stores.js";
import { openPostgresStores } from "../../src/stores/postgres/index.js";
import { openSqliteStores } from "../../src/stores/sqlite/index.js";
import type { Clock, Stores } from "../../src/stores/stores.js";

/** Where a set of stores lives, as plain JSON so a child process can open the same ones. */
export type StoreTarget =
  | { readonly kind: "memory" }
  | { readonly kind: "sqlite"; readonly path: string }
  | { readonly kind: "postgres"; readonly connectionString: string; readonly schema: string };

/** Opens the stores of a target (a memory target is new and empty every time). */
export async function openTarget(target: StoreTarget, now?: Clock): Promise<Stores> {
  const clock = now === undefined ? {} : { now };
  switch (target.kind) {
    case "memory":
      return createMemoryStores(clock);
    case "sqlite":
      return openSqliteStores({ path: target.path, ...clock });
    case "postgres":
      return openPostgresStores({
        connectionString: target.connectionString,
        schema: target.schema,
        maxConnections: 4,
        ...clock,
      });
  }
}
