import { expect, it } from "vitest";
import {
  AccessDeniedError,
  NotFoundError,
  ThreadAccessError,
  ValidationError,
} from "../../src/errors/ledger-error.js";
import { emptyPlan } from "../../src/plan/compaction-plan.js";
import type { ModelCallRecord } from "../../src/stores/model-call-store.js";
import type { Stores } from "../../src/stores/stores.js";
import type { StoreOpener } from "./store-backends.js";
import { rejection } from "./store-cases-log.js";
import { createAtSchema, rawSql } from "./store-cases-plan.js";
import { batch, COUNTER, dropPlan } from "./store-fixtures.js";

// The owner's name is unusual so a test can tell it never appears in what another tenant is told.
const OWNER = "tenant-alpha-owner";
const OTHER = "tenant-beta";

function callRecord(callId: string, threadId: string): ModelCallRecord {
  return {
    callId,
    threadId,
    logSeq: 2,
    planVersion: 0,
    format: "openai",
    requestHash: "ab".repeat(32),
    tokenEstimate: 10,
    summaries: [],
    evictions: [],
    createdAt: "2025-01-01T00:00:00.000Z",
  } as ModelCallRecord;
}

/** Refused with `ThreadAccessError` naming the thread and never the owner's tenant. */
async function expectDenied(attempt: Promise<unknown>, threadId = "t1"): Promise<void> {
  const error = await rejection(attempt, ThreadAccessError);
  expect(error).toBeInstanceOf(AccessDeniedError);
  expect(error.code).toBe("ACCESS_DENIED");
  expect(error.where.threadId).toBe(threadId);
  expect(error.message).toContain(JSON.stringify(threadId));
  expect(error.message).not.toContain(OWNER);
}

/** Stores for the owner holding thread t1 (3 messages, a plan version, a call, a checkpoint), and another tenant's. */
async function ownedThread(opener: StoreOpener): Promise<{ owner: Stores; other: Stores; base: Stores }> {
  const { stores: base } = await opener.fresh();
  const owner = base.forTenant!(OWNER);
  await owner.log.append("t1", 0, batch(0, ["m0", "m1", "m2"]));
  await owner.plans.commit(dropPlan("t1", 1, 3, ["m0"], "test"), 0);
  await owner.calls.record(callRecord("call-1", "t1"));
  await owner.checkpoints!.put({ threadId: "t1", planVersion: 1, logLength: 3, format: "f/1", body: "{}" });
  return { owner, other: base.forTenant!(OTHER), base };
}

