/**
 * A short run of the fuzz campaign (`npm run fuzz` runs it long): mutated transcripts, files and API batches on
 * memory and SQLite, each EITHER refused with a typed error naming the line or field and nothing written, OR
 * accepted with valid requests in every format, warm = cold, and replays that verify. A finding fails the test
 * with its seed and minimal input.
 */
import { describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import { ValidationError } from "../src/errors/ledger-error.js";
import type { MessageMeta } from "../src/log/message.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import { runCampaign } from "./support/fuzz-check.js";
import { generateCase } from "./support/fuzz-inputs.js";
import { simpleCounter } from "./support/simple-counter.js";

const SEED = 424_242;
const ITERATIONS = 400;

describe("fuzz campaign (short run)", () => {
  it(`${ITERATIONS} mutated cases from seed ${SEED} break no invariant`, { timeout: 120_000 }, async () => {
    const figures = await runCampaign(SEED, ITERATIONS);
    const report = figures.findings.map(
      (f) =>
        `seed ${f.seed}: ${f.finding}\n  ${f.detail}\n  mutations: ${f.mutations.join(" | ")}\n  ${f.input}`,
    );
    expect(report).toEqual([]);
    expect(figures.iterations).toBe(ITERATIONS);
    // Both outcomes are exercised, or the run proves little.
    expect(figures.accepted).toBeGreaterThan(ITERATIONS / 10);
    expect([...figures.rejected.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(ITERATIONS / 4);
  });

  it("covers every path, both backends and the nasty mutations", () => {
    const seen = new Set<string>();
    for (let i = 0; i < ITERATIONS; i++) {
      const c = generateCase(SEED + i);
      seen.add(`path ${c.payload.kind === "bytes" && c.payload.cli === true ? "cli" : c.payload.kind}`);
      seen.add(`backend ${c.backend}`);
      for (const m of c.mutations) seen.add(m.split(" ")[0]!);
      if (c.mutations.some((m) => /NUL|surrogate|U\+2028|10000 deep|truncate|bytes/.test(m)))
        seen.add("nasty");
    }
    for (const want of [
      "path api",
      "path jsonl",
      "path bytes",
      "path cli",
      "backend memory",
      "backend sqlite",
    ]) {
      expect(seen).toContain(want);
    }
    for (const op of [
      "delete",
      "retype",
      "role",
      "swap",
      "duplicate",
      "rewire",
      "insert",
      "nest",
      "truncate",
      "bytes",
    ]) {
      expect(seen).toContain(op);
    }
  });

  it("a sparse array in meta is a ValidationError naming the hole, not a TypeError (found by the full run, seed 66273)", async () => {
    const holes: unknown[] = [];
    holes[1] = 1;
    const engine = createContextEngine({
      stores: createMemoryStores(),
      counter: simpleCounter(),
      budget: { contextWindow: 10_000 },
    });
    const append = engine.append("t", [
      { role: "user", parts: [{ type: "text", text: "hi" }], meta: { deep: { d: holes } } as MessageMeta },
    ]);
    await expect(append).rejects.toBeInstanceOf(ValidationError);
    await expect(append).rejects.toThrow(/meta\.deep\.d(\[0\]|\.0)/);
    expect(await engine.locateMessages("t", [])).toMatchObject({ length: 0 });
  });

  it("is deterministic: a seed always makes the same case", () => {
    for (const seed of [1, 77, 424_242]) {
      const [a, b] = [generateCase(seed), generateCase(seed)];
      expect(a.mutations).toEqual(b.mutations);
      expect(a.prefix).toEqual(b.prefix);
      expect(a.payload).toEqual(b.payload);
    }
  });
});
