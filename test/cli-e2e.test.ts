/**
 * End-to-end tests of the `context-ledger` command line: every command on every shared trajectory (ingest →
 * compact at 25 % → render in every format → provider-valid → prepare → replay --verify), the commands' output
 * on a generated session, and runs of the real executable (stdin, exit codes 1 and 2, the demo). Bad input and
 * help are in `cli-errors.test.ts`.
 */
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { type ProviderFormat, parseTranscript, validateProviderRequest } from "../src/index.js";
import {
  cliOn as cli,
  cliSandbox,
  jsonOf,
  runChild,
  runInProcess,
  sampleTranscript,
  threadState as stateOf,
} from "./support/cli-run.js";
import { listTrajectories, trajectoriesAvailable } from "./support/trajectories.js";

const FORMATS: ReadonlyArray<ProviderFormat> = ["openai", "anthropic", "responses"];
const sandbox = cliSandbox("context-ledger-cli-e2e-");
const freshDb = sandbox.db;
const writeFile = sandbox.file;
const sample = sampleTranscript(60, 3);

afterAll(() => sandbox.remove());

function expectShape(format: ProviderFormat, body: Record<string, unknown>, hasSystem: boolean): void {
  expect(validateProviderRequest(format, body as never)).toEqual([]);
  const list = format === "responses" ? "input" : "messages";
  expect(Array.isArray(body[list])).toBe(true);
  if (format === "anthropic" && hasSystem) expect(body.system).toBeDefined();
  if (format === "openai") expect(Object.keys(body)).toEqual(["messages"]);
}

describe.skipIf(!trajectoriesAvailable)("every shared trajectory through the CLI", () => {
  const db = freshDb();
  for (const [index, file] of listTrajectories().entries()) {
    it(`${file.name}: ingest → compact at 25 % → render ×3 → prepare → replay --verify`, async () => {
      const thread = `trajectory-${index}`;
      const inputs = parseTranscript(file.text);
      const messages = inputs.length;
      const hasSystem = inputs[0]?.role === "system";
      const ingest = await cli(db, "ingest", file.path, "--thread", thread, "--json");
      expect(ingest.code, ingest.stderr).toBe(0);
      expect(jsonOf(ingest)).toMatchObject({ thread, appended: messages, fromSeq: 0, length: messages });

      const full = jsonOf<{ renderedTokens: number }>(
        await cli(db, "explain", "--thread", thread, "--plan", "0", "--json"),
      ).renderedTokens;
      const budget = Math.ceil(full * 0.25);
      const compact = await cli(db, "compact", "--thread", thread, "--budget", String(budget), "--json");
      let prepareBudget = budget;
      if (compact.code === 0) {
        const c = jsonOf<{ tokensBefore: number; tokensAfter: number; planVersion: number }>(compact);
        expect(c).toMatchObject({ tokensBefore: full, planVersion: 1 });
        expect(c.tokensAfter).toBeLessThanOrEqual(budget);
        const after = await cli(db, "explain", "--thread", thread, "--json");
        expect(jsonOf<{ renderedTokens: number }>(after).renderedTokens).toBe(c.tokensAfter);
      } else {
        // The protected content (system prompt, last user turn) alone can exceed 25 %: a user error, no commit.
        expect(compact.code, compact.stderr).toBe(1);
        expect(compact.stderr).toMatch(/over by \d+/);
        expect(await stateOf(db, thread)).toEqual({ logSeq: messages, planVersion: 0 });
        prepareBudget = full;
      }

      for (const format of FORMATS) {
        const render = await cli(db, "render", "--thread", thread, "--format", format);
        expect(render.code, render.stderr).toBe(0);
        expectShape(format, jsonOf(render), hasSystem);
      }

      const format = FORMATS[index % FORMATS.length]!;
      const prepare = await cli(
        db,
        "prepare",
        "--thread",
        thread,
        "--budget",
        String(prepareBudget),
        "--format",
        format,
      );
      expect(prepare.code, prepare.stderr).toBe(0);
      const turn = jsonOf<{ callId: string; request: Record<string, unknown>; stats: { tokens: number } }>(
        prepare,
      );
      expectShape(format, turn.request, hasSystem);
      expect(turn.stats.tokens).toBeLessThanOrEqual(prepareBudget);

      const replay = await cli(db, "replay", "--call", turn.callId, "--verify");
      expect(replay.code, replay.stderr).toBe(0);
      expect(jsonOf(replay)).toEqual(turn.request);
      expect(replay.stderr).toMatch(/^verified call /);
    });
  }
});

