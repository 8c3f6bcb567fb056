/**
 * The CLI acts for a tenant and a clearance: `--tenant` / `$CONTEXT_LEDGER_TENANT` (default `default`, which owns
 * every thread stored before tenants) and `--clearance` / `$CONTEXT_LEDGER_CLEARANCE` (default `internal`).
 * Another tenant's thread exits 1 naming the thread, never its owner; content above the clearance prints as a
 * withheld stub.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createContextEngine } from "../src/index.js";
import { openSqliteStores } from "../src/stores/sqlite/index.js";
import { cliOn as cli, cliSandbox, jsonOf, runInProcess, sampleTranscript } from "./support/cli-run.js";

const sandbox = cliSandbox("context-ledger-cli-tenancy-");
afterAll(() => sandbox.remove());

describe("CLI --tenant", () => {
  const db = sandbox.db();
  const file = sandbox.file("sample.jsonl", sampleTranscript(20, 2));

  beforeAll(async () => {
    const run = await cli(db, "ingest", file, "--thread", "owned", "--tenant", "tenant-alpha-owner");
    expect(run.code, run.stderr).toBe(0);
    expect((await cli(db, "ingest", file, "--thread", "shared")).code).toBe(0);
  });

  it("another tenant's thread exits 1 on every command, naming the thread and not the owner", async () => {
    const runs = [
      await cli(db, "render", "--thread", "owned", "--format", "openai"),
      await cli(db, "explain", "--thread", "owned", "--tenant", "tenant-beta"),
      await cli(db, "prepare", "--thread", "owned", "--budget", "4000", "--tenant", "tenant-beta"),
      await cli(db, "compact", "--thread", "owned", "--budget", "4000"),
      await cli(db, "ingest", file, "--thread", "owned", "--allow-duplicate"),
      await runInProcess(["report", "--thread", "owned", "--db", db], {
        env: { CONTEXT_LEDGER_TENANT: "x" },
      }),
    ];
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toContain('thread "owned"');
      expect(run.stderr).toContain("another tenant");
      expect(run.stderr).not.toContain("tenant-alpha-owner");
    }
  });

  it("the owning tenant (flag or environment) works, and the default tenant keeps its threads", async () => {
    const byFlag = await cli(db, "explain", "--thread", "owned", "--tenant", "tenant-alpha-owner", "--json");
    expect(byFlag.code, byFlag.stderr).toBe(0);
    const byEnv = await runInProcess(["render", "--thread", "owned", "--format", "openai", "--db", db], {
      env: { CONTEXT_LEDGER_TENANT: "tenant-alpha-owner" },
    });
    expect(byEnv.code, byEnv.stderr).toBe(0);
    expect((await cli(db, "explain", "--thread", "shared")).code).toBe(0);
    const denied = await cli(db, "explain", "--thread", "shared", "--tenant", "tenant-alpha-owner");
    expect(denied.code).toBe(1);
  });

  it("a bad tenant or clearance is a usage error naming the flag", async () => {
    const empty = await cli(db, "explain", "--thread", "shared", "--tenant", "");
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain("--tenant");
    const clearance = await cli(db, "explain", "--thread", "shared", "--clearance", "secret");
    expect(clearance.code).toBe(1);
    expect(clearance.stderr).toMatch(/--clearance must be one of public, internal, confidential, restricted/);
  });
});

describe("CLI --clearance", () => {
  const db = sandbox.db();

  beforeAll(async () => {
    const stores = openSqliteStores({ path: db });
    const engine = createContextEngine({ stores, budget: { contextWindow: 100_000 } });
    await engine.append("t", [
      { role: "user", parts: [{ type: "text", text: "read the vault" }] },
      { role: "assistant", parts: [{ type: "tool_call", callId: "c0", name: "vault", args: "{}" }] },
      {
        role: "tool",
        parts: [{ type: "tool_result", callId: "c0", content: "SECRET-TOKEN-42" }],
        meta: { sensitivity: "restricted" },
      },
      { role: "user", parts: [{ type: "text", text: "and now?" }] },
    ]);
    await engine.idle();
    await stores.close();
  });

  it("content above the clearance prints as a stub; a higher clearance sees it", async () => {
    const low = await cli(db, "render", "--thread", "t", "--format", "anthropic");
    expect(low.code, low.stderr).toBe(0);
    expect(low.stdout).not.toContain("SECRET-TOKEN-42");
    expect(low.stdout).toContain("content withheld: restricted");
    const high = await cli(
      db,
      "render",
      "--thread",
      "t",
      "--format",
      "anthropic",
      "--clearance",
      "restricted",
    );
    expect(high.stdout).toContain("SECRET-TOKEN-42");
    const env = await runInProcess(["explain", "--thread", "t", "--json", "--db", db], {
      env: { CONTEXT_LEDGER_CLEARANCE: "restricted" },
    });
    expect(env.code, env.stderr).toBe(0);
    expect(jsonOf<{ rows: Array<{ preview: string }> }>(env).rows[2]!.preview).toContain("SECRET");
  });

  it("replay of a call prepared at a higher clearance is refused to a lower one", async () => {
    const prepared = await cli(
      db,
      "prepare",
      "--thread",
      "t",
      "--budget",
      "4000",
      "--clearance",
      "restricted",
      "--json",
    );
    expect(prepared.code, prepared.stderr).toBe(0);
    const { callId } = jsonOf<{ callId: string }>(prepared);
    const low = await cli(db, "replay", "--call", callId, "--verify");
    expect(low.code).toBe(1);
    expect(low.stderr).toMatch(/clearance restricted/);
    expect(low.stderr).not.toContain("SECRET-TOKEN-42");
    const high = await cli(db, "replay", "--call", callId, "--verify", "--clearance", "restricted");
    expect(high.code, high.stderr).toBe(0);
  });
});
