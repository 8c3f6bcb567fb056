/**
 * `context-ledger report` on the command line: it writes the page and says what it wrote (also as --json), and
 * bad input exits 1 naming what and where: an unknown thread, a thread with no recorded call, an --out that
 * cannot be written.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultReportPath } from "../src/cli/report-command.js";
import { createContextEngine } from "../src/context-engine.js";
import { gatherReport, partsText } from "../src/report/index.js";
import { openSqliteStores } from "../src/stores/sqlite/index.js";
import { runInProcess } from "./support/cli-run.js";
import { buildReportThread } from "./support/report-thread.js";

describe("context-ledger report", () => {
  let dir: string;
  let db: string;
  let thread: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ledger-report-cli-"));
    db = join(dir, "ledger.db");
    thread = (await buildReportThread(db, { steps: 4 })).threadId;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("writes one self-contained page and reports it as JSON", async () => {
    const out = join(dir, "r.html");
    const run = await runInProcess(["report", "--db", db, "--thread", thread, "--out", out, "--json"]);
    expect(run.code).toBe(0);
    const body = JSON.parse(run.stdout);
    expect(body).toMatchObject({ thread, out, calls: 4 });
    expect(body.planVersions).toBeGreaterThan(0);
    const html = readFileSync(out, "utf8");
    expect(body.bytes).toBe(Buffer.byteLength(html));
    expect(html).toContain('id="report-data"');
    const human = await runInProcess(["report", "--db", db, "--thread", thread, "--out", out]);
    expect(human.stdout).toMatch(/^wrote .*r\.html \(\d+ KB\): 4 call\(s\)/);
  });

  it("tells its progress through plan versions and calls", async () => {
    const stores = await openSqliteStores({ path: db });
    try {
      const engine = createContextEngine({ stores, budget: { contextWindow: 1_000_000 } });
      const seen: Array<readonly [number, number]> = [];
      const onProgress = (done: number, total: number) => seen.push([done, total]);
      const data = await gatherReport({ engine, stores, database: db, onProgress }, thread);
      const total = data.plans.length + data.calls.length;
      expect(seen).toEqual(Array.from({ length: total }, (_, i) => [i + 1, total]));
    } finally {
      await stores.close();
    }
  });

  it("embeds each distinct request message once; each call's runs expand to the request replay renders", async () => {
    const longer = join(dir, "longer.db");
    const { threadId, calls } = await buildReportThread(longer, { steps: 24, budget: 12_000 });
    const stores = await openSqliteStores({ path: longer });
    try {
      const engine = createContextEngine({ stores, budget: { contextWindow: 1_000_000 } });
      const data = await gatherReport({ engine, stores, database: longer }, threadId);
      let sent = 0;
      for (const call of data.calls) {
        const replay = await engine.replay(call.callId);
        const expanded = call.request.flatMap(([first, count]) => data.requests.slice(first, first + count));
        expect(expanded.map(([role, kind, text, tokens]) => [role, kind, data.texts[text], tokens])).toEqual(
          replay.prompt!.messages.map((m) => [m.role, m.provenance.kind, partsText(m.parts), m.tokens]),
        );
        sent += expanded.length;
      }
      expect(new Set(data.requests.map((m) => JSON.stringify(m))).size).toBe(data.requests.length);
      // Messages sent again from call to call are embedded once, and a call's request is a few runs.
      expect(data.calls).toHaveLength(calls);
      expect(calls).toBeGreaterThan(20);
      expect(data.requests.length).toBeLessThan(sent / 3);
      const runs = data.calls.reduce((n, c) => n + c.request.length, 0);
      expect(runs).toBeLessThan(sent / 2);
    } finally {
      await stores.close();
    }
  });

  it("names an unknown thread and the database", async () => {
    const run = await runInProcess(["report", "--db", db, "--thread", "nope", "--out", join(dir, "x.html")]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('thread "nope" not found in');
    expect(run.stderr).toContain(db);
  });

  it("says when a thread has no recorded model call", async () => {
    const input = join(dir, "one.jsonl");
    await import("node:fs").then((fs) =>
      fs.writeFileSync(input, `${JSON.stringify({ role: "user", content: "hello" })}\n`),
    );
    expect((await runInProcess(["ingest", input, "--db", db, "--thread", "quiet"])).code).toBe(0);
    const run = await runInProcess(["report", "--db", db, "--thread", "quiet", "--out", join(dir, "q.html")]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('thread "quiet"');
    expect(run.stderr).toContain("no recorded model calls");
  });

  it("names an --out it cannot write, before reading the database", async () => {
    const missing = join(dir, "no-such-dir", "r.html");
    // An unknown thread too: were the database read first, the error would be about the thread.
    const run = await runInProcess([
      "report",
      "--db",
      db,
      "--thread",
      "no-such-thread",
      "--out",
      missing,
      "--json",
    ]);
    expect(run.code).toBe(1);
    const { error } = JSON.parse(run.stderr);
    expect(error.code).toBe("VALIDATION");
    expect(error.message).toContain(missing);
    expect(error.message).toContain("does not exist");
    expect(error.where.field).toBe("--out");
    const asDir = await runInProcess(["report", "--db", db, "--thread", thread, "--out", dir]);
    expect(asDir.code).toBe(1);
    expect(asDir.stderr).toContain("is a directory");
    if (process.getuid?.() !== 0) {
      const locked = join(dir, "locked");
      mkdirSync(locked);
      chmodSync(locked, 0o500);
      const denied = await runInProcess([
        "report",
        "--db",
        db,
        "--thread",
        thread,
        "--out",
        join(locked, "r.html"),
      ]);
      expect(denied.code).toBe(1);
      expect(denied.stderr).toContain("not writable");
    }
  });

  it("requires --thread and has help", async () => {
    const run = await runInProcess(["report", "--db", db]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("--thread is required");
    const help = await runInProcess(["report", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("usage: context-ledger report --thread ID [--out FILE]");
    expect(defaultReportPath("a/b c")).toBe("a_b_c.report.html");
  });
});
