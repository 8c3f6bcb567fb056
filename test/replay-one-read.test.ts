// A replay reads each log row once (`LogStore.readWithChain`, issue 17), on every backend, and finds every kind of
// tampering exactly as the two reads (`read`, then `chainRows`) of a store without it do: the same result, the same
// findings, the same words. Database rows are edited with SQL, memory rows through the store's raw rows.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import type { ReplayResult } from "../src/engine/replay.js";
import { ValidationError } from "../src/errors/ledger-error.js";
import { hashMessageContent } from "../src/log/canonical-json.js";
import type { Message } from "../src/log/message.js";
import { createPlan } from "../src/plan/compaction-plan.js";
import type { LogStore } from "../src/stores/log-store.js";
import { MEMORY_ROWS } from "../src/stores/memory/memory-log-store.js";
import type { MemoryPlanRows } from "../src/stores/memory/memory-plan-store.js";
import type { Stores } from "../src/stores/stores.js";
import { type RawLogRow, rewriteLogRows } from "./support/raw-log-rows.js";
import { simpleCounter } from "./support/simple-counter.js";
import { STORE_BACKENDS, StoreOpener } from "./support/store-backends.js";
import { rawSql } from "./support/store-cases-plan.js";
import type { StoreTarget } from "./support/store-target.js";
import { stepConversation } from "./support/tool-rounds.js";

const KEY = "a-ledger-key-for-the-one-read-test-0123";

/** A message row as a database holds it: every column as text. */
type RawRow = RawLogRow;

/** The methods of a log store that read message rows. */
const ROW_READS = new Set(["read", "readRanges", "chainRows", "readWithChain"]);

/** The log store with its row reads counted in `calls`; `oneRead: false` leaves `readWithChain` out. */
function observedLog(log: LogStore, calls: Record<string, number>, oneRead = true): LogStore {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(log)) {
    if (name === "readWithChain" && !oneRead) continue;
    out[name] =
      typeof value === "function"
        ? (...args: unknown[]) => {
            if (ROW_READS.has(name)) calls[name] = (calls[name] ?? 0) + 1;
            return (value as (...a: unknown[]) => unknown).apply(log, args);
          }
        : value;
  }
  return out as unknown as LogStore;
}

const engineOn = (stores: Stores, log: LogStore, ledgerKey?: string) =>
  createContextEngine({
    stores: { ...stores, log },
    counter: simpleCounter(),
    budget: { contextWindow: 100_000 },
    ...(ledgerKey === undefined ? {} : { ledgerKey }),
  });

/** Runs a thread turn by turn under a small budget (so plans drop and clear); returns every call id. */
async function recordThread(stores: Stores, ledgerKey?: string): Promise<string[]> {
  const engine = engineOn(stores, stores.log, ledgerKey);
  const messages = stepConversation(8);
  const calls: string[] = [];
  for (let i = 0; i < messages.length; i += 4) {
    await engine.append("t", messages.slice(i, i + 4));
    calls.push((await engine.prepareTurn("t", { format: "openai", budget: 1_200 })).callId);
    await engine.idle();
  }
  return calls;
}

/** A body whose text (or tool result) says something else; `rehash` recomputes the content hash too. */
function rewritten(body: string, text: string, rehash: boolean): string {
  const message = JSON.parse(body) as Message;
  const parts =
    message.role === "tool"
      ? message.parts.map((p) => (p.type === "tool_result" ? { ...p, content: text } : p))
      : [{ type: "text" as const, text }];
  const hash = rehash ? hashMessageContent(message.role, parts) : message.hash;
  return JSON.stringify({ ...message, parts, hash });
}

/** Renumbers a body's `seq` (what an inserted forged row says). */
const withSeq = (body: string, seq: number, id: string): string =>
  JSON.stringify({ ...(JSON.parse(body) as Message), seq, id });

