// The tamper-evident ledger (docs/decisions/0018) on every backend: each tampering issue 18 lists is found by
// replay and named; a ledger key catches a chain recomputed without it. Database rows are edited with SQL; memory
// rows through the store's raw rows (`MEMORY_ROWS`), the closest thing it has to a database behind its back.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import { ChainBrokenError, ValidationError } from "../src/errors/ledger-error.js";
import { logLink } from "../src/ledger/ledger-chain.js";
import {
  checkLogChain,
  checkPlanChain,
  type LogChainRow,
  WRONG_KEY_HINT,
} from "../src/ledger/verify-chain.js";
import { hashMessageContent } from "../src/log/canonical-json.js";
import type { Message } from "../src/log/message.js";
import { createPlan } from "../src/plan/compaction-plan.js";
import { MEMORY_ROWS } from "../src/stores/memory/memory-log-store.js";
import type { MemoryPlanRows } from "../src/stores/memory/memory-plan-store.js";
import type { Stores } from "../src/stores/stores.js";
import { rewriteLogRows } from "./support/raw-log-rows.js";
import { simpleCounter } from "./support/simple-counter.js";
import { STORE_BACKENDS, StoreOpener } from "./support/store-backends.js";
import { createAtSchema, rawSql } from "./support/store-cases-plan.js";
import { batch } from "./support/store-fixtures.js";
import type { StoreTarget } from "./support/store-target.js";
import { stepConversation } from "./support/tool-rounds.js";

const KEY = "k".repeat(16) + "0123456789abcdef0123";

const engineOn = (stores: Stores, ledgerKey?: string) =>
  createContextEngine({
    stores,
    counter: simpleCounter(),
    budget: { contextWindow: 100_000 },
    ...(ledgerKey === undefined ? {} : { ledgerKey }),
  });

/** Runs a thread turn by turn under a small budget (so plans drop and clear) and returns the last call id. */
async function recordThread(stores: Stores, ledgerKey?: string): Promise<string> {
  const engine = engineOn(stores, ledgerKey);
  const messages = stepConversation(8);
  let callId = "";
  for (let i = 0; i < messages.length; i += 4) {
    await engine.append("t", messages.slice(i, i + 4));
    callId = (await engine.prepareTurn("t", { format: "openai", budget: 1_200 })).callId;
    await engine.idle();
  }
  return callId;
}

/** A stored message rewritten with new text and a recomputed content hash (what a careful forger does). */
function forged(message: Message, text: string, seq = message.seq, id = message.id): Message {
  const parts =
    message.role === "tool"
      ? message.parts.map((p) => (p.type === "tool_result" ? { ...p, content: text } : p))
      : [{ type: "text" as const, text }];
  return { ...message, id, seq, parts, hash: hashMessageContent(message.role, parts) } as Message;
}

/** Edits a backend's raw rows: SQL on a database, the raw rows of a memory store. */
interface Tamperer {
  /** Rewrites message rows: `edit(rows)` gets every row (message, seq, tokens, chain hash) and returns the new ones. */
  rewriteLog(edit: (rows: RawMessage[]) => RawMessage[]): Promise<void>;
  /** Rewrites the body of every plan version with a string replacement (e.g. a reason's text). */
  rewritePlans(from: string, to: string): Promise<void>;
  /** Removes the chain hash of every plan version from `version` on. */
  unchainPlans(version: number): Promise<void>;
}

interface RawMessage {
  seq: number;
  message: Message;
  tokens: Record<string, number>;
  chainedTokens: string | null;
  chainHash: string | null;
}

/** `rewriteLogRows` with each row's message and counts parsed, and written back as JSON. */
function rewriteParsed(
  stores: Stores,
  target: StoreTarget,
  edit: (rows: RawMessage[]) => RawMessage[],
): Promise<void> {
  return rewriteLogRows(stores, target, "t", (rows) =>
    edit(
      rows.map((r) => ({
        seq: r.seq,
        message: JSON.parse(r.body) as Message,
        tokens: JSON.parse(r.tokens) as Record<string, number>,
        chainedTokens: r.chained,
        chainHash: r.hash,
      })),
    ).map((r) => ({
      seq: r.seq,
      id: r.message.id,
      body: JSON.stringify(r.message),
      tokens: JSON.stringify(r.tokens),
      chained: r.chainedTokens,
      hash: r.chainHash,
    })),
  );
}

