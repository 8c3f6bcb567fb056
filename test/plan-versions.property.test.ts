/**
 * Plan versions stored as deltas (docs/decisions/0007), as a property on SQLite: random histories of commits —
 * extending the previous version (the engine's common case), replacing it (a background run's plan, removed or
 * reordered actions), committing from a second store instance on the same file, reopening the store (nothing
 * remembered), stale commits — always read back JSON-exact at every version, from the writer and from a fresh
 * instance, and a stale commit never writes. Set FC_SEED to replay a failure.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { VersionConflictError } from "../src/errors/ledger-error.js";
import { type CompactionPlan, emptyPlan, nextPlan, type PlanAction } from "../src/plan/compaction-plan.js";
import { serializePlan } from "../src/plan/plan-schema.js";
import { openSqliteStores } from "../src/stores/sqlite/index.js";
import type { Stores } from "../src/stores/stores.js";
import { fcParams } from "./support/arbitrary-log.js";
import { stored } from "./support/store-fixtures.js";

const RUNS = 150;
let deltaRows = 0;
const dir = mkdtempSync(join(tmpdir(), "context-ledger-plan-versions-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Step =
  | { readonly op: "extend"; readonly added: number; readonly grow: number }
  | { readonly op: "replace"; readonly keep: number }
  | { readonly op: "other"; readonly added: number }
  | { readonly op: "reopen" }
  | { readonly op: "stale" };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ op: fc.constant("extend" as const), added: fc.nat(3), grow: fc.nat(5) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("replace" as const), keep: fc.nat(6) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("other" as const), added: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("reopen" as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("stale" as const) }) },
);

// A commit is checked against the stored log: thread t holds every id the actions name (m0-0 … m199-3), below
// SEEDED, and room after it for the histories' basedOnSeq to grow into.
const SEEDED = 800;
const seededLog = Array.from({ length: SEEDED + 300 }, (_, seq) =>
  stored(seq, seq < SEEDED ? `m${Math.floor(seq / 4)}-${seq % 4}` : `pad${seq}`),
);
const based = (plan: CompactionPlan): number => Math.max(plan.basedOnSeq, SEEDED);

let serial = 0;
function action(n: number): PlanAction {
  const kinds = ["drop", "clear", "summarize"] as const;
  const kind = kinds[n % kinds.length]!;
  const span = Array.from({ length: 1 + (n % 4) }, (_, i) => `m${n}-${i}`);
  const record =
    kind === "summarize"
      ? { kind, summary: `summary ${n}`, summarizerId: "prop", promptVersion: "1" }
      : kind === "clear"
        ? { kind }
        : { kind, reason: `reason ${n}` };
  return { kind, span, record, strategy: "prop", reason: `step ${n}` } as PlanAction;
}

async function checkHistory(steps: ReadonlyArray<Step>): Promise<void> {
  const path = join(dir, `db-${serial++}.db`);
  const open = (): Stores => openSqliteStores({ path, synchronous: "normal" });
  let writer = open();
  await writer.log.append("t", 0, seededLog);
  const committed: CompactionPlan[] = [];
  const opened: Stores[] = [writer];
  let current = emptyPlan("t");
  let n = 0;
  try {
    for (const step of steps) {
      if (step.op === "reopen") {
        writer = open();
        opened.push(writer);
        current = await writer.plans.latest("t");
        continue;
      }
      if (step.op === "stale") {
        if (current.version === 0) continue;
        const stale = nextPlan(emptyPlan("t"), [action(n++)], based(current));
        await expect(writer.plans.commit(stale, 0)).rejects.toBeInstanceOf(VersionConflictError);
        continue;
      }
      if (step.op === "other") {
        // Another worker commits on top of what it reads; the writer then reads the new latest version.
        const other = open();
        opened.push(other);
        const base = await other.plans.latest("t");
        const next = nextPlan(
          base,
          [...base.actions, ...Array.from({ length: step.added }, () => action(n++))],
          based(base),
        );
        await other.plans.commit(next, base.version);
        committed.push(next);
        current = await writer.plans.latest("t");
        continue;
      }
      const actions =
        step.op === "extend"
          ? [...current.actions, ...Array.from({ length: step.added }, () => action(n++))]
          : [...current.actions.slice(0, step.keep).reverse(), action(n++)];
      const basedOnSeq = based(current) + (step.op === "extend" ? step.grow : 0);
      const next = nextPlan(current, actions, basedOnSeq);
      await writer.plans.commit(next, current.version);
      committed.push(next);
      current = next;
    }
    const raw = new Database(path, { readonly: true });
    try {
      deltaRows += raw
        .prepare("SELECT count(*) AS n FROM plans WHERE kind = 'delta'")
        .pluck()
        .get() as number;
    } finally {
      raw.close();
    }
    // Every version, from the writer and from an instance that remembers nothing.
    const fresh = open();
    opened.push(fresh);
    for (const stores of [writer, fresh]) {
      expect(await stores.plans.versions("t")).toEqual(committed.map((_, i) => i + 1));
      for (const plan of committed) {
        expect(serializePlan(await stores.plans.get("t", plan.version))).toBe(serializePlan(plan));
      }
      const latest = committed.at(-1) ?? emptyPlan("t");
      expect(serializePlan(await stores.plans.latest("t"))).toBe(serializePlan(latest));
    }
  } finally {
    for (const stores of opened) await stores.close();
  }
}

describe("plan versions as deltas (property, SQLite)", () => {
  it("random commit histories read back JSON-exact at every version, from the writer and a fresh instance", async () => {
    await fc.assert(fc.asyncProperty(fc.array(stepArb, { maxLength: 45 }), checkHistory), fcParams(RUNS));
    // The histories did exercise deltas (most steps extend the previous version).
    expect(deltaRows).toBeGreaterThan(RUNS);
  }, 120_000);
});
