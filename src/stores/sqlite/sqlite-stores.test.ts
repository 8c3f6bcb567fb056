import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { StoreUnavailableError, ValidationError } from "../../errors/ledger-error.js";
import { hashMessageContent } from "../../log/canonical-json.js";
import type { Message } from "../../log/message.js";
import { emptyPlan, extendPlan } from "../../plan/compaction-plan.js";
import { DEFAULT_SQLITE_PATH, openSqliteStores, SQLITE_MIGRATIONS } from "./index.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "context-ledger-sqlite-unit-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const message = (seq: number, id: string): Message => {
  const parts = [{ type: "text", text: id }] as const;
  return { id, seq, role: "user", parts, meta: {}, hash: hashMessageContent("user", parts) };
};

describe("openSqliteStores", () => {
  it("defaults to ./.context-ledger/ledger.db, creating the folder, in WAL mode", async () => {
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const stores = openSqliteStores();
      await stores.close();
      expect(existsSync(join(dir, DEFAULT_SQLITE_PATH))).toBe(true);
      const db = new Database(join(dir, DEFAULT_SQLITE_PATH));
      expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
      db.close();
    } finally {
      process.chdir(cwd);
    }
  });

  it("applies each migration once, however often the file is opened", async () => {
    const path = join(dir, "x.db");
    for (let i = 0; i < 3; i++) await openSqliteStores({ path }).close();
    const db = new Database(path);
    const rows = db.prepare("SELECT version FROM schema_migrations ORDER BY version").all();
    expect(rows).toEqual(SQLITE_MIGRATIONS.map((m) => ({ version: m.version })));
    db.close();
  });

  it("refuses a database whose schema is newer than this library", () => {
    const path = join(dir, "x.db");
    void openSqliteStores({ path }).close();
    const db = new Database(path);
    db.prepare(
      "INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 'now')",
    ).run();
    db.close();
    expect(() => openSqliteStores({ path })).toThrow(StoreUnavailableError);
    expect(() => openSqliteStores({ path })).toThrow(/schema version 99, newer than this library knows/);
  });

  it("validates rows read back: a corrupt message or plan row raises ValidationError naming it", async () => {
    const path = join(dir, "x.db");
    const stores = openSqliteStores({ path });
    await stores.log.append("t1", 0, [{ message: message(0, "a"), tokens: {} }]);
    await stores.plans.commit(extendPlan(emptyPlan("t1"), [], 1), 0);
    const db = new Database(path);
    db.prepare("UPDATE messages SET body = json_set(body, '$.role', 'robot')").run();
    db.prepare("UPDATE plans SET body = json_set(body, '$.version', 7)").run();
    db.close();
    const error = await stores.log.read("t1").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).where).toMatchObject({ threadId: "t1", field: "role" });
    await expect(stores.plans.get("t1", 1)).rejects.toThrow(/holds version 7/);
    await stores.close();
  });

  it("reports a file that is not a database as StoreUnavailableError", () => {
    const path = join(dir, "notes.txt");
    writeFileSync(path, "not a database\n".repeat(200));
    expect(() => openSqliteStores({ path })).toThrow(StoreUnavailableError);
    expect(() => openSqliteStores({ path })).toThrow(/notes\.txt.*not a database/);
  });
});
