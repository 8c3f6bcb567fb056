/**
 * Tenancy and clearance through the engine, on every backend (memory, SQLite, PostgreSQL on a throwaway cluster;
 * without PostgreSQL server binaries that backend is skipped locally and fails in CI):
 * - a thread belongs to the tenant of its first append; an engine of another tenant is refused on every
 *   operation with `ThreadAccessError`, which names the thread and never the owner;
 * - content above the reader's clearance reaches no read path: render, prepareTurn, replay, explain, the report's
 *   data and recall show it as a stub (`placeholder`) or refuse with `ClearanceError` (`refuse`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AccessDeniedError,
  ClearanceError,
  type ContextEngine,
  type ContextEngineOptions,
  createContextEngine,
  type MessageInput,
  type ProviderFormat,
  type RecallResult,
  type Stores,
  ThreadAccessError,
  validateProviderRequest,
} from "../src/index.js";
import { gatherReport } from "../src/report/index.js";
import { STORE_BACKENDS, StoreOpener } from "./support/store-backends.js";
import { rejection } from "./support/store-cases-log.js";

const OWNER = "tenant-alpha-owner";
const SECRET = "SECRET-TOKEN-42";
const CONF = "CONF-NOTE-7";
const FORMATS: ReadonlyArray<ProviderFormat> = ["openai", "responses", "anthropic"];

/** A task, a call whose result is restricted, a confidential note, and a question. */
const THREAD: ReadonlyArray<MessageInput> = [
  { id: "u0", role: "user", parts: [{ type: "text", text: "check the vault" }] },
  {
    id: "a0",
    role: "assistant",
    parts: [{ type: "tool_call", callId: "c0", name: "vault", args: '{"key":"k"}' }],
  },
  {
    id: "r0",
    role: "tool",
    parts: [{ type: "tool_result", callId: "c0", content: `the key is ${SECRET}` }],
    meta: { sensitivity: "restricted" },
  },
  {
    id: "a1",
    role: "assistant",
    parts: [{ type: "text", text: `noted ${CONF}` }],
    meta: { sensitivity: "confidential" },
  },
  { id: "u1", role: "user", parts: [{ type: "text", text: "what next?" }] },
];

function engineOn(stores: Stores, options: Partial<ContextEngineOptions> = {}): ContextEngine {
  return createContextEngine({ stores, budget: { contextWindow: 100_000 }, ...options });
}

const json = (value: unknown) => JSON.stringify(value);

/** The message ids a recall by query matched. */
const matched = (result: RecallResult) =>
  result.kind === "query" ? result.matches.map((m) => m.messageId) : [];

