/**
 * The hard fallback gives groups up by durability class (decision 0016): on random logs whose tool results carry
 * random classes, at random budgets, a dropped group is never more durable than a group it kept that it could
 * have dropped instead, and within a class it is never newer. Every plan validates and fits.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BudgetInfeasibleError } from "../src/errors/ledger-error.js";
import type { Durability, MessageInput } from "../src/log/message.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { emptyPlan } from "../src/plan/compaction-plan.js";
import { decisionAt, resolveForLog } from "../src/plan/resolve-for-log.js";
import { validatePlan } from "../src/plan/validate-plan.js";
import { DEFAULT_DURABILITY_CLASSES, dropRank } from "../src/strategies/durability-classes.js";
import { createHardFallback, protectedGroups } from "../src/strategies/hard-fallback.js";
import { arbitraryLogInputs, fcParams } from "./support/arbitrary-log.js";
import { simpleCounter } from "./support/simple-counter.js";
import { renderHistory, runStrategy } from "./support/strategy-context.js";

const CLASSES: ReadonlyArray<Durability | undefined> = [
  undefined,
  "ephemeral",
  "replayable",
  "anchoring",
  "non-replayable",
];

/** The inputs with each tool message given the class its position picks. */
function classed(inputs: ReadonlyArray<MessageInput>, picks: ReadonlyArray<number>): MessageInput[] {
  let k = 0;
  return inputs.map((m) => {
    if (m.role !== "tool") return m;
    const d = CLASSES[picks[k++ % picks.length]! % CLASSES.length];
    return d === undefined ? m : { ...m, meta: { ...m.meta, durability: d } };
  });
}

describe("hard fallback by durability class (property)", () => {
  it("drops least durable first, oldest first within a class, among the groups it may drop", async () => {
    const counter = simpleCounter();
    await fc.assert(
      fc.asyncProperty(
        arbitraryLogInputs({ maxOps: 24 }),
        fc.array(fc.nat(20), { minLength: 1, maxLength: 30 }),
        fc.double({ min: 0.05, max: 0.95, noNaN: true }),
        async (inputs, picks, share) => {
          const log = ThreadLog.from("t", classed(inputs, picks));
          const full = renderHistory(log, emptyPlan("t"), counter).tokenCount;
          const target = Math.max(1, Math.floor(full * share));
          let plan: ReturnType<typeof emptyPlan>;
          try {
            ({ plan } = await runStrategy(createHardFallback(), log, emptyPlan("t"), {
              target,
              goal: target,
            }));
          } catch (error) {
            if (error instanceof BudgetInfeasibleError) return;
            throw error;
          }
          expect(validatePlan(plan, log)).toEqual([]);
          const res = resolveForLog(plan, log);
          // Groups droppable at every protection level the fallback tries: older than the last user message.
          const keep = protectedGroups(log, "lastUserMessage");
          const lastUser = log.lastUserSeq;
          const candidates = [];
          for (let g = 0; g < log.groupCount; g++) {
            const group = log.groupAt(g);
            if (keep[g] !== 0 || group.seqs.some((s) => s >= lastUser)) continue;
            const dropped = group.seqs.every((s) => decisionAt(res, s)?.kind === "drop");
            const rank = dropRank(DEFAULT_DURABILITY_CLASSES.classOfGroup(log, group));
            candidates.push({ g, dropped, rank });
          }
          for (const gone of candidates.filter((c) => c.dropped)) {
            for (const kept of candidates.filter((c) => !c.dropped)) {
              // A kept group is more durable, or as durable and newer.
              expect(kept.rank > gone.rank || (kept.rank === gone.rank && kept.g > gone.g)).toBe(true);
            }
          }
        },
      ),
      fcParams(200),
    );
  });
});