function tamperer(stores: Stores, target: StoreTarget): Tamperer {
  if (target.kind === "memory") {
    const planRows = (stores as unknown as Record<symbol, (t: string) => MemoryPlanRows>)[MEMORY_ROWS]!("t");
    return {
      rewriteLog: (edit) => rewriteParsed(stores, target, edit),
      rewritePlans: async (from, to) => {
        planRows.plans.forEach((plan, i) => {
          const text = JSON.stringify(plan).replaceAll(from, to);
          planRows.plans[i] = createPlan(JSON.parse(text));
        });
      },
      unchainPlans: async (version) => {
        planRows.rows.forEach((row, i) => {
          if (i + 1 >= version) planRows.rows[i] = { ...row, chainHash: "" };
        });
      },
    };
  }
  return {
    rewriteLog: (edit) => rewriteParsed(stores, target, edit),
    rewritePlans: async (from, to) => {
      await rawSql(
        target,
        "UPDATE {plans} SET body = replace(body, ?, ?) WHERE thread_id = ?",
        from,
        to,
        "t",
      );
    },
    unchainPlans: async (version) => {
      await rawSql(
        target,
        "UPDATE {plans} SET chain_hash = NULL WHERE thread_id = ? AND version >= ?",
        "t",
        version,
      );
    },
  };
}

