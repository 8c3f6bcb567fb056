// Refusals write nothing (DESIGN.md: "compaction is transactional"; bad input never loses or half-writes data), on
// every backend, at random points of random threads:
// - an append or plan commit on a thread whose ledger chain was broken behind the store's back (a row's chain
//   hash removed, its body perhaps edited) is refused with `ChainBrokenError` naming the thread;
// - another tenant's engine or stores are refused every operation on a thread (`ThreadAccessError`), and stores
//   bound to a tenant take no plan, model call or checkpoint for a thread nobody has appended to (`NotFoundError`);
// - `prepareTurn` refuses a turn whose pinned content is over the budget (`BudgetInfeasibleError`), or whose
//   tool-use cycle in progress carries signed reasoning above the reader's clearance (`ClearanceError`).
// Each time, a full snapshot of the stores (every table's rows on a database: log rows and chain hashes, plan
// versions, calls, checkpoints, artifacts, summaries) is the same before and after, and the thread then works for
// its rightful owner (once the rows are restored, with the owner's tenant, with room or clearance enough).
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import type { ContextEngine } from "../src/engine/context-engine.js";
import { BudgetInfeasibleError, ChainBrokenError, type LedgerError } from "../src/errors/ledger-error.js";
import type { MessageInput } from "../src/log/message.js";
import { MEMORY_ROWS } from "../src/stores/memory/memory-log-store.js";
import type { MemoryPlanRows } from "../src/stores/memory/memory-plan-store.js";
import type { Stores } from "../src/stores/stores.js";
import { arbitraryBatches, fcParams } from "./support/arbitrary-log.js";
import { type RawLogRow, rewriteLogRows } from "./support/raw-log-rows.js";
import { simpleCounter } from "./support/simple-counter.js";
import { STORE_BACKENDS, StoreOpener } from "./support/store-backends.js";
import { rejection } from "./support/store-cases-log.js";
import { rawSql } from "./support/store-cases-plan.js";
import { snapshotStores, trackMemoryStores } from "./support/store-snapshot.js";
import type { StoreTarget } from "./support/store-target.js";

const counter = simpleCounter();
const FORMATS = ["openai", "responses", "anthropic"] as const;

function engineOn(stores: Stores, options: Partial<Parameters<typeof createContextEngine>[0]> = {}) {
  return createContextEngine({ stores, counter, budget: 100_000, ...options } as Parameters<
    typeof createContextEngine
  >[0]) as ContextEngine;
}

/** Thread ids as a caller may choose them. */
const threadIdArb = fc.stringMatching(/^[a-z][a-z0-9._-]{0,11}$/);

/** One round of a random tool-using thread: a question, one or two calls (maybe with reasoning), results, an answer. */
interface Round {
  readonly question: string;
  readonly results: ReadonlyArray<number>;
  readonly reasoning: boolean;
  readonly pinned: boolean;
}

const roundArb: fc.Arbitrary<Round> = fc.record({
  question: fc.string({ minLength: 1, maxLength: 60 }),
  results: fc.array(fc.integer({ min: 10, max: 1_500 }), { minLength: 1, maxLength: 2 }),
  reasoning: fc.boolean(),
  pinned: fc.boolean(),
});

/** The messages of round `r` (ids and call ids are unique per round). */
function roundMessages(r: number, round: Round, pinnable = false): MessageInput[] {
  const calls = round.results.map((_, k) => `c${r}_${k}`);
  return [
    {
      id: `u${r}`,
      role: "user",
      parts: [{ type: "text", text: `${round.question} (${r})` }],
      ...(pinnable && round.pinned ? { meta: { pinned: true } } : {}),
    },
    {
      id: `a${r}`,
      role: "assistant",
      parts: [
        ...(round.reasoning
          ? [{ type: "reasoning" as const, text: `thinking about ${r}`, signature: `sig-${r}` }]
          : []),
        ...calls.map((callId) => ({
          type: "tool_call" as const,
          callId,
          name: "search",
          args: `{"r":${r}}`,
        })),
      ],
    },
    ...round.results.map(
      (size, k): MessageInput => ({
        id: `t${r}_${k}`,
        role: "tool",
        parts: [{ type: "tool_result", callId: calls[k]!, content: `result ${r}.${k} ${"r".repeat(size)}` }],
      }),
    ),
    { id: `x${r}`, role: "assistant", parts: [{ type: "text", text: `answer ${r}` }] },
  ];
}

/** Unchains a thread's log rows behind the store's back, and puts them back as they were. */
interface LogChainTamper {
  /** Removes the chain hash of every row from seq `from` on, and edits row `from`'s body when `forge`. */
  unchain(from: number, forge: boolean): Promise<void>;
  restore(): Promise<void>;
}

