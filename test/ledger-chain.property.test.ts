// Properties of the ledger chain (docs/decisions/0018) on the memory and SQLite stores: a random history of
// appends and plan commits (with or without a key) always verifies, the heads the stores hand out are the heads
// recomputed from the rows, and any single-row mutation of the stored rows is detected — by a finding, or by the
// head no longer being the one a call would have recorded.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { logGenesis, planGenesis } from "../src/ledger/ledger-chain.js";
import {
  type ChainCheck,
  checkLogChain,
  checkPlanChain,
  type LogChainRow,
  type PlanChainRow,
} from "../src/ledger/verify-chain.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import { openSqliteStores } from "../src/stores/sqlite/index.js";
import type { Stores } from "../src/stores/stores.js";
import { fcParams } from "./support/arbitrary-log.js";
import { dropPlan, stored } from "./support/store-fixtures.js";

const dir = mkdtempSync(join(tmpdir(), "context-ledger-chain-prop-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

type Step = { kind: "append"; texts: string[] } | { kind: "commit"; pick: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant("append" as const),
    texts: fc.array(fc.string({ maxLength: 12, unit: "grapheme" }), { minLength: 1, maxLength: 4 }),
  }),
  fc.record({ kind: fc.constant("commit" as const), pick: fc.nat() }),
);

const historyArb = fc.record({
  steps: fc.array(stepArb, { minLength: 1, maxLength: 14 }),
  keyed: fc.boolean(),
});

/** Writes a history to stores; returns the log length and plan version reached. */
async function write(stores: Stores, steps: ReadonlyArray<Step>, key: string | undefined) {
  const options = key === undefined ? undefined : { ledgerKey: key };
  let length = 0;
  let version = 0;
  for (const step of steps) {
    if (step.kind === "append") {
      const entries = step.texts.map((text, i) => stored(length + i, `m${length + i}`, text));
      await stores.log.append("t", length, entries, options);
      length += entries.length;
    } else if (length > 0) {
      // A whole-plan version dropping one message (every message is a user text, so any drop is valid).
      const plan = dropPlan("t", version + 1, length, [`m${step.pick % length}`], `s${version}`);
      await stores.plans.commit(plan, version, options);
      version++;
    }
  }
  return { length, version };
}

/** Whether a check of mutated rows notices: a finding, or a head at the end other than the one recorded. */
function noticed(check: ChainCheck, at: number, recorded: string): boolean {
  return check.findings.length > 0 || check.heads[at] !== recorded;
}

type LogMutation = (rows: LogChainRow[], i: number) => LogChainRow[];
const LOG_MUTATIONS: Record<string, LogMutation> = {
  body: (rows, i) =>
    rows.map((r, j) => (j === i ? { ...r, body: `${r.body.slice(0, -1)},"forged":true}` } : r)),
  tokens: (rows, i) =>
    rows.map((r, j) => (j === i ? { ...r, appendedTokens: { x: 1 }, tokens: { x: 1 } } : r)),
  hash: (rows, i) => rows.map((r, j) => (j === i ? { ...r, chainHash: "0".repeat(64) } : r)),
  delete: (rows, i) => rows.filter((_, j) => j !== i),
  deleteRenumber: (rows, i) => rows.filter((_, j) => j !== i).map((r, j) => ({ ...r, seq: j })),
  insert: (rows, i) =>
    [...rows.slice(0, i), { ...rows[i]! }, ...rows.slice(i)].map((r, j) => ({ ...r, seq: j })),
  swap: (rows, i) => {
    if (rows.length < 2) return rows.filter((_, j) => j !== i);
    const k = i === rows.length - 1 ? i - 1 : i + 1;
    const out = [...rows];
    [out[i], out[k]] = [
      { ...rows[k]!, seq: rows[i]!.seq },
      { ...rows[i]!, seq: rows[k]!.seq },
    ];
    return out;
  },
};

