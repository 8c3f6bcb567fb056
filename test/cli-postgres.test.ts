/**
 * `--db postgres://…`: the same commands on the PostgreSQL backend, against a throwaway server made with
 * `initdb`. Skipped with a message when no server binary is found, except in CI (CI=true), where that fails.
 */
import { expect, it } from "vitest";
import { exportTranscript, ThreadLog } from "../src/index.js";
import { generateSampleSession } from "../src/sample/index.js";
import { jsonOf, runInProcess } from "./support/cli-run.js";
import { describeOnPostgres } from "./support/postgres-cluster.js";

describeOnPostgres("the CLI on PostgreSQL (--db postgres://…)", "CLI PostgreSQL test", (server) => {
  it("ingest → compact → prepare → replay --verify", async () => {
    const db = server().connectionString;
    const text = exportTranscript(ThreadLog.from("pg", generateSampleSession({ messages: 60, seed: 5 })));
    const ingest = await runInProcess(["ingest", "-", "--thread", "pg", "--db", db, "--json"], {
      stdin: text,
    });
    expect(ingest.code, ingest.stderr).toBe(0);
    expect(jsonOf(ingest)).toMatchObject({ appended: 60, length: 60 });
    const compact = await runInProcess([
      "compact",
      "--thread",
      "pg",
      "--budget",
      "3000",
      "--db",
      db,
      "--json",
    ]);
    expect(compact.code, compact.stderr).toBe(0);
    expect(jsonOf<{ tokensAfter: number }>(compact).tokensAfter).toBeLessThanOrEqual(3000);
    const prepare = await runInProcess(["prepare", "--thread", "pg", "--budget", "3000", "--db", db]);
    expect(prepare.code, prepare.stderr).toBe(0);
    const { callId, request } = jsonOf<{ callId: string; request: unknown }>(prepare);
    const replay = await runInProcess(["replay", "--call", callId, "--verify", "--db", db]);
    expect(replay.code, replay.stderr).toBe(0);
    expect(jsonOf(replay)).toEqual(request);
    const missing = await runInProcess(["render", "--thread", "nope", "--db", db]);
    expect(missing.code).toBe(1);
  }, 60_000);
});
