// Refusals write nothing (DESIGN.md: "compaction is transactional"; bad input never loses or half-writes data), on
// every backend, at random points of random threads:
// - an append or plan commit on a thread whose ledger chain was broken behind the store's back (a row's chain
//   hash removed, its body perhaps edited) is refused with `ChainBrokenError` naming the thread;
// - another tenant's engine or stores are refused every operation on a thread (`ThreadAccessError`), and stores
//   bound to a tenant take no plan, model call or checkpoint for a thread nobody has appended to (`NotFoundError`);
// - `prepareTurn` refuses a turn whose pinned content is over the budget (`BudgetInfeasibleError`), or whose
//   tool-use cycle in progress carries signed reasoning above the reader's clearance (`ClearanceError`).
// Each time, a full snapshot of the stores (every table's rows on a database: log rows and chain hashes, plan
// versions, calls, checkpoints, artifacts; the summary cache aside, see test/support/store-snapshot.ts) is the same
// before and after, and the thread then works for its rightful owner (once the rows are restored, with the owner's
// tenant, with room or clearance enough). Each property's runs share one set of stores, a thread each.
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import type { ContextEngine } from "../src/engine/context-engine.js";
import {
  BudgetInfeasibleError,
  ChainBrokenError,
  ClearanceError,
  type LedgerError,
  NotFoundError,
  ThreadAccessError,
} from "../src/errors/ledger-error.js";
import type { ContextEngineOptions } from "../src/index.js";
import type { MessageInput, Sensitivity } from "../src/log/message.js";
import { emptyPlan } from "../src/plan/compaction-plan.js";
import type { AboveClearancePolicy } from "../src/render/withhold-content.js";
import { MEMORY_ROWS } from "../src/stores/memory/memory-log-store.js";
import type { MemoryPlanRows } from "../src/stores/memory/memory-plan-store.js";
import type { ModelCallRecord } from "../src/stores/model-call-store.js";
import type { Stores } from "../src/stores/stores.js";
import { arbitraryBatches, fcParams } from "./support/arbitrary-log.js";
import { type RawLogRow, rewriteLogRows } from "./support/raw-log-rows.js";
import { simpleCounter } from "./support/simple-counter.js";
import { STORE_BACKENDS, StoreOpener } from "./support/store-backends.js";
import { rejection } from "./support/store-cases-log.js";
import { rawSql } from "./support/store-cases-plan.js";
import { batch, dropPlan } from "./support/store-fixtures.js";
import { snapshotStores, trackMemoryStores } from "./support/store-snapshot.js";
import type { StoreTarget } from "./support/store-target.js";

const counter = simpleCounter();
const FORMATS = ["openai", "responses", "anthropic"] as const;