type PlanMutation = (rows: PlanChainRow[], i: number) => PlanChainRow[];
const PLAN_MUTATIONS: Record<string, PlanMutation> = {
  reason: (rows, i) =>
    rows.map((r, j) => (j === i ? { ...r, body: r.body.replace('"reason":"', '"reason":"approved: ') } : r)),
  strategy: (rows, i) =>
    rows.map((r, j) => (j === i ? { ...r, body: r.body.replace('"strategy":"', '"strategy":"x') } : r)),
  committedAt: (rows, i) =>
    rows.map((r, j) => (j === i ? { ...r, committedAt: "2001-01-01T00:00:00.000Z" } : r)),
  delete: (rows, i) => rows.filter((_, j) => j !== i).map((r, j) => ({ ...r, version: j + 1 })),
  swap: (rows, i) => {
    if (rows.length < 2) return rows.filter((_, j) => j !== i);
    const k = i === rows.length - 1 ? i - 1 : i + 1;
    const out = [...rows];
    [out[i], out[k]] = [
      { ...rows[k]!, version: rows[i]!.version },
      { ...rows[i]!, version: rows[k]!.version },
    ];
    return out;
  },
};

const BACKENDS: ReadonlyArray<{ name: string; runs: number; open: () => Stores }> = [
  { name: "memory", runs: 150, open: () => createMemoryStores() },
  { name: "sqlite", runs: 30, open: () => openSqliteStores({ path: join(dir, `p${++files}.db`) }) },
];

for (const backend of BACKENDS) {
  describe(`ledger chain properties [${backend.name}]`, () => {
    it("an untampered random history verifies, and each stored head is the recomputed one", async () => {
      await fc.assert(
        fc.asyncProperty(historyArb, async ({ steps, keyed }) => {
          const key = keyed ? "a-ledger-key-of-enough-length-0123456789" : undefined;
          const stores = backend.open();
          try {
            const { length, version } = await write(stores, steps, key);
            const log = checkLogChain("t", [...(await stores.log.chainRows!("t", length))], key);
            const plan = checkPlanChain("t", [...(await stores.plans.chainRows!("t", version))], key);
            expect(log.findings).toEqual([]);
            expect(plan.findings).toEqual([]);
            expect(log.heads[0]).toBe(logGenesis("t", key));
            expect(plan.heads[0]).toBe(planGenesis("t", key));
            for (let n = 1; n <= length; n++) expect(await stores.log.chainHead!("t", n)).toBe(log.heads[n]);
            for (let v = 1; v <= version; v++)
              expect(await stores.plans.chainHead!("t", v)).toBe(plan.heads[v]);
          } finally {
            await stores.close();
          }
        }),
        fcParams(backend.runs),
      );
    });

    it("any single-row mutation of the log or the plans is detected", async () => {
      await fc.assert(
        fc.asyncProperty(
          historyArb,
          fc.nat(),
          fc.constantFrom(...Object.keys(LOG_MUTATIONS)),
          fc.constantFrom(...Object.keys(PLAN_MUTATIONS)),
          async ({ steps, keyed }, pick, logKind, planKind) => {
            const key = keyed ? "a-ledger-key-of-enough-length-0123456789" : undefined;
            const stores = backend.open();
            try {
              const { length, version } = await write(stores, steps, key);
              const logRows = [...(await stores.log.chainRows!("t", length))];
              if (length > 0) {
                const recorded = (await stores.log.chainHead!("t", length))!;
                const mutated = LOG_MUTATIONS[logKind]!(logRows, pick % length);
                expect(noticed(checkLogChain("t", mutated, key), length, recorded)).toBe(true);
              }
              const planRows = [...(await stores.plans.chainRows!("t", version))];
              if (version > 0) {
                const recorded = (await stores.plans.chainHead!("t", version))!;
                const mutated = PLAN_MUTATIONS[planKind]!(planRows, pick % version);
                // A swap of two versions with equal bodies and times changes nothing: only count a real change.
                if (JSON.stringify(mutated) !== JSON.stringify(planRows)) {
                  expect(noticed(checkPlanChain("t", mutated, key), version, recorded)).toBe(true);
                }
              }
            } finally {
              await stores.close();
            }
          },
        ),
        fcParams(backend.runs),
      );
    });
  });
}