/** A message body with a note added to its meta (what a forger changes without touching the content hash). */
const forgedBody = (body: string) => body.replace(/}$/, ',"meta":{"note":"approved"}}');

async function logChainTamper(
  stores: Stores,
  target: StoreTarget,
  threadId: string,
): Promise<LogChainTamper> {
  if (target.kind === "memory") {
    let saved: RawLogRow[] = [];
    await rewriteLogRows(stores, target, threadId, (rows) => {
      saved = rows;
      return rows;
    });
    return {
      unchain: (from, forge) =>
        rewriteLogRows(stores, target, threadId, (rows) =>
          rows.map((r) =>
            r.seq < from
              ? r
              : { ...r, hash: null, body: forge && r.seq === from ? forgedBody(r.body) : r.body },
          ),
        ),
      restore: () => rewriteLogRows(stores, target, threadId, () => saved),
    };
  }
  // In place on a database, so columns the rewrite does not know (the search vector) stay as they are.
  const saved = await rawSql(
    target,
    "SELECT seq, body, chain_hash FROM {messages} WHERE thread_id = ? ORDER BY seq",
    threadId,
  );
  const update = (seq: unknown, body: unknown, hash: unknown) =>
    rawSql(
      target,
      "UPDATE {messages} SET body = ?, chain_hash = ? WHERE thread_id = ? AND seq = ?",
      body,
      hash,
      threadId,
      seq,
    );
  return {
    unchain: async (from, forge) => {
      for (const row of saved) {
        if (Number(row.seq) < from) continue;
        const body = forge && Number(row.seq) === from ? forgedBody(String(row.body)) : row.body;
        await update(row.seq, body, null);
      }
    },
    restore: async () => {
      for (const row of saved) await update(row.seq, row.body, row.chain_hash);
    },
  };
}

/** The stored plan versions' chain hashes, and a way to put them back. */
interface PlanChainTamper {
  /** Removes the chain hash of every version from `version` on. */
  unchain(version: number): Promise<void>;
  restore(): Promise<void>;
}

async function planChainTamper(
  stores: Stores,
  target: StoreTarget,
  threadId: string,
): Promise<PlanChainTamper> {
  if (target.kind === "memory") {
    const rows = (stores as unknown as Record<symbol, (t: string) => MemoryPlanRows>)[MEMORY_ROWS]!(
      threadId,
    ).rows;
    const saved = [...rows];
    return {
      unchain: async (version) => {
        rows.forEach((row, i) => {
          if (i + 1 >= version) rows[i] = { ...row, chainHash: "" };
        });
      },
      restore: async () => {
        rows.splice(0, Infinity, ...saved);
      },
    };
  }
  const saved = await rawSql(
    target,
    "SELECT version, chain_hash FROM {plans} WHERE thread_id = ? ORDER BY version",
    threadId,
  );
  return {
    unchain: async (version) => {
      await rawSql(
        target,
        "UPDATE {plans} SET chain_hash = NULL WHERE thread_id = ? AND version >= ?",
        threadId,
        version,
      );
    },
    restore: async () => {
      for (const row of saved) {
        await rawSql(
          target,
          "UPDATE {plans} SET chain_hash = ? WHERE thread_id = ? AND version = ?",
          row.chain_hash,
          threadId,
          row.version,
        );
      }
    },
  };
}

/** A setup turn may find the budget too small for its thread: that refusal, and no other, is let through. */
function expectInfeasible(error: unknown): void {
  if (!(error instanceof BudgetInfeasibleError)) throw error;
}

/** The typed error a refusal must be, naming the thread. */
function expectNamesThread(error: LedgerError, threadId: string): void {
  expect(error.where.threadId).toBe(threadId);
  expect(error.message).toContain(JSON.stringify(threadId));
}