describe("commands on a sample session", () => {
  const db = freshDb();
  const thread = "s";

  it("ingest appends after an existing thread; --json shapes; diff; explain table", async () => {
    const first = await cli(db, "ingest", "-", "--thread", thread, "--json");
    expect(jsonOf(first)).toMatchObject({ appended: 0, length: 0 });
    const half = sample.split("\n");
    const a = await runInProcess(["ingest", "-", "--thread", thread, "--db", db, "--json"], {
      stdin: half.slice(0, 30).join("\n"),
    });
    const b = await runInProcess(["--db", db, "ingest", "-", "--thread", thread], {
      stdin: half.slice(30).join("\n"),
    });
    expect(jsonOf(a)).toMatchObject({ thread, source: "stdin", appended: 30, fromSeq: 0, length: 30 });
    expect(b.stdout).toMatch(/^appended 30 message\(s\) from stdin to thread "s" \(log length 60\)/);

    const compact = await cli(db, "compact", "--thread", thread, "--budget", "3000");
    expect(compact.stdout).toMatch(
      /plan v1 committed \(was v0\)\ntokens: \d+ → \d+ .*budget 3000.*\nactions \(messages\): cleared \d+, summarized \d+, externalized \d+, dropped \d+/,
    );
    const again = jsonOf(await cli(db, "compact", "--thread", thread, "--budget", "3000", "--json"));
    expect(again).toMatchObject({ changed: false, planVersion: 1, previousVersion: 1 });

    const explain = await cli(db, "explain", "--thread", thread);
    const lines = explain.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^thread "s", plan v1, 60 message\(s\); rendered request \d+ tokens$/);
    expect(lines[1]).toMatch(/seq\s+id\s+role\s+state\s+tokens\s+content\s+strategy: reason/);
    // One line per message, but three or more neighbours under the same action and reason are one line.
    const runs = lines.slice(2, -1).filter((l) => /^\s+\d+-\d+ /.test(l));
    const runMessages = runs.reduce((n, l) => {
      const [a, b] = l.trim().split(/\s/)[0]!.split("-").map(Number);
      return n + b! - a! + 1;
    }, 0);
    expect(lines.length - 3 - runs.length + runMessages).toBe(60);
    expect(lines.at(-1)).toMatch(/^totals: kept \d+/);
    // "Where did X go?": the rows holding a text, and one message by id, with the totals of the whole plan.
    const all = jsonOf<{ rows: Array<{ id: string; state: string; preview: string }> }>(
      await cli(db, "explain", "--thread", thread, "--json"),
    );
    const target = all.rows.find((r) => r.state !== "kept") ?? all.rows[5]!;
    const byId = jsonOf<{ rows: Array<{ id: string }>; totals: unknown }>(
      await cli(db, "explain", "--thread", thread, "--id", target.id, "--json"),
    );
    expect(byId.rows.map((r) => r.id)).toEqual([target.id]);
    const word = target.preview.split(/\W+/).find((w) => w.length > 4)!;
    const grep = jsonOf<{ rows: Array<{ id: string; preview: string }> }>(
      await cli(db, "explain", "--thread", thread, "--grep", word.toUpperCase(), "--json"),
    );
    expect(grep.rows.map((r) => r.id)).toContain(target.id);
    const cleared = jsonOf<{ rows: Array<{ state: string }> }>(
      await cli(db, "explain", "--thread", thread, "--state", "kept", "--json"),
    );
    expect(cleared.rows.every((r) => r.state === "kept")).toBe(true);

    const diff = await cli(db, "diff", "--thread", thread, "0", "latest");
    expect(diff.stdout).toMatch(/v0 → v1/);
    const diffJson = jsonOf<{ fromVersion: number; toVersion: number; changes: unknown[] }>(
      await cli(db, "diff", "--thread", thread, "0", "1", "--json"),
    );
    expect(diffJson.toVersion).toBe(1);
    expect(diffJson.changes.length).toBeGreaterThan(0);
  });

  it("prepare records calls that replay; --inject is part of the replayed request", async () => {
    const prepare = await cli(
      db,
      "prepare",
      "--thread",
      thread,
      "--budget",
      "3000",
      "--format",
      "anthropic",
      "--inject",
      "NOTE: injected",
    );
    expect(prepare.code, prepare.stderr).toBe(0);
    const turn = jsonOf<{ callId: string; request: unknown; stats: { planVersion: number } }>(prepare);
    expect(JSON.stringify(turn.request)).toContain("NOTE: injected");
    const replay = await cli(db, "replay", "--call", turn.callId);
    expect(jsonOf(replay)).toEqual(turn.request);
  });

  it("replay --verify --json prints the verdict object on stdout", async () => {
    const prepare = jsonOf<{ callId: string; request: unknown }>(
      await cli(db, "prepare", "--thread", thread, "--budget", "3000"),
    );
    const run = await cli(db, "replay", "--call", prepare.callId, "--verify", "--json");
    expect(run.code, run.stderr).toBe(0);
    const verdict = jsonOf<Record<string, unknown>>(run);
    expect(verdict).toMatchObject({
      ok: true,
      reason: null,
      callId: prepare.callId,
      request: prepare.request,
    });
    expect(verdict.requestHash).toBe(verdict.recordedHash);
  });

  it("replay --verify exits 1 with both hashes when a stored message was tampered with", async () => {
    const prepare = jsonOf<{ callId: string }>(
      await cli(db, "prepare", "--thread", thread, "--budget", "3000"),
    );
    const sqlite = new Database(db);
    const row = sqlite
      .prepare("SELECT seq, body FROM messages WHERE thread_id = ? ORDER BY seq DESC LIMIT 1")
      .get(thread) as { seq: number; body: string };
    sqlite
      .prepare("UPDATE messages SET body = ? WHERE thread_id = ? AND seq = ?")
      .run(row.body.replace(/"text":"/, '"text":"TAMPERED '), thread, row.seq);
    sqlite.close();
    const verify = await cli(db, "replay", "--call", prepare.callId, "--verify");
    expect(verify.code).toBe(1);
    expect(verify.stderr).toMatch(/does not match: recorded hash [0-9a-f]{64}, re-rendered [0-9a-f]{64}/);
    expect(verify.stderr).toMatch(/changed after it was appended/);
    const plain = await cli(db, "replay", "--call", prepare.callId);
    expect(plain.code).toBe(0);
    expect(plain.stderr).toMatch(/does not match/);
    const json = await cli(db, "replay", "--call", prepare.callId, "--verify", "--json");
    expect(json.code).toBe(1);
    expect(jsonOf(json)).toMatchObject({
      ok: false,
      requestHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      recordedHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      reason: expect.stringMatching(/changed after it was appended/),
      callId: prepare.callId,
    });
  });

  it("CONTEXT_LEDGER_DB names the database when --db is absent", async () => {
    const run = await runInProcess(["explain", "--thread", thread, "--json"], {
      env: { CONTEXT_LEDGER_DB: db },
    });
    expect(jsonOf(run)).toMatchObject({ thread, logSeq: 60 });
  });

  it("a large file gets a progress bar on a terminal, and none when stderr is not one", async () => {
    const line = JSON.stringify({ role: "user", content: "lorem ipsum dolor sit amet ".repeat(2_000) });
    const text = Array.from({ length: 22 }, () => line).join("\n");
    const tty = await runInProcess(["ingest", "-", "--thread", "big", "--db", db], {
      stdin: text,
      errIsTTY: true,
    });
    expect(tty.code, tty.stderr).toBe(0);
    expect(tty.stderr).toMatch(/\r\[#+\] 100% /);
    const piped = await runInProcess(["ingest", "-", "--thread", "big2", "--db", db], { stdin: text });
    expect(piped.stderr).toBe("");
  });
});

describe("the executable", () => {
  const db = freshDb();

  it("reads stdin, exits 1 on bad input and 2 on a corrupt database", () => {
    const env = { CONTEXT_LEDGER_DB: db };
    const ingest = runChild(["ingest", "-", "--thread", "x"], { stdin: sample, env });
    expect(ingest.code, ingest.stderr).toBe(0);
    expect(ingest.stdout).toMatch(/appended 60 message\(s\)/);
    const bad = runChild(["compact", "--thread", "x", "--budget", "-5"], { env });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--budget/);
    // A database that cannot be read is not the caller's input error (see src/cli/cli.ts): exit 2.
    const corrupt = writeFile("corrupt.db", "this is not a database ".repeat(100));
    const broken = runChild(["render", "--thread", "x", "--db", corrupt]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/corrupt\.db/);
  });

  it("demo runs end to end and reports every call verified", () => {
    const run = runChild(["demo"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/(\d+)\/\1 calls verified/);
    expect(run.stdout).toMatch(/temporary database removed/);
  });
});