/** Each tampering of the raw message rows; `null`: the plans' reasons are edited instead. */
const TAMPERINGS: Record<string, ((rows: RawRow[]) => RawRow[]) | null> = {
  "edited content": (rows) =>
    rows.map((r) => (r.seq === 3 ? { ...r, body: rewritten(r.body, "all tests passed", false) } : r)),
  "edited content with a recomputed content hash": (rows) =>
    rows.map((r) => (r.seq === 3 ? { ...r, body: rewritten(r.body, "all tests passed", true) } : r)),
  "deleted row": (rows) => rows.filter((r) => r.seq !== 4),
  "inserted row": (rows) => {
    const at = rows.find((r) => r.seq === 4)!;
    const forged = { ...at, id: "x1", body: withSeq(rewritten(at.body, "approved", true), 4, "x1") };
    return [
      ...rows.filter((r) => r.seq < 4),
      forged,
      ...rows.filter((r) => r.seq >= 4).map((r) => ({ ...r, seq: r.seq + 1 })),
    ];
  },
  "reordered rows": (rows) =>
    rows.map((r) => (r.seq === 4 ? { ...r, seq: 5 } : r.seq === 5 ? { ...r, seq: 4 } : r)),
  "changed appended counts": (rows) =>
    rows.map((r) => (r.seq === 2 ? { ...r, tokens: '{"simple":1}', chained: '{"simple":1}' } : r)),
  "merged counts": (rows) => rows.map((r) => (r.seq === 2 ? { ...r, tokens: '{"other":7,"simple":1}' } : r)),
  "appended counts rewritten as equal but not canonical JSON": (rows) =>
    rows.map((r) => {
      if (r.chained === null) return r;
      const counts = JSON.parse(r.chained) as Record<string, number>;
      return { ...r, chained: JSON.stringify(counts, null, 1) };
    }),
  "removed chain hash": (rows) => rows.map((r) => (r.seq === 5 ? { ...r, hash: null } : r)),
  "edited plan reason": null,
};

/** Rewrites the thread's raw rows on a backend (see `rewriteLogRows`). */
function rewriteRows(stores: Stores, target: StoreTarget, edit: (rows: RawRow[]) => RawRow[]): Promise<void> {
  return rewriteLogRows(stores, target, "t", edit);
}

async function rewritePlanReasons(stores: Stores, target: StoreTarget): Promise<void> {
  const [from, to] = ['"reason":"', '"reason":"approved by the auditor: '];
  if (target.kind === "memory") {
    const raw = (stores as unknown as Record<symbol, (t: string) => MemoryPlanRows>)[MEMORY_ROWS]!("t");
    raw.plans.forEach((plan, i) => {
      raw.plans[i] = createPlan(JSON.parse(JSON.stringify(plan).replaceAll(from, to)));
    });
    return;
  }
  await rawSql(target, "UPDATE {plans} SET body = replace(body, ?, ?) WHERE thread_id = ?", from, to, "t");
}

async function replayAll(engine: ReturnType<typeof engineOn>): Promise<ReplayResult[]> {
  const out: ReplayResult[] = [];
  for await (const result of engine.replayThread("t")) out.push(result);
  return out;
}