for (const backend of STORE_BACKENDS) {
  const reason = backend.unavailable();
  describe.skipIf(reason !== undefined && process.env.CI !== "true")(
    `refusals write nothing [${backend.name}]`,
    () => {
      const opener = new StoreOpener(backend);
      beforeAll(() => backend.start(), 120_000);
      afterAll(async () => {
        await opener.closeAll();
        await backend.stop();
      });
      afterEach(() => opener.closeAll());
      const numRuns = { memory: 30, sqlite: 12, postgres: 5 }[backend.name];
      /** Runs so far: each run writes a thread of its own to the test's stores. */
      let runs = 0;

      /**
       * Fresh stores for a property (memory ones tracked, so their artifacts show in snapshots). Its
       * runs share them, each on a thread of its own, so a snapshot of a database also shows every earlier thread.
       */
      async function fresh() {
        const { stores, target } = await opener.fresh();
        return { stores: trackMemoryStores(stores, target), target };
      }

      it(`[${backend.name}] an append on a log chain broken behind the store's back is refused and writes nothing`, async () => {
        const { stores, target } = await fresh();
        await fc.assert(
          fc.asyncProperty(
            threadIdArb,
            arbitraryBatches({ maxOps: 8 }),
            fc.nat(),
            fc.boolean(),
            fc.boolean(),
            async (name, batches, cut, forge, freshWorker) => {
              const before = batches.slice(0, -1);
              const last = batches.at(-1)!;
              const length = before.reduce((n, b) => n + b.length, 0);
              fc.pre(length >= 2);
              const threadId = `${name}-${++runs}`;
              {
                const writer = engineOn(stores);
                for (const batch of before) {
                  await writer.append(threadId, batch);
                  await writer.prepareTurn(threadId, { format: "openai" });
                }
                await writer.idle();
                const untouched = await snapshotStores(stores, target, [threadId]);
                // Rows from `from` on lose their chain hash (the first one perhaps edited too); rows before keep it.
                const from = 1 + (cut % (length - 1));
                const tamper = await logChainTamper(stores, target, threadId);
                await tamper.unchain(from, forge);
                const tampered = await snapshotStores(stores, target, [threadId]);
                const engine = freshWorker ? engineOn(stores) : writer;
                const error = await rejection(engine.append(threadId, last), ChainBrokenError);
                await engine.idle();
                expectNamesThread(error, threadId);
                expect(error.chain).toBe("log");
                // SQL stores find the first row that lost its hash; memory ones look at the head only.
                if (target.kind === "memory") expect(error.position).toBe(length - 1);
                else expect(error.position).toBe(from);
                expect(await snapshotStores(stores, target, [threadId])).toEqual(tampered);
                // Restored, the rows are what they were, and the thread goes on.
                await tamper.restore();
                expect(await snapshotStores(stores, target, [threadId])).toEqual(untouched);
                await engine.append(threadId, last);
                const turn = await engine.prepareTurn(threadId, { format: "anthropic" });
                await engine.idle();
                expect((await engine.replay(turn.callId)).ok).toBe(true);
              }
            },
          ),
          fcParams(numRuns),
        );
      });

      it(`[${backend.name}] a plan commit on a plan chain broken behind the store's back is refused and writes nothing`, async () => {
        const { stores, target } = await fresh();
        await fc.assert(
          fc.asyncProperty(
            threadIdArb,
            fc.array(roundArb, { minLength: 4, maxLength: 7 }),
            fc.integer({ min: 300, max: 600 }),
            fc.nat(),
            fc.constantFrom(...FORMATS),
            fc.boolean(),
            async (name, rounds, budget, cut, format, freshWorker) => {
              const threadId = `${name}-${++runs}`;
              const writer = engineOn(stores);
              await writer.append(threadId, [
                { id: "sys", role: "system", parts: [{ type: "text", text: "Be brief." }] },
              ]);
              // Each round under a tight budget: old results are cleared and dropped, a plan version per turn.
              for (const [r, round] of rounds.slice(0, -1).entries()) {
                await writer.append(threadId, roundMessages(r, round));
                await writer.prepareTurn(threadId, { format, budget }).catch(expectInfeasible);
              }
              await writer.idle();
              const version = await stores.plans.latestVersion!(threadId);
              fc.pre(version >= 2);
              // Versions from `from` on lose their chain hash; `from - 1` keeps its (else it is a legacy thread).
              const from = 2 + (cut % (version - 1));
              const tamper = await planChainTamper(stores, target, threadId);
              await tamper.unchain(from);
              const r = rounds.length - 1;
              await writer.append(threadId, roundMessages(r, { ...rounds[r]!, results: [4_000] }));
              await writer.idle();
              const tampered = await snapshotStores(stores, target, [threadId]);
              const engine = freshWorker ? engineOn(stores) : writer;
              const turn = { format, budget };
              const error = await rejection(engine.prepareTurn(threadId, turn), ChainBrokenError);
              await engine.idle();
              expectNamesThread(error, threadId);
              expect(error.chain).toBe("plan");
              if (target.kind === "memory") expect(error.position).toBe(version);
              else expect(error.position).toBe(from);
              expect(await snapshotStores(stores, target, [threadId])).toEqual(tampered);
              await tamper.restore();
              const done = await engine.prepareTurn(threadId, turn);
              await engine.idle();
              expect(await stores.plans.latestVersion!(threadId)).toBe(version + 1);
              expect((await engine.replay(done.callId)).ok).toBe(true);
            },
          ),
          fcParams(numRuns),
        );
      });
    },
  );
}
