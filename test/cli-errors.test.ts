/**
 * The CLI's failure paths: bad input (a broken JSON line, an unknown role, an orphaned tool result, a negative
 * budget, an unknown thread, …) exits 1 with a message naming what and where, and leaves the thread's log
 * length and plan version unchanged; `--help` works on every command.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  cliOn as cli,
  cliSandbox,
  runInProcess,
  sampleTranscript,
  threadState as stateOf,
} from "./support/cli-run.js";

const COMMANDS = ["ingest", "compact", "render", "prepare", "replay", "explain", "diff", "demo"];
const sandbox = cliSandbox("context-ledger-cli-errors-");
const freshDb = sandbox.db;
const writeFile = sandbox.file;
const sample = sampleTranscript(60, 3);

afterAll(() => sandbox.remove());

describe("bad input exits 1, names what and where, and leaves the thread unchanged", () => {
  const db = freshDb();
  const thread = "sample";
  const good = sample.split("\n").slice(0, 3);
  let before: { logSeq: number; planVersion: number };

  beforeAll(async () => {
    expect((await cli(db, "ingest", writeFile("sample.jsonl", sample), "--thread", thread)).code).toBe(0);
    const compact = await cli(db, "compact", "--thread", thread, "--budget", "4000");
    expect(compact.code, compact.stderr).toBe(0);
    before = await stateOf(db, thread);
    expect(before.planVersion).toBe(1);
  });

  const badFiles: ReadonlyArray<readonly [string, string, RegExp]> = [
    [
      "a broken JSON line",
      [...good, '{"role":"user","content":"unterminated'].join("\n"),
      /line 4\b.*not valid JSON|not valid JSON.*line 4\b/,
    ],
    [
      "an unknown role",
      [good[0]!, '{"role":"wizard","content":"x"}', ...good.slice(1)].join("\n"),
      /line 2\b/,
    ],
    [
      "an orphaned tool result",
      [...good, '{"role":"tool","content":"x","tool_call_id":"call_nowhere"}'].join("\n"),
      /orphaned.*line 4\b.*tool_call_id/,
    ],
  ];
  for (const [what, text, where] of badFiles) {
    it(`ingest of ${what} appends nothing`, async () => {
      const run = await cli(
        db,
        "ingest",
        writeFile(`bad-${what.replaceAll(" ", "-")}.jsonl`, text),
        "--thread",
        thread,
      );
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(where);
      expect(run.stdout).toBe("");
      expect(await stateOf(db, thread)).toEqual(before);
      // Into a new thread, nothing is created either.
      const fresh = await cli(db, "ingest", writeFile("bad-fresh.jsonl", text), "--thread", "fresh");
      expect(fresh.code).toBe(1);
      expect((await cli(db, "render", "--thread", "fresh")).stderr).toMatch(/thread "fresh" not found/);
    });
  }

  it("ingest of a file the thread already holds is refused unless --allow-duplicate", async () => {
    const path = writeFile("again.jsonl", sample);
    const again = await cli(db, "ingest", path, "--thread", thread);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /already holds 60 of the 60 messages .* \(the first from seq 0\).*--allow-duplicate/,
    );
    expect(await stateOf(db, thread)).toEqual(before);
    const other = freshDb();
    expect((await cli(other, "ingest", path, "--thread", "t")).code).toBe(0);
    const forced = await cli(other, "ingest", path, "--thread", "t", "--allow-duplicate", "--json");
    expect(forced.code, forced.stderr).toBe(0);
    expect(JSON.parse(forced.stdout)).toMatchObject({ appended: 60, fromSeq: 60, length: 120 });
  });

  it("ingest of a file that is not UTF-8 names the line and byte, and appends nothing", async () => {
    // Line 3 holds a Latin-1 "é" (0xE9 followed by a quote): U+FFFD would have been stored silently.
    const head = Buffer.from(`${good.slice(0, 2).join("\n")}\n{"role":"user","content":"caf`);
    const bytes = Buffer.concat([head, Buffer.from([0xe9]), Buffer.from('"}\n')]);
    const path = join(sandbox.dir, "latin1.jsonl");
    writeFileSync(path, bytes);
    const run = await cli(db, "ingest", path, "--thread", thread);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/not valid UTF-8: byte 0xe9 at byte 29 of the line.*line 3\b/);
    expect(await stateOf(db, thread)).toEqual(before);
  });

  const badCommands: ReadonlyArray<readonly [string, ReadonlyArray<string>, RegExp]> = [
    [
      "negative budget (compact)",
      ["compact", "--thread", thread, "--budget", "-5"],
      /--budget must be a positive integer, got "-5"/,
    ],
    [
      "negative budget (prepare)",
      ["prepare", "--thread", thread, "--budget=-5"],
      /--budget must be a positive integer/,
    ],
    ["zero budget", ["compact", "--thread", thread, "--budget", "0"], /--budget must be a positive integer/],
    [
      "non-integer budget",
      ["compact", "--thread", thread, "--budget", "12.5"],
      /--budget must be a positive integer/,
    ],
    ["missing budget", ["compact", "--thread", thread], /--budget is required/],
    ["missing thread", ["render"], /--thread is required/],
    [
      "unknown format",
      ["render", "--thread", thread, "--format", "gemini"],
      /--format must be one of openai, anthropic, responses/,
    ],
    ["unknown flag", ["explain", "--thread", thread, "--verbose"], /unknown flag --verbose \(known: /],
    [
      "misspelt flag",
      ["compact", "--thread", thread, "--budgte", "4000"],
      /unknown flag --budgte; did you mean --budget\?/,
    ],
    ["extra argument", ["explain", "--thread", thread, "extra"], /unexpected argument "extra"/],
    [
      "unknown model",
      ["compact", "--thread", thread, "--budget", "100", "--model", "nope-1"],
      /--model "nope-1" is not a known model/,
    ],
    ["infeasible budget", ["compact", "--thread", thread, "--budget", "10"], /over by \d+/],
    ["unknown plan version", ["render", "--thread", thread, "--plan", "99"], /plan version 99/],
    ["unknown call", ["replay", "--call", "no-such-call", "--verify"], /no-such-call/],
    [
      "missing transcript file",
      ["ingest", join(sandbox.dir, "missing.jsonl"), "--thread", thread],
      /cannot read transcript/,
    ],
    ["bad diff version", ["diff", "--thread", thread, "0", "x"], /TO must be a plan version/],
    [
      "missing config file",
      ["compact", "--thread", thread, "--budget", "100", "--config", "nope.yaml"],
      /nope\.yaml/,
    ],
  ];
  for (const [what, argv, message] of badCommands) {
    it(what, async () => {
      const run = await cli(db, ...argv);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(message);
      expect(run.stdout).toBe("");
      expect(await stateOf(db, thread)).toEqual(before);
    });
  }

  for (const command of ["compact", "render", "prepare", "explain", "diff"]) {
    it(`${command} of an unknown thread`, async () => {
      const extra =
        command === "compact" || command === "prepare"
          ? ["--budget", "100"]
          : command === "diff"
            ? ["0", "1"]
            : [];
      const run = await cli(db, command, "--thread", "nope", ...extra);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/thread "nope" not found in .* \(ingest it first\)/);
      expect(await stateOf(db, thread)).toEqual(before);
    });
  }

  it("--json errors are one JSON object on stderr with code, where and exit code", async () => {
    const text = [...good, "{oops"].join("\n");
    const run = await cli(db, "ingest", writeFile("bad-json.jsonl", text), "--thread", thread, "--json");
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stderr)).toMatchObject({
      error: { code: "VALIDATION", where: { line: 4 }, exitCode: 1 },
    });
  });
});

describe("help", () => {
  it("context-ledger --help lists every command", async () => {
    const run = await runInProcess(["--help"]);
    expect(run.code).toBe(0);
    for (const name of COMMANDS) expect(run.stdout).toMatch(new RegExp(`^  ${name} `, "m"));
    expect((await runInProcess([])).code).toBe(1);
    const unknown = await runInProcess(["frobnicate"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^context-ledger: unknown command "frobnicate"\n/);
    const typo = await runInProcess(["replya", "--call", "x"]);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toMatch(/unknown command "replya"; did you mean replay\?/);
  });

  for (const name of COMMANDS) {
    it(`${name} --help prints its usage, even next to bad flags`, async () => {
      for (const argv of [
        [name, "--help"],
        [name, "--bogus", "-h"],
      ]) {
        const run = await runInProcess(argv);
        expect(run.code).toBe(0);
        expect(run.stdout).toMatch(new RegExp(`^usage: context-ledger ${name}`));
        expect(run.stdout).toMatch(/--db PATH/);
      }
    });
  }
});