for (const backend of STORE_BACKENDS) {
  const reason = backend.unavailable();
  const suite = reason !== undefined && process.env.CI !== "true" ? describe.skip : describe;
  suite(`replay reads each log row once [${backend.name}]`, () => {
    const opener = new StoreOpener(backend);
    beforeAll(() => backend.start());
    afterEach(() => opener.closeAll());
    afterAll(async () => {
      await opener.closeAll();
      await backend.stop();
    });

    it("reads the thread's rows with one readWithChain, never read or chainRows", async () => {
      const { stores } = await opener.fresh();
      const callIds = await recordThread(stores);
      const calls: Record<string, number> = {};
      const engine = engineOn(stores, observedLog(stores.log, calls));
      const result = await engine.replay(callIds.at(-1)!);
      expect(result).toMatchObject({ ok: true, problems: [] });
      expect(result.ledger).toMatchObject({ checked: true, findings: [] });
      expect(calls).toEqual({ readWithChain: 1 });
      delete calls.readWithChain;
      const thread = await replayAll(engine);
      expect(thread.map((r) => r.ok)).toEqual(callIds.map(() => true));
      expect(calls).toEqual({ readWithChain: 1 });
    });

    it("without readWithChain, reads with read and chainRows and replays the same", async () => {
      const { stores } = await opener.fresh();
      const callIds = await recordThread(stores, KEY);
      const calls: Record<string, number> = {};
      const twoReads = engineOn(stores, observedLog(stores.log, calls, false), KEY);
      const oneRead = engineOn(stores, stores.log, KEY);
      for (const callId of callIds) {
        const two = await twoReads.replay(callId);
        expect(two).toMatchObject({ ok: true, ledger: { checked: true, keyed: true, findings: [] } });
        expect(await oneRead.replay(callId)).toEqual(two);
      }
      expect(calls).toEqual({ read: callIds.length, chainRows: callIds.length });
    });

    it("reads through read and chainRows when a wrapper replaced read and kept readWithChain", async () => {
      const { stores } = await opener.fresh();
      const callIds = await recordThread(stores);
      // What a wrapper's read returns is what the replay sees: here, a message edited on its way out.
      const read: LogStore["read"] = async (threadId, from, to) =>
        (await stores.log.read(threadId, from, to)).map((e) =>
          e.message.seq === 1
            ? { ...e, message: { ...e.message, parts: [{ type: "text", text: "edited" }] } }
            : e,
        );
      const calls: Record<string, number> = {};
      const wrapped = observedLog({ ...stores.log, read }, calls);
      // observedLog wraps readWithChain too: put the store's own back, as a plain spread keeps it.
      const spread = { ...wrapped, readWithChain: stores.log.readWithChain } as LogStore;
      const last = callIds.at(-1)!;
      const replay = await engineOn(stores, spread).replay(last);
      expect(calls).toEqual({ read: 1, chainRows: 1 });
      expect(replay.ok).toBe(false);
      expect(replay.problems.join("\n")).toMatch(
        /"u0" \(seq 1\) no longer matches the content hash stored with it/,
      );
      const twoReads = engineOn(stores, observedLog({ ...stores.log, read }, {}, false));
      expect(replay).toEqual(await twoReads.replay(last));
    });

    it.runIf(backend.durable)(
      "refuses a row that no longer reads with the error two reads give",
      async () => {
        const { stores, target } = await opener.fresh();
        const callIds = await recordThread(stores);
        await rewriteRows(stores, target, (rows) =>
          rows.map((r) => (r.seq === 2 ? { ...r, body: r.body.slice(0, -1) } : r)),
        );
        const failure = (engine: ReturnType<typeof engineOn>) =>
          engine.replay(callIds.at(-1)!).then(
            () => undefined,
            (error: unknown) => error,
          );
        const one = await failure(engineOn(stores, stores.log));
        expect(one).toBeInstanceOf(ValidationError);
        expect(String(one)).toMatch(/not valid JSON/);
        expect(one).toEqual(await failure(engineOn(stores, observedLog(stores.log, {}, false))));
      },
    );

    for (const [kind, edit] of Object.entries(TAMPERINGS)) {
      it(`finds ${kind} as two reads do`, async () => {
        const { stores, target } = await opener.fresh();
        const callIds = await recordThread(stores);
        if (edit === null) await rewritePlanReasons(stores, target);
        else await rewriteRows(stores, target, edit);
        const oneRead = engineOn(stores, stores.log);
        const twoReads = engineOn(stores, observedLog(stores.log, {}, false));
        const last = callIds.at(-1)!;
        const [one, two] = [await oneRead.replay(last), await twoReads.replay(last)];
        expect(one).toEqual(two);
        if (kind.startsWith("appended counts rewritten")) {
          // Equal counts are the same link: canonical JSON is what the chain covers, not the stored spelling.
          expect(one).toMatchObject({ ok: true, problems: [] });
        } else {
          expect(one.ok).toBe(false);
          expect(one.problems.length).toBeGreaterThan(0);
        }
        expect(await replayAll(oneRead)).toEqual(await replayAll(twoReads));
      });
    }
  });
}
