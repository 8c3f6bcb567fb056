/**
 * What a search costs when appends do not index (docs/decisions/0015): a generated thread of 20,000 messages is
 * appended through an engine whose log store hides `indexForSearch` (so nothing indexes it in the background),
 * then `LogStore.search` runs twice: the first indexes the whole thread before it answers (the catch-up), the
 * second only answers. Per backend (memory, SQLite in a temp file, PostgreSQL on a throwaway cluster when the
 * server binaries are there), fresh stores for each of a few runs; medians and min–max. Prints a markdown table.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createContextEngine, createMemoryStores } from "../src/index.js";
import { openPostgresStores } from "../src/stores/postgres/index.js";
import { openSqliteStores } from "../src/stores/sqlite/index.js";
import type { Stores } from "../src/stores/stores.js";
import { type PostgresCluster, startPostgresCluster } from "../test/support/postgres-cluster.js";
import { generatedMessages } from "./support/datasets.js";
import { consume, ms, summarize, type Timing } from "./support/stats.js";

const SIZE = 20_000;
const RUNS = 3;
const QUERY = "config parser error";

async function open(backend: string, cluster: PostgresCluster | undefined, n: number) {
  if (backend === "memory") return { stores: createMemoryStores(), close: async () => {} };
  if (backend === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "context-ledger-search-bench-"));
    const stores = openSqliteStores({ path: join(dir, "ledger.db") });
    return {
      stores,
      close: async () => {
        await stores.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const stores = await openPostgresStores({
    connectionString: cluster!.connectionString,
    schema: `search_${n}`,
  });
  return { stores, close: () => stores.close() };
}

async function once(stores: Stores): Promise<{ first: number; second: number }> {
  const { indexForSearch: _hidden, ...log } = stores.log;
  const engine = createContextEngine({ stores: { ...stores, log }, budget: { model: "gpt-4o" } });
  const all = generatedMessages(SIZE, 11);
  for (let at = 0; at < SIZE; at += 5_000) await engine.append("bench", all.slice(at, at + 5_000));
  await engine.idle();
  let t0 = performance.now();
  consume(await stores.log.search!("bench", QUERY));
  const first = performance.now() - t0;
  t0 = performance.now();
  consume(await stores.log.search!("bench", QUERY));
  return { first, second: performance.now() - t0 };
}

async function main(): Promise<void> {
  let cluster: PostgresCluster | undefined;
  try {
    cluster = await startPostgresCluster();
  } catch (error) {
    console.log(
      `PostgreSQL skipped: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`,
    );
  }
  const rows: Array<{ backend: string; first: Timing; second: Timing }> = [];
  let n = 0;
  try {
    for (const backend of cluster === undefined ? ["memory", "sqlite"] : ["memory", "sqlite", "postgres"]) {
      const first: number[] = [];
      const second: number[] = [];
      for (let run = 0; run < RUNS; run++) {
        (globalThis as { gc?: () => void }).gc?.();
        const opened = await open(backend, cluster, ++n);
        try {
          const t = await once(opened.stores);
          first.push(t.first);
          second.push(t.second);
        } finally {
          await opened.close();
        }
      }
      rows.push({ backend, first: summarize(first), second: summarize(second) });
    }
  } finally {
    await cluster?.stop();
  }
  const timing = (t: Timing) => `${ms(t.median)} (${ms(t.min)}–${ms(t.max)})`;
  console.log(
    `search on a ${SIZE.toLocaleString("en")}-message thread appended without indexing, ${RUNS} runs\n`,
  );
  console.log("| backend | first search ms (catch-up + query) | second search ms (query) |");
  console.log("|---|---:|---:|");
  for (const r of rows) console.log(`| ${r.backend} | ${timing(r.first)} | ${timing(r.second)} |`);
}

await main();