/** A thread belongs to the tenant whose first append made it: every store refuses it to another tenant. */
export function tenancyCases(opener: StoreOpener, title: (t: string) => string): void {
  it(
    title("stores act for the default tenant unless bound, and a bad tenant is a ValidationError"),
    async () => {
      const { stores } = await opener.fresh();
      expect(stores.tenant).toBe("default");
      expect(stores.log.tenant).toBe("default");
      expect(stores.forTenant!("acme").tenant).toBe("acme");
      // The guarded thread stores forward no hook of the store they wrap (a raw-row hook would bypass the guard).
      for (const bound of [stores, stores.forTenant!("acme")]) {
        for (const store of [bound.plans, bound.calls, bound.checkpoints!]) {
          expect(Object.getOwnPropertySymbols(store)).toEqual([]);
        }
      }
      for (const bad of ["", "a\u0000b", "x".repeat(513)]) {
        const error = await rejection(
          Promise.resolve().then(() => stores.forTenant!(bad)),
          ValidationError,
        );
        expect(error.where.field).toBe("tenant");
      }
    },
  );

  it(title("another tenant's thread is refused by the log on every read, search and write"), async () => {
    const { other } = await ownedThread(opener);
    await expectDenied(other.log.read("t1"));
    await expectDenied(other.log.read("t1", 1, 2));
    await expectDenied(other.log.read("t1", 5));
    await expectDenied(other.log.readRanges("t1", [{ from: 0, to: 2 }]));
    await expectDenied(other.log.length("t1"));
    await expectDenied(other.log.seqsOf("t1", ["m0"]));
    await expectDenied(other.log.seqsOf("t1", ["nope"]));
    await expectDenied(other.log.search!("t1", "message"));
    await expectDenied(other.log.indexForSearch!("t1"));
    await expectDenied(other.log.append("t1", 3, batch(3, ["m3"])));
    await expectDenied(other.log.setTokenCounts("t1", [{ seq: 0, tokens: { [COUNTER]: 1 } }]));
    await expectDenied(other.log.chainHead!("t1", 2));
    await expectDenied(other.log.chainRows!("t1", 3));
    await expectDenied(other.log.readWithChain!("t1", 3));
    expect(await other.log.access!("t1")).toBe("denied");
    expect(await other.log.threads()).toEqual([]);
  });

  it(title("calibration reads only the tenant's own calls"), async () => {
    const { owner, other } = await ownedThread(opener);
    await other.log.append("t9", 0, batch(0, ["x0", "x1", "x2"]));
    const withUsage = (callId: string, threadId: string, inputTokens: number): ModelCallRecord => ({
      ...callRecord(callId, threadId),
      model: "gpt-4o",
      usage: { inputTokens },
    });
    await owner.calls.record(withUsage("mine", "t1", 10));
    await other.calls.record(withUsage("theirs", "t9", 9_999));
    expect((await owner.calls.listWithUsage("gpt-4o", 10)).map((r) => r.callId)).toEqual(["mine"]);
    expect((await other.calls.listWithUsage("gpt-4o", 10)).map((r) => r.callId)).toEqual(["theirs"]);
  });

  it(title("another tenant's thread is refused by plans, model calls and checkpoints"), async () => {
    const { other } = await ownedThread(opener);
    await expectDenied(other.plans.latest("t1"));
    await expectDenied(other.plans.get("t1", 1));
    await expectDenied(other.plans.versions("t1"));
    await expectDenied(other.plans.latestVersion!("t1"));
    await expectDenied(other.plans.chainHead!("t1", 1));
    await expectDenied(other.plans.chainRows!("t1", 1));
    await expectDenied(other.plans.commit(dropPlan("t1", 2, 3, ["m1"], "intruder"), 1));
    await expectDenied(other.calls.get("call-1"));
    await expectDenied(other.calls.list("t1"));
    await expectDenied(other.calls.setUsage("call-1", { inputTokens: 5 }));
    await expectDenied(other.calls.record(callRecord("call-2", "t1")));
    await expectDenied(other.checkpoints!.latest("t1", 1, 3));
    await expectDenied(other.checkpoints!.tail("t1", 1, 3));
    await expectDenied(
      other.checkpoints!.put({ threadId: "t1", planVersion: 1, logLength: 2, format: "f/1", body: "{}" }),
    );
  });

  it(
    title("the owner reads and writes its thread as before, and nothing the refusals tried was written"),
    async () => {
      const { owner, other } = await ownedThread(opener);
      await other.log.append("t1", 3, batch(3, ["m3"])).catch(() => {});
      expect((await owner.log.read("t1")).map((e) => e.message.id)).toEqual(["m0", "m1", "m2"]);
      expect(await owner.log.length("t1")).toBe(3);
      expect(await owner.log.access!("t1")).toBe("owner");
      expect(await owner.log.threads()).toEqual(["t1"]);
      expect((await owner.plans.latest("t1")).version).toBe(1);
      expect((await owner.calls.get("call-1"))?.threadId).toBe("t1");
      expect((await owner.log.search!("t1", "m1")).map((h) => h.messageId)).toContain("m1");
      await owner.log.append("t1", 3, batch(3, ["m3"]));
      expect(await owner.log.length("t1")).toBe(4);
    },
  );

  it(
    title("a thread nobody appended to is any tenant's to claim, and the first append claims it"),
    async () => {
      const { stores } = await opener.fresh();
      const a = stores.forTenant!(OWNER);
      const b = stores.forTenant!(OTHER);
      expect(await a.log.access!("t2")).toBe("unclaimed");
      expect(await b.log.read("t2")).toEqual([]);
      expect(await b.log.length("t2")).toBe(0);
      expect((await b.plans.latest("t2")).version).toBe(0);
      await b.log.append("t2", 0, batch(0, ["x0"]));
      expect(await b.log.access!("t2")).toBe("owner");
      expect(await a.log.access!("t2")).toBe("denied");
      await expectDenied(a.log.read("t2"), "t2");
      // Two tenants racing for one new thread: exactly one owns it, the other is refused or loses the race.
      const results = await Promise.allSettled([
        a.log.append("t3", 0, batch(0, ["a0"])),
        b.log.append("t3", 0, batch(0, ["b0"])),
      ]);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      const owners = [await a.log.access!("t3"), await b.log.access!("t3")];
      expect(owners.sort()).toEqual(["denied", "owner"]);
    },
  );

  it(
    title("a thread nobody appended to takes no plan, call or checkpoint, and stays its first appender's"),
    async () => {
      const { stores } = await opener.fresh();
      const a = stores.forTenant!(OWNER);
      const b = stores.forTenant!(OTHER);
      const refused = async (attempt: Promise<unknown>) => {
        const error = await rejection(attempt, NotFoundError);
        expect(error.where.threadId).toBe("t4");
        expect(error.message).toContain("no messages yet");
      };
      await refused(a.plans.commit({ ...emptyPlan("t4"), version: 1 }, 0));
      await refused(a.plans.commit(dropPlan("t4", 1, 1, ["y0"], "early"), 0));
      await refused(a.calls.record(callRecord("call-early", "t4")));
      await refused(
        a.checkpoints!.put({ threadId: "t4", planVersion: 1, logLength: 1, format: "f/1", body: "{}" }),
      );
      await b.log.append("t4", 0, batch(0, ["y0"]));
      await expectDenied(a.log.read("t4"), "t4");
      // Nothing the refusals tried was written: the owner starts from an empty plan and no calls.
      expect((await b.plans.latest("t4")).version).toBe(0);
      expect(await b.calls.list("t4")).toEqual([]);
      expect(await b.calls.get("call-early")).toBeUndefined();
      expect(await b.checkpoints!.latest("t4", 1, 1)).toBeUndefined();
      await b.plans.commit(dropPlan("t4", 1, 1, ["y0"], "owner"), 0);
      await b.calls.record(callRecord("call-owner", "t4"));
      expect((await b.calls.list("t4")).map((c) => c.callId)).toEqual(["call-owner"]);
    },
  );

  it(title("the default tenant's stores see the default tenant's threads only"), async () => {
    const { base } = await ownedThread(opener);
    await expectDenied(base.log.read("t1"));
    await base.log.append("d1", 0, batch(0, ["d0"]));
    expect(await base.log.threads()).toEqual(["d1"]);
    expect(await base.forTenant!("default").log.length("d1")).toBe(1);
  });

  it.runIf(opener.backend.durable)(
    title("a database written before tenants upgrades with its threads assigned to the default tenant"),
    async () => {
      const target = opener.backend.newTarget();
      await createAtSchema(target, 5);
      // A schema-5 database has no tenant column; write as a library of that time did.
      await rawSql(
        target,
        "INSERT INTO {threads} (thread_id, log_length, plan_version) VALUES (?, ?, ?)",
        "legacy",
        1,
        0,
      );
      const [entry] = batch(0, ["L0"]);
      await rawSql(
        target,
        "INSERT INTO {messages} (thread_id, seq, message_id, body, tokens) VALUES (?, ?, ?, ?, ?)",
        "legacy",
        0,
        "L0",
        JSON.stringify(entry!.message),
        JSON.stringify(entry!.tokens),
      );
      const stores = await opener.at(target);
      expect((await stores.log.read("legacy")).map((e) => e.message.id)).toEqual(["L0"]);
      expect(await stores.log.access!("legacy")).toBe("owner");
      await expectDenied(stores.forTenant!(OTHER).log.read("legacy"), "legacy");
      const rows = await rawSql(target, "SELECT tenant FROM {threads} WHERE thread_id = ?", "legacy");
      expect(rows.map((r) => r.tenant)).toEqual(["default"]);
    },
  );

  it.runIf(opener.backend.durable)(
    title("the log's queries filter by tenant: another tenant's rows are not read even past the check"),
    async () => {
      const { stores, target } = await opener.fresh();
      await stores.forTenant!(OWNER).log.append("t1", 0, batch(0, ["m0"]));
      // Even with the thread claimed by nobody the queries name a tenant: rows of an unowned thread read as none.
      await rawSql(target, "UPDATE {threads} SET tenant = NULL WHERE thread_id = ?", "t1");
      expect(await stores.forTenant!(OTHER).log.read("t1")).toEqual([]);
      expect((await stores.forTenant!(OTHER).log.seqsOf("t1", ["m0"])).size).toBe(0);
    },
  );
}
