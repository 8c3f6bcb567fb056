/**
 * The engine indexes threads for search in the background after `append` (`LogStore.indexForSearch`): the append
 * returns without indexing, `idle()` waits for it, and a failure is an `error` event, never the append's.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import type { EngineEvent } from "../src/engine/engine-events.js";
import { StoreUnavailableError } from "../src/errors/ledger-error.js";
import type { MessageInput } from "../src/log/message.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import { openSqliteStores } from "../src/stores/sqlite/index.js";
import type { Stores } from "../src/stores/stores.js";
import { simpleCounter } from "./support/simple-counter.js";

const dir = mkdtempSync(join(tmpdir(), "context-ledger-indexing-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function engineOn(stores: Stores) {
  const events: EngineEvent[] = [];
  const engine = createContextEngine({
    stores,
    counter: simpleCounter(),
    budget: { contextWindow: 100_000, reserveOutput: 0 },
    events: (e) => events.push(e),
  });
  return { engine, events };
}

const say = (n: number): MessageInput => ({
  role: "user",
  parts: [{ type: "text", text: `note number${n}` }],
});

describe("background search indexing", () => {
  it("append returns before indexing; idle() leaves the thread indexed to its length", async () => {
    const path = join(dir, "indexed.db");
    const stores = openSqliteStores({ path });
    const { engine } = engineOn(stores);
    const mark = () => {
      const db = new Database(path, { readonly: true });
      try {
        const row = db.prepare("SELECT indexed_upto FROM search_progress WHERE thread_id = ?").get("t") as
          | { indexed_upto: number }
          | undefined;
        return row?.indexed_upto ?? 0;
      } finally {
        db.close();
      }
    };
    await engine.append("t", [say(0), say(1)]);
    expect(mark()).toBe(0);
    // A burst of appends while the first catch-up waits: it covers them all.
    await engine.append("t", [say(2)]);
    await engine.append("t", [say(3), say(4)]);
    await engine.idle();
    expect(mark()).toBe(5);
    await engine.append("t", [say(5)]);
    await engine.idle();
    expect(mark()).toBe(6);
    expect((await stores.log.search!("t", "number5")).map((h) => h.seq)).toEqual([5]);
    await stores.close();
  });

  it("runs one catch-up per thread at a time, and none for a store without indexForSearch", async () => {
    const base = createMemoryStores();
    let running = 0;
    let most = 0;
    const calls: string[] = [];
    // The first catch-up holds until the test lets it go, so the next appends surely arrive while it runs
    // (a timer here made the test depend on the machine's load).
    let started: () => void = () => {};
    const firstStarted = new Promise<void>((resolve) => {
      started = resolve;
    });
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const log = {
      ...base.log,
      indexForSearch: async (threadId: string) => {
        calls.push(threadId);
        most = Math.max(most, ++running);
        if (calls.length === 1) {
          started();
          await gate;
        }
        await base.log.indexForSearch!(threadId);
        running--;
      },
    };
    const { engine } = engineOn({ ...base, log });
    await engine.append("t", [say(0)]);
    await firstStarted;
    await engine.append("t", [say(1)]);
    await engine.append("t", [say(2)]);
    release();
    await engine.idle();
    expect(most).toBe(1);
    expect(calls).toEqual(["t", "t"]);
    const { indexForSearch: _omitted, ...plainLog } = base.log;
    const plain = engineOn({ ...base, log: plainLog });
    await plain.engine.append("u", [say(0)]);
    await plain.engine.idle();
    expect(plain.events.filter((e) => e.type === "error")).toEqual([]);
  });

  it("reports a failed catch-up as an error event; the append still succeeds", async () => {
    const base = createMemoryStores();
    const log = {
      ...base.log,
      indexForSearch: async () => {
        throw new StoreUnavailableError("the index is down");
      },
    };
    const { engine, events } = engineOn({ ...base, log });
    const result = await engine.append("t", [say(0)]);
    expect(result.logSeq).toBe(1);
    await engine.idle();
    const errors = events.filter((e) => e.type === "error");
    expect(errors).toMatchObject([{ threadId: "t", operation: "index", message: "the index is down" }]);
  });
});