for (const backend of STORE_BACKENDS) {
  const reason = backend.unavailable();
  const suite = reason !== undefined && process.env.CI !== "true" ? describe.skip : describe;
  suite(`ledger chain [${backend.name}]`, () => {
    const opener = new StoreOpener(backend);
    beforeAll(() => backend.start());
    afterEach(() => opener.closeAll());
    afterAll(async () => {
      await opener.closeAll();
      await backend.stop();
    });

    async function recorded(ledgerKey?: string) {
      const { stores, target } = await opener.fresh();
      const callId = await recordThread(stores, ledgerKey);
      const before = await engineOn(stores, ledgerKey).replay(callId);
      expect(before).toMatchObject({ ok: true, problems: [] });
      expect(before.record?.logHead).toMatch(/^[0-9a-f]{64}$/);
      expect(before.ledger).toMatchObject({ checked: true, unchained: 0, findings: [] });
      expect(before.ledger?.logHead).toBe(before.record?.logHead);
      expect(before.ledger?.planHead).toBe(before.record?.planHead);
      return { stores, target, callId, before, tamper: tamperer(stores, target) };
    }

    it.runIf(backend.durable)(
      `[${backend.name}] rows written before the ledger migration are chained by the thread's next append`,
      async () => {
        const target = backend.newTarget();
        await createAtSchema(target, 5);
        for (const { message, tokens } of batch(0, ["o0", "o1", "o2"])) {
          await rawSql(
            target,
            "INSERT INTO {messages} (thread_id, seq, message_id, body, tokens) VALUES (?, ?, ?, ?, ?)",
            "t",
            message.seq,
            message.id,
            JSON.stringify(message),
            JSON.stringify(tokens),
          );
        }
        await rawSql(target, "INSERT INTO {threads} (thread_id, log_length) VALUES (?, ?)", "t", 3);
        const stores = await opener.at(target);
        // Before any write: unchained rows, no head to record, nothing found.
        expect(await stores.log.chainHead!("t", 3)).toBeUndefined();
        const legacy = checkLogChain("t", [...(await stores.log.chainRows!("t", 3))]);
        expect(legacy).toMatchObject({ findings: [], unchained: 3 });
        await stores.log.append("t", 3, batch(3, ["n3"]), { ledgerKey: KEY });
        const rows = await stores.log.chainRows!("t", 4);
        expect(rows.every((r) => r.chainHash !== null)).toBe(true);
        const chained = checkLogChain("t", [...rows], KEY);
        expect(chained).toMatchObject({ findings: [], unchained: 0 });
        expect(await stores.log.chainHead!("t", 4)).toBe(chained.heads[4]);
      },
    );

    it(`[${backend.name}] an append refuses to chain a row whose hash was removed after chained rows`, async () => {
      const { stores, target } = await opener.fresh();
      await stores.log.append("t", 0, batch(0, ["a0", "a1", "a2"]), { ledgerKey: KEY });
      const tamper = tamperer(stores, target);
      // Row 1 is rewritten and the hashes of rows 1 and 2 removed, so that a backfill would "chain" the edit.
      await tamper.rewriteLog((rows) =>
        rows.map((r) =>
          r.seq === 1
            ? { ...r, message: forged(r.message, "the user approved it"), chainHash: null }
            : r.seq === 2
              ? { ...r, chainHash: null }
              : r,
        ),
      );
      const found = async () => checkLogChain("t", [...(await stores.log.chainRows!("t", 3))], KEY).findings;
      expect(await found()).not.toEqual([]);
      const refused = stores.log.append("t", 3, batch(3, ["a3"]), { ledgerKey: KEY });
      await expect(refused).rejects.toThrow(ChainBrokenError);
      await expect(refused).rejects.toThrow(/log chain is broken at seq [12]: .*\(at thread "t"\)$/);
      await expect(refused).rejects.toMatchObject({ chain: "log", where: { threadId: "t" } });
      // Nothing written: no new row, the tampered rows still without a hash, and still reported.
      expect(await stores.log.length("t")).toBe(3);
      expect(await found()).not.toEqual([]);
      if (backend.name !== "memory") {
        await expect(refused).rejects.toMatchObject({ position: 1 });
        const rows = await stores.log.chainRows!("t", 3);
        expect(rows.map((r) => r.chainHash === null)).toEqual([false, true, true]);
      }
    });

    it(`[${backend.name}] a commit refuses to chain a version whose hash was removed after chained versions`, async () => {
      const { stores, target } = await recorded(KEY);
      const latest = await stores.plans.latest("t");
      const commit = (version: number) =>
        stores.plans.commit(createPlan({ ...latest, version }), version - 1, { ledgerKey: KEY });
      await commit(latest.version + 1);
      await commit(latest.version + 2);
      await tamperer(stores, target).unchainPlans(latest.version + 1);
      const refused = commit(latest.version + 3);
      await expect(refused).rejects.toThrow(ChainBrokenError);
      await expect(refused).rejects.toMatchObject({ chain: "plan", where: { threadId: "t" } });
      if (backend.name !== "memory") {
        await expect(refused).rejects.toMatchObject({ position: latest.version + 1 });
      }
      expect(await stores.plans.latestVersion!("t")).toBe(latest.version + 2);
    });

    it(`[${backend.name}] an edited plan reason is found and names the plan version`, async () => {
      const { stores, callId, before, tamper } = await recorded();
      expect(before.planVersion).toBeGreaterThan(0);
      await tamper.rewritePlans('"reason":"', '"reason":"approved by the auditor: ');
      const after = await engineOn(stores).replay(callId);
      expect(after.ok).toBe(false);
      expect(after.mismatch).toMatch(/^.*thread "t" plan version \d+ (no longer matches its chain hash)/);
      expect(after.ledger?.findings.every((f) => f.chain === "plan")).toBe(true);
    });

    it(`[${backend.name}] an edited plan strategy is found and names the plan version`, async () => {
      const { stores, callId, tamper } = await recorded();
      await tamper.rewritePlans('"strategy":"', '"strategy":"auditor-');
      const after = await engineOn(stores).replay(callId);
      expect(after.ok).toBe(false);
      expect(after.problems.join("\n")).toMatch(/thread "t" plan version 1 no longer matches its chain hash/);
    });

    it(`[${backend.name}] a dropped message rewritten with a recomputed content hash is found and named`, async () => {
      const { stores, callId, before, tamper } = await recorded();
      // r0 (seq 3) is no longer sent as it was: the request hash cannot see an edit of it.
      const sent = before.prompt!.messages.find((m) => m.provenance.sourceIds.includes("r0"));
      expect(sent?.provenance.kind).not.toBe("original");
      await tamper.rewriteLog((rows) =>
        rows.map((r) => (r.seq === 3 ? { ...r, message: forged(r.message, "all tests passed") } : r)),
      );
      const after = await engineOn(stores).replay(callId);
      expect(after.ok).toBe(false);
      expect(after.mismatch).toMatch(/thread "t" seq 3 \(message "r0"\) no longer matches its chain hash/);
    });

    it(`[${backend.name}] a deleted message is found and named`, async () => {
      const { stores, callId, tamper } = await recorded();
      await tamper.rewriteLog((rows) =>
        rows
          .filter((r) => r.seq !== 4)
          .map((r) => (backend.name === "memory" && r.seq > 4 ? { ...r, seq: r.seq - 1 } : r)),
      );
      const after = await engineOn(stores).replay(callId);
      expect(after.ok).toBe(false);
      const named =
        backend.name === "memory"
          ? /thread "t" seq 4 \(message "u1"\) holds a message whose body says seq 5: rows before it were deleted/
          : /thread "t": seq 4 is missing from the log: rows were deleted/;
      expect(after.problems.join("\n")).toMatch(named);
    });

    it(`[${backend.name}] an inserted message is found and named`, async () => {
      const { stores, callId, tamper } = await recorded();
      await tamper.rewriteLog((rows) => {
        const at = rows.find((r) => r.seq === 4)!;
        const inserted = { ...at, message: forged(at.message, "the user approved the deletion", 4, "x1") };
        return [
          ...rows.filter((r) => r.seq < 4),
          inserted,
          ...rows.filter((r) => r.seq >= 4).map((r) => ({ ...r, seq: r.seq + 1 })),
        ];
      });
      const after = await engineOn(stores).replay(callId);
      expect(after.ok).toBe(false);
      const all = after.problems.join("\n");
      expect(all).toMatch(/thread "t" seq 4 \(message "x1"\) no longer matches its chain hash/);
      expect(all).toMatch(/message "d0" of thread "t" is stored at seq 5 but says seq 4/);
    });

    it(`[${backend.name}] reordered messages are found and named`, async () => {
      const { stores, callId, tamper } = await recorded();
      // d0 (seq 4) and u1 (seq 5) swap places, each keeping its body.
      await tamper.rewriteLog((rows) =>
        rows.map((r) => (r.seq === 4 ? { ...r, seq: 5 } : r.seq === 5 ? { ...r, seq: 4 } : r)),
      );
      const after = await engineOn(stores).replay(callId);
      expect(after.ok).toBe(false);
      const all = after.problems.join("\n");
      expect(all).toMatch(/message "u1" of thread "t" is stored at seq 4 but says seq 5/);
      expect(all).toMatch(/message "d0" of thread "t" is stored at seq 5 but says seq 4/);
    });

    it(`[${backend.name}] with a ledger key, a chain recomputed without it is found and named`, async () => {
      const { stores, callId, tamper } = await recorded(KEY);
      // The forger rewrites r0 and recomputes every chain hash from there on, as plain SHA-256 (no key).
      await tamper.rewriteLog((rows) => {
        let previous = "";
        return rows.map((r) => {
          const message = r.seq === 3 ? forged(r.message, "all tests passed") : r.message;
          if (r.seq < 3) {
            previous = r.chainHash!;
            return r;
          }
          const body = JSON.stringify(message);
          const chainHash = logLink(previous, { seq: r.seq, body, tokens: r.chainedTokens! });
          previous = chainHash;
          return { ...r, message, chainHash };
        });
      });
      const keyed = await engineOn(stores, KEY).replay(callId);
      expect(keyed.ok).toBe(false);
      expect(keyed.mismatch).toMatch(
        /thread "t" seq 3 \(message "r0"\) has a chain hash computed without the ledger key/,
      );
      // An auditor with another key cannot verify the chain at all.
      const other = await engineOn(stores, KEY.replace("k", "q")).replay(callId);
      expect(other.ok).toBe(false);
    });
  });
}