function engineOn(stores: Stores, options: Partial<ContextEngineOptions> = {}): ContextEngine {
  return createContextEngine({ stores, counter, budget: 100_000, ...options });
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

/** The tenant that owns the threads of the tenancy properties (a name another tenant must never be told). */
const OWNER = "tenant-alpha-owner";

/** Appends the rounds turn by turn under `budget` (a too-small budget refuses a turn, which is let through). */
async function writeRounds(
  engine: ContextEngine,
  threadId: string,
  rounds: ReadonlyArray<Round>,
  budget: number,
): Promise<string[]> {
  const callIds: string[] = [];
  for (const [r, round] of rounds.entries()) {
    await engine.append(threadId, roundMessages(r, round, true));
    const turn = await engine.prepareTurn(threadId, { format: "openai", budget }).catch(expectInfeasible);
    if (turn !== undefined) callIds.push(turn.callId);
  }
  await engine.idle();
  return callIds;
}

/** What an intruder knows of a thread: its id, a call id, the owner's plan version and log length. */
interface Seen {
  readonly threadId: string;
  readonly callId: string;
  readonly version: number;
  readonly length: number;
}

/** A model-call record as a store takes it. */
const callRecord = (
  callId: string,
  threadId: string,
  logSeq: number,
  planVersion: number,
): ModelCallRecord => ({
  callId,
  threadId,
  logSeq,
  planVersion,
  format: "openai",
  requestHash: "ab".repeat(32),
  tokenEstimate: 10,
  summaries: [],
  evictions: [],
  createdAt: "2025-01-01T00:00:00.000Z",
});

/** Every way another tenant may reach a thread: through its engine, or through its bound stores. */
const INTRUSION = {
  append: (e, _s, t) =>
    e.append(t.threadId, [{ role: "user", parts: [{ type: "text", text: "let me in" }] }]),
  prepareTurn: (e, _s, t) => e.prepareTurn(t.threadId, { format: "anthropic" }),
  compact: (e, _s, t) => e.compact(t.threadId, { budget: 200 }),
  render: (e, _s, t) => e.render(t.threadId, { format: "responses" }),
  explain: (e, _s, t) => e.explain(t.threadId),
  diff: (e, _s, t) => e.diff(t.threadId, 0, t.version),
  replay: (e, _s, t) => e.replay(t.callId),
  recordUsage: (e, _s, t) => e.recordUsage(t.callId, { inputTokens: 99 }),
  recall: (e, _s, t) => e.recall(t.threadId, { query: "result" }),
  logAppend: (_e, s, t) => s.log.append(t.threadId, t.length, batch(t.length, ["intruder"])),
  planCommit: (_e, s, t) =>
    s.plans.commit(dropPlan(t.threadId, t.version + 1, t.length, ["u0"], "intruder"), t.version),
  callRecord: (_e, s, t) =>
    s.calls.record(callRecord(`intruder-${t.threadId}`, t.threadId, t.length, t.version)),
  setUsage: (_e, s, t) => s.calls.setUsage(t.callId, { inputTokens: 99 }),
  setTokenCounts: (_e, s, t) => s.log.setTokenCounts(t.threadId, [{ seq: 0, tokens: { intruder: 1 } }]),
  logRead: (_e, s, t) => s.log.read(t.threadId),
  logSearch: (_e, s, t) => s.log.search!(t.threadId, "result"),
  planLatest: (_e, s, t) => s.plans.latest(t.threadId),
  callsList: (_e, s, t) => s.calls.list(t.threadId),
  checkpointLatest: (_e, s, t) => s.checkpoints!.latest(t.threadId, Math.max(1, t.version), t.length),
  checkpoint: (_e, s, t) =>
    s.checkpoints!.put({
      threadId: t.threadId,
      planVersion: Math.max(1, t.version),
      logLength: t.length,
      format: "f/1",
      body: "{}",
    }),
} satisfies Record<string, (engine: ContextEngine, stores: Stores, seen: Seen) => Promise<unknown>>;
const INTRUSIONS = Object.keys(INTRUSION) as Array<keyof typeof INTRUSION>;

/** The writes bound stores refuse for a thread nobody has appended to. */
const EARLY_WRITE = {
  planCommit: (s, threadId, version) => s.plans.commit(dropPlan(threadId, 1, version, ["u0"], "early"), 0),
  emptyPlan: (s, threadId) => s.plans.commit({ ...emptyPlan(threadId), version: 1 }, 0),
  callRecord: (s, threadId, version) =>
    s.calls.record(callRecord(`early-${threadId}-${version}`, threadId, version, 0)),
  checkpoint: (s, threadId, version) =>
    s.checkpoints!.put({ threadId, planVersion: version, logLength: version, format: "f/1", body: "{}" }),
} satisfies Record<string, (stores: Stores, threadId: string, version: number) => Promise<unknown>>;
const EARLY_WRITES = Object.keys(EARLY_WRITE) as Array<keyof typeof EARLY_WRITE>;

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

      it(`[${backend.name}] another tenant is refused every operation on a thread, writes nothing, and the owner goes on`, async () => {
        const { stores, target } = await fresh();
        await fc.assert(
          fc.asyncProperty(
            threadIdArb,
            fc.array(roundArb, { minLength: 1, maxLength: 4 }),
            fc.integer({ min: 300, max: 3_000 }),
            fc.constantFrom("tenant-beta", "default", "Tenant Alpha Owner"),
            fc.array(fc.constantFrom(...INTRUSIONS), { minLength: 1, maxLength: 4 }),
            async (name, rounds, budget, intruder, intrusions) => {
              const threadId = `${name}-${++runs}`;
              const owner = engineOn(stores, { tenant: OWNER, clearance: "restricted" });
              const callIds = await writeRounds(owner, threadId, rounds, budget);
              const ownerStores = stores.forTenant!(OWNER);
              const readers = { [threadId]: ownerStores };
              const before = await snapshotStores(stores, target, [threadId], readers);
              const other = stores.forTenant!(intruder);
              const engine = engineOn(stores, { tenant: intruder, clearance: "restricted" });
              const seen = {
                threadId,
                callId: callIds.at(-1) ?? "no-call",
                version: await ownerStores.plans.latestVersion!(threadId),
                length: await ownerStores.log.length(threadId),
              };
              for (const intrusion of intrusions) {
                const error = await rejection(INTRUSION[intrusion](engine, other, seen), ThreadAccessError);
                expectNamesThread(error, threadId);
                expect(error.message).not.toContain(OWNER);
                await engine.idle();
              }
              expect(await snapshotStores(stores, target, [threadId], readers)).toEqual(before);
              // The owner's thread is as it was: its calls replay, and it takes the next round.
              for (const callId of callIds) expect((await owner.replay(callId)).ok).toBe(true);
              await owner.append(threadId, roundMessages(rounds.length, rounds[0]!));
              const turn = await owner.prepareTurn(threadId, { format: "anthropic" });
              await owner.idle();
              expect((await owner.replay(turn.callId)).ok).toBe(true);
            },
          ),
          fcParams(numRuns),
        );
      });

      it(`[${backend.name}] bound stores take no plan, call or checkpoint for an unclaimed thread, and its first appender owns it`, async () => {
        const { stores, target } = await fresh();
        await fc.assert(
          fc.asyncProperty(
            threadIdArb,
            fc.array(roundArb, { minLength: 1, maxLength: 3 }),
            fc.constantFrom(OWNER, "tenant-beta", "default"),
            fc.constantFrom(OWNER, "tenant-beta", "default"),
            fc.array(fc.constantFrom(...EARLY_WRITES), { minLength: 1, maxLength: 3 }),
            fc.nat({ max: 3 }),
            async (name, rounds, early, first, writes, version) => {
              // Another thread of the owner's sits beside it, so a write landing in the wrong thread shows too.
              const owned = `${name}-${++runs}`;
              const threadId = `${name}-${++runs}`;
              const owner = engineOn(stores, { tenant: OWNER });
              await writeRounds(owner, owned, rounds, 100_000);
              const readers = { [owned]: stores.forTenant!(OWNER) };
              const threads = [owned, threadId];
              const before = await snapshotStores(stores, target, threads, readers);
              const bound = stores.forTenant!(early);
              for (const write of writes) {
                const error = await rejection(
                  EARLY_WRITE[write](bound, threadId, version + 1),
                  NotFoundError,
                );
                expectNamesThread(error, threadId);
                expect(error.message).toContain("no messages yet");
              }
              expect(await snapshotStores(stores, target, threads, readers)).toEqual(before);
              // The first append claims it; it starts with no plan, call or checkpoint, and works for its owner.
              const engine = engineOn(stores, { tenant: first });
              await engine.append(threadId, roundMessages(0, rounds[0]!));
              const mine = stores.forTenant!(first);
              expect(await mine.plans.latestVersion!(threadId)).toBe(0);
              expect(await mine.calls.list(threadId)).toEqual([]);
              expect(await mine.checkpoints!.latest(threadId, 1, 100)).toBeUndefined();
              const turn = await engine.prepareTurn(threadId, { format: "openai" });
              await engine.idle();
              expect((await engine.replay(turn.callId)).ok).toBe(true);
              if (first !== early) {
                await rejection(EARLY_WRITE[writes[0]!](bound, threadId, 1), ThreadAccessError);
              }
            },
          ),
          fcParams(numRuns),
        );
      });

      it(`[${backend.name}] a turn whose pinned content is over the budget is refused and writes nothing`, async () => {
        const { stores, target } = await fresh();
        await fc.assert(
          fc.asyncProperty(
            threadIdArb,
            fc.array(roundArb, { minLength: 1, maxLength: 4 }),
            fc.integer({ min: 12, max: 16 }),
            fc.integer({ min: 40, max: 400 }),
            fc.double({ min: 0.5, max: 0.85, noNaN: true }),
            fc.array(fc.record({ format: fc.constantFrom(...FORMATS), tight: fc.boolean() }), {
              maxLength: 3,
            }),
            fc.constantFrom(...FORMATS),
            async (name, rounds, pins, size, share, warm, format) => {
              const threadId = `${name}-${++runs}`;
              const engine = engineOn(stores);
              // Pinned notes between the rounds: no compaction may touch them, and each is under a quarter of
              // the budget, so none is cut to an excerpt.
              const notes = Array.from(
                { length: pins },
                (_, i): MessageInput => ({
                  id: `pin${i}`,
                  role: "assistant",
                  parts: [{ type: "text", text: `note ${i} ${"n".repeat(size)}`.slice(0, size) }],
                  meta: { pinned: true },
                }),
              );
              const pinnedTokens = notes.reduce((n, m) => n + counter.countMessage(m as never), 0);
              for (const [r, round] of rounds.entries()) {
                const part = notes.slice((r * pins) / rounds.length, ((r + 1) * pins) / rounds.length);
                await engine.append(threadId, [...roundMessages(r, round), ...part]);
              }
              // Earlier turns, some compacting the rounds (so plan versions are there to be left alone).
              const callIds: string[] = [];
              for (const turn of warm) {
                const budget = turn.tight ? pinnedTokens * 2 + 400 : 100_000;
                callIds.push((await engine.prepareTurn(threadId, { format: turn.format, budget })).callId);
              }
              await engine.idle();
              const before = await snapshotStores(stores, target, [threadId]);
              const budget = Math.floor(pinnedTokens * share);
              const error = await rejection(
                engine.prepareTurn(threadId, { format, budget }),
                BudgetInfeasibleError,
              );
              await engine.idle();
              expectNamesThread(error, threadId);
              expect(error.required).toBeGreaterThan(error.available);
              expect(error.available).toBeLessThanOrEqual(budget);
              expect(await snapshotStores(stores, target, [threadId])).toEqual(before);
              // With room for the pinned notes the same thread takes its turn, and earlier calls still replay.
              const turn = await engine.prepareTurn(threadId, { format, budget: pinnedTokens * 4 + 2_000 });
              await engine.idle();
              for (const callId of [...callIds, turn.callId])
                expect((await engine.replay(callId)).ok).toBe(true);
            },
          ),
          fcParams(numRuns),
        );
      });

      it(`[${backend.name}] a turn whose cycle in progress has signed reasoning above the clearance is refused and writes nothing`, async () => {
        const { stores, target } = await fresh();
        await fc.assert(
          fc.asyncProperty(
            threadIdArb,
            fc.array(roundArb, { minLength: 0, maxLength: 3 }),
            fc.constantFrom(
              { secret: "confidential", clearance: "public" },
              { secret: "confidential", clearance: "internal" },
              { secret: "restricted", clearance: "internal" },
              { secret: "restricted", clearance: "confidential" },
            ) as fc.Arbitrary<{ secret: Sensitivity; clearance: Sensitivity }>,
            fc.integer({ min: 1, max: 3 }),
            fc.nat({ max: 3 }),
            fc.constantFrom("placeholder", "refuse") as fc.Arbitrary<AboveClearancePolicy>,
            fc.constantFrom(...FORMATS),
            fc.boolean(),
            async (name, rounds, classes, calls, answered, aboveClearance, format, readEarlier) => {
              const threadId = `${name}-${++runs}`;
              const writer = engineOn(stores, { clearance: "restricted" });
              const reader = engineOn(stores, { clearance: classes.clearance, aboveClearance });
              await writer.append(threadId, [
                { id: "task", role: "user", parts: [{ type: "text", text: "open the vault" }] },
              ]);
              const r = rounds.length;
              for (const [k, round] of rounds.entries()) {
                await writer.append(threadId, roundMessages(k, round));
              }
              // A user message closes the rounds' cycles (their signed thinking is then stubbed for a lower reader).
              await writer.append(threadId, [
                { id: "next", role: "user", parts: [{ type: "text", text: "go on" }] },
              ]);
              const callIds = [(await writer.prepareTurn(threadId, { format })).callId];
              // The reader's own earlier turn, where it may read what is there (under "refuse", a public reader
              // may read none of it: the task is internal).
              if (readEarlier && (aboveClearance === "placeholder" || classes.clearance !== "public")) {
                callIds.push((await reader.prepareTurn(threadId, { format })).callId);
              }
              // The cycle in progress: signed thinking above the reader's clearance with its calls, some answered.
              const ids = Array.from({ length: calls }, (_, k) => `v${k}`);
              await writer.append(threadId, [
                { id: "ask", role: "user", parts: [{ type: "text", text: "now open it" }] },
                {
                  id: "secret",
                  role: "assistant",
                  parts: [
                    { type: "reasoning", text: "the vault code is 4411", signature: "sig-4411" },
                    ...ids.map((callId) => ({
                      type: "tool_call" as const,
                      callId,
                      name: "vault",
                      args: "{}",
                    })),
                  ],
                  meta: { sensitivity: classes.secret },
                },
                ...ids.slice(0, answered).map(
                  (callId): MessageInput => ({
                    id: `res-${callId}`,
                    role: "tool",
                    parts: [{ type: "tool_result", callId, content: `opened ${callId}` }],
                  }),
                ),
              ]);
              await writer.idle();
              await reader.idle();
              const before = await snapshotStores(stores, target, [threadId]);
              const error = await rejection(reader.prepareTurn(threadId, { format }), ClearanceError);
              await reader.idle();
              expectNamesThread(error, threadId);
              if (aboveClearance === "placeholder") {
                // Everything else above the clearance could be stubbed: the signed block of the cycle could not.
                expect(error.where.messageId).toBe("secret");
                expect(error.message).toMatch(/tool-use cycle in progress/);
              } else {
                expect(error.where.messageId).toBeDefined();
              }
              expect(await snapshotStores(stores, target, [threadId])).toEqual(before);
              // A reader cleared for it takes the turn; once the cycle is over, the lower reader gets it withheld.
              const turn = await writer.prepareTurn(threadId, { format });
              await writer.idle();
              for (const callId of [...callIds, turn.callId])
                expect((await writer.replay(callId)).ok).toBe(true);
              if (aboveClearance === "refuse") return;
              await writer.append(threadId, [
                ...ids.slice(answered).map(
                  (callId): MessageInput => ({
                    id: `res-${callId}`,
                    role: "tool",
                    parts: [{ type: "tool_result", callId, content: `opened ${callId}` }],
                  }),
                ),
                { id: `after${r}`, role: "user", parts: [{ type: "text", text: "thanks" }] },
              ]);
              const withheld = await reader.prepareTurn(threadId, { format });
              await reader.idle();
              expect(JSON.stringify(withheld.request)).not.toContain("4411");
            },
          ),
          fcParams(numRuns),
        );
      });
    },
  );
}
