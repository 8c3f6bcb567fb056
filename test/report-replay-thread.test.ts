/**
 * `engine.replayThread`, which the audit report reads every call through: for each recorded call it gives what
 * `engine.replay` gives for that call (one read of the log and of each plan version for all of them), on an
 * intact thread and on one whose stored log was edited behind the ledger's back.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import type { ReplayResult } from "../src/index.js";
import { openSqliteStores } from "../src/stores/sqlite/index.js";
import { buildReportThread } from "./support/report-thread.js";

const dir = mkdtempSync(join(tmpdir(), "ledger-replay-thread-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function both(path: string, threadId: string) {
  const stores = await openSqliteStores({ path });
  try {
    const engine = createContextEngine({ stores, budget: { contextWindow: 1_000_000 } });
    const batch: ReplayResult[] = [];
    for await (const result of engine.replayThread(threadId)) batch.push(result);
    const single: ReplayResult[] = [];
    for (const record of await stores.calls.list(threadId)) single.push(await engine.replay(record.callId));
    return { batch, single };
  } finally {
    await stores.close();
  }
}

describe("engine.replayThread", () => {
  it("gives every call what replay gives it, intact or tampered with", async () => {
    const path = join(dir, "ledger.db");
    const { threadId, calls } = await buildReportThread(path, { steps: 10 });
    const intact = await both(path, threadId);
    expect(intact.batch).toHaveLength(calls);
    expect(intact.batch).toEqual(intact.single);
    expect(intact.batch.every((r) => r.ok)).toBe(true);

    const db = new Database(path);
    db.prepare(
      "UPDATE messages SET body = json_set(body, '$.parts[0].content', 'forged') WHERE thread_id = ? AND seq = 3",
    ).run(threadId);
    db.close();
    const tampered = await both(path, threadId);
    expect(tampered.batch).toEqual(tampered.single);
    expect(tampered.batch.some((r) => !r.ok)).toBe(true);
    expect(tampered.batch.find((r) => !r.ok)!.problems.join("\n")).toContain("seq 3");
  });

  it("yields nothing for a thread without calls", async () => {
    const stores = await openSqliteStores({ path: join(dir, "empty.db") });
    const engine = createContextEngine({ stores, budget: { contextWindow: 1_000_000 } });
    const results: ReplayResult[] = [];
    for await (const result of engine.replayThread("nobody")) results.push(result);
    expect(results).toEqual([]);
    await stores.close();
  });
});