describe("checkLogChain and checkPlanChain", () => {
  async function logRows(key?: string): Promise<LogChainRow[]> {
    const { createMemoryLogStore } = await import("../src/stores/memory/memory-log-store.js");
    const log = createMemoryLogStore();
    await log.append("t", 0, batch(0, ["a0", "a1", "a2"]), key === undefined ? {} : { ledgerKey: key });
    return [...(await log.chainRows!("t", 3))];
  }

  it("names an edited log row whose body no longer holds a numeric seq", async () => {
    const rows = await logRows(KEY);
    const body = JSON.parse(rows[1]!.body) as Record<string, unknown>;
    delete body.seq;
    rows[1] = { ...rows[1]!, body: JSON.stringify({ ...body, note: "approved" }) };
    const { findings } = checkLogChain("t", rows, KEY);
    expect(findings.map((f) => f.position)).toEqual([1]);
    expect(findings[0]!.text).toMatch(/thread "t" seq 1 \(message "a1"\) no longer matches its chain hash/);
  });

  it("says the key is the likely cause when no row verifies from the first one on", async () => {
    const keyed = await logRows(KEY);
    const without = checkLogChain("t", keyed, undefined).findings;
    expect(without).toHaveLength(3);
    expect(without[0]!.text).toMatch(/^thread "t" seq 0 \(message "a0"\) no longer matches its chain hash/);
    expect(without[0]!.text).toContain(WRONG_KEY_HINT);
    expect(without.slice(1).some((f) => f.text.includes(WRONG_KEY_HINT))).toBe(false);
    // A keyless chain checked with a key: the first row already says it was computed without the key.
    const withKey = checkLogChain("t", await logRows(), KEY).findings;
    expect(withKey[0]!.text).toMatch(
      /seq 0 .*has a chain hash computed without the ledger key.*different ledger key/,
    );
    // An edit of the first row alone is an edit: the rows after it verify, so no hint.
    const edited = [...keyed];
    edited[0] = { ...edited[0]!, body: edited[0]!.body.replace("message a0", "message b0") };
    const one = checkLogChain("t", edited, KEY).findings;
    expect(one).toHaveLength(1);
    expect(one[0]!.text).not.toContain(WRONG_KEY_HINT);
  });

  it("keeps a plan chain's heads at their versions across a deleted version", async () => {
    const { createMemoryStores } = await import("../src/stores/memory/memory-stores.js");
    const stores = createMemoryStores();
    await stores.log.append("t", 0, batch(0, ["a0", "a1", "a2"]));
    for (let v = 1; v <= 4; v++) {
      await stores.plans.commit(createPlan({ threadId: "t", version: v, basedOnSeq: 3, actions: [] }), v - 1);
    }
    const rows = [...(await stores.plans.chainRows!("t", 4))];
    const whole = checkPlanChain("t", rows);
    const gap = checkPlanChain("t", [rows[0]!, rows[1]!, rows[3]!]);
    expect(gap.findings[0]!.text).toMatch(/plan version 3 is missing/);
    expect(gap.heads).toHaveLength(whole.heads.length);
    expect(gap.heads.slice(0, 3)).toEqual(whole.heads.slice(0, 3));
  });
});

