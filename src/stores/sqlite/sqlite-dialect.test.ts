import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { all, run, statement } from "../sql/sql-dialect.js";
import { sqliteDialect } from "./sqlite-dialect.js";

let dir: string;
let open: Database.Database[];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "context-ledger-sqlite-dialect-"));
  open = [];
});
afterEach(() => {
  for (const db of open) db.close();
  rmSync(dir, { recursive: true, force: true });
});

const connect = (): Database.Database => {
  const db = new Database(join(dir, "d.db"));
  db.pragma("busy_timeout = 200");
  db.pragma("journal_mode = WAL");
  open.push(db);
  return db;
};
const insert = (k: number) => statement("INSERT INTO t (k) VALUES (?)", [k]);
const count = statement("SELECT count(*) AS n FROM t");

describe("sqliteDialect", () => {
  it("commits a transaction body and rolls it back when it throws", async () => {
    const db = connect();
    db.exec("CREATE TABLE t (k INTEGER PRIMARY KEY)");
    const dialect = sqliteDialect(db);
    const changed = await dialect.transaction(function* () {
      return (yield* run(insert(1))) + (yield* run(insert(2)));
    });
    expect(changed).toBe(2);
    await expect(
      dialect.transaction(function* () {
        yield* run(insert(3));
        throw new Error("stop");
      }),
    ).rejects.toThrow("stop");
    expect(dialect.int((await dialect.all(count))[0], "n")).toBe(2);
  });

  it("runs concurrent transactions of two connections in one process without waiting on each other's lock", async () => {
    const first = connect();
    first.exec("CREATE TABLE t (k INTEGER PRIMARY KEY)");
    const dialects = [sqliteDialect(first), sqliteDialect(connect())];
    // Each body reads, then writes: a body yielding the event loop while holding the write lock would leave the
    // other connection blocked in busy_timeout (SQLITE_BUSY).
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        dialects[i % 2]!.transaction(function* () {
          const [row] = yield* all(count);
          yield* run(insert(Number((row as { n: number }).n)));
        }),
      ),
    );
    expect(dialects[1]!.int((await dialects[1]!.all(count))[0], "n")).toBe(20);
  });
});