for (const backend of STORE_BACKENDS) {
  const reason = backend.unavailable();
  describe.skipIf(reason !== undefined && process.env.CI !== "true")(
    `tenancy and clearance [${backend.name}]`,
    () => {
      const opener = new StoreOpener(backend);
      beforeAll(() => backend.start(), 120_000);
      afterAll(async () => {
        await opener.closeAll();
        await backend.stop();
      });

      async function ownedThread() {
        const { stores } = await opener.fresh();
        const owner = engineOn(stores, { tenant: OWNER, clearance: "restricted" });
        await owner.append("t", THREAD);
        const turn = await owner.prepareTurn("t", { format: "openai" });
        await owner.idle();
        return { stores, owner, turn };
      }

      async function expectDenied(attempt: Promise<unknown>) {
        const error = await rejection(attempt, ThreadAccessError);
        expect(error).toBeInstanceOf(AccessDeniedError);
        expect(error.where.threadId).toBe("t");
        expect(error.message).toContain('"t"');
        expect(error.message).not.toContain(OWNER);
      }

      it("another tenant's engine is refused on every operation; the owner's works", async () => {
        const { stores, owner, turn } = await ownedThread();
        for (const other of [
          engineOn(stores, { tenant: "tenant-beta", clearance: "restricted" }),
          engineOn(stores),
        ]) {
          await expectDenied(other.render("t", { format: "openai" }));
          await expectDenied(other.prepareTurn("t", { format: "openai" }));
          await expectDenied(other.replay(turn.callId));
          await expectDenied(other.replayThread("t")[Symbol.asyncIterator]().next());
          await expectDenied(other.explain("t"));
          await expectDenied(other.diff("t", 0, 0));
          await expectDenied(other.locateMessages("t", ["u0"]));
          await expectDenied(other.recall("t", { query: "vault" }));
          await expectDenied(other.recall("t", { callId: "c0" }));
          await expectDenied(other.compact("t", { budget: 50 }));
          await expectDenied(other.recordUsage(turn.callId, { inputTokens: 10 }));
          await expectDenied(
            other.append("t", [{ role: "user", parts: [{ type: "text", text: "let me in" }] }]),
          );
          await expectDenied(
            gatherReport({ engine: other, stores: stores.forTenant!("tenant-beta"), database: "db" }, "t"),
          );
          expect((await other.compactAll()).map((r) => r.threadId)).toEqual([]);
        }
        // Nothing the refusals tried reached the thread; its own tenant goes on as before.
        expect(await stores.forTenant!(OWNER).log.length("t")).toBe(THREAD.length);
        expect((await owner.replay(turn.callId)).ok).toBe(true);
        expect(json((await owner.render("t", { format: "anthropic" })).request)).toContain(SECRET);
        await owner.append("t", [{ role: "assistant", parts: [{ type: "text", text: "done" }] }]);
        expect((await owner.explain("t")).rows).toHaveLength(THREAD.length + 1);
      });

      it("a tenant's engine over stores bound to it needs no tenant option", async () => {
        const { stores } = await ownedThread();
        const bound = engineOn(stores.forTenant!(OWNER), { clearance: "restricted" });
        expect((await bound.explain("t")).rows).toHaveLength(THREAD.length);
        // Stores bound to one tenant take an engine of another through `forTenant`.
        await expectDenied(engineOn(stores.forTenant!(OWNER), { tenant: "tenant-beta" }).explain("t"));
      });

      it("render and prepareTurn show content above the clearance as stubs, in every format, and stay valid", async () => {
        const { stores } = await opener.fresh();
        const reader = engineOn(stores);
        await reader.append("t", THREAD);
        for (const format of FORMATS) {
          for (const { request } of [
            await reader.render("t", { format }),
            await reader.prepareTurn("t", { format }),
          ]) {
            const body = json(request);
            expect(body).not.toContain(SECRET);
            expect(body).not.toContain(CONF);
            expect(body).toContain("content withheld: restricted");
            expect(body).toContain("content withheld: confidential");
            expect(validateProviderRequest(format, request as never)).toEqual([]);
          }
        }
        const cleared = engineOn(stores, { clearance: "confidential" });
        const body = json((await cleared.render("t", { format: "openai" })).request);
        expect(body).toContain(CONF);
        expect(body).not.toContain(SECRET);
      });

      it("refuse: every read path throws ClearanceError and prepareTurn commits and records nothing", async () => {
        const { stores } = await opener.fresh();
        await engineOn(stores, { clearance: "restricted" }).append("t", THREAD);
        const strict = engineOn(stores, { aboveClearance: "refuse" });
        await rejection(strict.render("t", { format: "openai" }), ClearanceError);
        await rejection(strict.prepareTurn("t", { format: "anthropic" }), ClearanceError);
        await rejection(strict.explain("t"), ClearanceError);
        await rejection(strict.recall("t", { callId: "c0" }), ClearanceError);
        expect(await stores.calls.list("t")).toEqual([]);
        expect(await stores.plans.versions("t")).toEqual([]);
        // Within the clearance nothing is refused.
        const high = engineOn(stores, { clearance: "restricted", aboveClearance: "refuse" });
        expect(json((await high.render("t", { format: "openai" })).request)).toContain(SECRET);
        await high.prepareTurn("t", { format: "openai" });
        await rejection(gatherReport({ engine: strict, stores, database: "db" }, "t"), ClearanceError);
      });

      it("explain, the report's data and recall withhold too (placeholder)", async () => {
        const { stores } = await opener.fresh();
        const high = engineOn(stores, { clearance: "restricted" });
        await high.append("t", THREAD);
        await high.prepareTurn("t", { format: "openai" });
        const low = engineOn(stores);
        const explanation = await low.explain("t");
        expect(explanation.rows.find((r) => r.id === "r0")).toMatchObject({ withheld: "restricted" });
        expect(json(explanation)).not.toContain(SECRET);
        expect((await low.explain("t", { grep: SECRET })).rows).toEqual([]);
        expect((await high.explain("t", { grep: SECRET })).rows.map((r) => r.id)).toEqual(["r0"]);
        // The call was made for clearance restricted: its replay would hand the secret to this reader.
        const byLow = await low.prepareTurn("t", { format: "openai" });
        await rejection(low.replay((await stores.calls.list("t"))[0]!.callId), ClearanceError);
        expect((await low.replay(byLow.callId)).ok).toBe(true);
        // A call whose only result is above the clearance: nothing to show, refused (the model reads why).
        const denied = await rejection(low.recall("t", { callId: "c0" }), AccessDeniedError);
        expect(denied.message).not.toContain(SECRET);
        // The report's data: the log's texts and every call's request, the secret nowhere.
        const data = await gatherReport({ engine: low, stores, database: "db" }, "t").catch(
          (e: unknown) => e,
        );
        expect(data).toBeInstanceOf(ClearanceError);
        const report = await gatherReport(
          { engine: engineOn(stores, { clearance: "restricted" }), stores, database: "db" },
          "t",
        );
        expect(json(report)).toContain(SECRET);
        const calls = await stores.calls.list("t");
        expect(calls.map((c) => c.clearance)).toEqual(["restricted", "internal"]);
      });

      it("the report's data shows the log and every call's request with stubs to a lower reader", async () => {
        const { stores } = await opener.fresh();
        const low = engineOn(stores);
        await low.append("t", THREAD);
        await low.prepareTurn("t", { format: "openai" });
        const data = await gatherReport({ engine: low, stores, database: "db" }, "t");
        expect(data.calls).toHaveLength(1);
        expect(data.calls[0]!.verified).toBe(true);
        expect(json(data)).not.toContain(SECRET);
        expect(json(data)).not.toContain(CONF);
        expect(data.texts).toContain("[content withheld: restricted, above this reader's clearance]");
      });

      it("replay: a lower reader is refused a call of a higher one, naming why; an equal or higher one verifies", async () => {
        const { stores } = await opener.fresh();
        const high = engineOn(stores, { clearance: "restricted" });
        await high.append("t", THREAD);
        const turn = await high.prepareTurn("t", { format: "anthropic" });
        const error = await rejection(engineOn(stores).replay(turn.callId), ClearanceError);
        expect(error.message).toMatch(/clearance restricted.*restricted content.*clearance internal/);
        expect(error.message).not.toContain(SECRET);
        await rejection(
          engineOn(stores, { clearance: "confidential" }).replayThread("t")[Symbol.asyncIterator]().next(),
          ClearanceError,
        );
        expect((await high.replay(turn.callId)).ok).toBe(true);
        const low = engineOn(stores, { clearance: "confidential" });
        const lowTurn = await low.prepareTurn("t", { format: "openai" });
        // The higher reader replays the lower one's call as it was sent: stubs, verified.
        const replayed = await high.replay(lowTurn.callId);
        expect(replayed.ok).toBe(true);
        expect(json(replayed.request)).not.toContain(SECRET);
        expect(json(replayed.request)).toContain(CONF);
      });

      it("a summary of restricted content is withheld from a lower reader", async () => {
        const { stores } = await opener.fresh();
        const high = engineOn(stores, { clearance: "restricted" });
        const long: MessageInput[] = [...THREAD];
        for (let i = 0; i < 12; i++) {
          long.push({ role: "user", parts: [{ type: "text", text: `step ${i} ${"words ".repeat(40)}` }] });
          long.push({ role: "assistant", parts: [{ type: "text", text: `ok ${i} ${"more ".repeat(40)}` }] });
        }
        await high.append("t", long);
        const compacted = await high.compact("t", { budget: 900 });
        expect(compacted.changed).toBe(true);
        await high.idle();
        const low = await engineOn(stores).render("t", { format: "openai" });
        const synthetic = low.prompt.messages.filter((m) => m.provenance.synthetic);
        expect(synthetic.length).toBeGreaterThan(0);
        expect(json(low.request)).not.toContain(SECRET);
        expect(json(low.request)).not.toContain(CONF);
        // Search of what was compacted: the higher reader finds the secret, the lower one never matches it.
        const found = await high.recall("t", { query: "vault key" });
        expect(matched(found)).toContain("r0");
        expect(found.content).toContain(SECRET);
        for (const aboveClearance of ["placeholder", "refuse"] as const) {
          const lower = await engineOn(stores, { aboveClearance }).recall("t", { query: "vault key" });
          expect(matched(lower)).not.toContain("r0");
          expect(lower.content).not.toContain(SECRET);
        }
      });
    },
  );
}