describe("ledger key option", () => {
  it("is validated like the other engine options", async () => {
    const { createMemoryStores } = await import("../src/stores/memory/memory-stores.js");
    const make = (ledgerKey: unknown) =>
      createContextEngine({
        stores: createMemoryStores(),
        budget: 1_000,
        ledgerKey: ledgerKey as string,
      });
    expect(() => make("short")).toThrow(ValidationError);
    expect(() => make("short")).toThrow(/ledgerKey/);
    expect(() => make(42)).toThrow(ValidationError);
    expect(() => make(KEY)).not.toThrow();
  });
});

describe("replay --verify --json with a ledger key in CONTEXT_LEDGER_LEDGER_KEY", () => {
  it("verifies, then names the plan version whose reason was edited; keys ok, requestHash, recordedHash, reason stay", async () => {
    const { mkdtempSync, rmSync, writeFileSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const Database = (await import("better-sqlite3")).default;
    const { runInProcess } = await import("./support/cli-run.js");
    const dir = mkdtempSync(join(tmpdir(), "context-ledger-chain-cli-"));
    try {
      const db = join(dir, "ledger.db");
      const file = join(dir, "run.jsonl");
      const lines = Array.from({ length: 40 }, (_, i) =>
        JSON.stringify({
          role: i % 2 === 0 ? "user" : "assistant",
          content: `turn ${i} ${"words ".repeat(60)}`,
        }),
      );
      writeFileSync(file, `${lines.join("\n")}\n`);
      const env = { CONTEXT_LEDGER_LEDGER_KEY: KEY };
      const cli = (...argv: string[]) => runInProcess(["--db", db, ...argv], { env });
      expect((await cli("ingest", file, "--thread", "t")).code).toBe(0);
      const prepared = await cli("prepare", "--thread", "t", "--budget", "1500");
      expect(prepared.code, prepared.stderr).toBe(0);
      const { callId } = JSON.parse(prepared.stdout) as { callId: string };
      const good = await cli("replay", "--call", callId, "--verify", "--json");
      expect(good.code, good.stderr).toBe(0);
      const verdict = JSON.parse(good.stdout) as Record<string, unknown>;
      expect(verdict).toMatchObject({ ok: true, reason: null, ledger: { keyed: true, unchained: 0 } });
      expect(Object.keys(verdict)).toEqual(
        expect.arrayContaining(["ok", "requestHash", "recordedHash", "reason"]),
      );

      // Without the key the keyed chain does not verify, and the reason says the key is the likely cause.
      const keyless = await runInProcess(["--db", db, "replay", "--call", callId, "--verify", "--json"]);
      expect(keyless.code).toBe(1);
      expect((JSON.parse(keyless.stdout) as { reason: string }).reason).toContain(WRONG_KEY_HINT);

      const sqlite = new Database(db);
      const changed = sqlite
        .prepare(
          'UPDATE plans SET body = replace(body, \'"reason":"\', \'"reason":"approved by the auditor: \')',
        )
        .run().changes;
      sqlite.close();
      expect(changed).toBeGreaterThan(0);
      const bad = await cli("replay", "--call", callId, "--verify", "--json");
      expect(bad.code).toBe(1);
      const tampered = JSON.parse(bad.stdout) as Record<string, unknown>;
      expect(tampered).toMatchObject({
        ok: false,
        requestHash: expect.stringMatching(/^[0-9a-f]{64}$/),
        recordedHash: expect.stringMatching(/^[0-9a-f]{64}$/),
        reason: expect.stringMatching(/thread "t" plan version 1 no longer matches its chain hash/),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
