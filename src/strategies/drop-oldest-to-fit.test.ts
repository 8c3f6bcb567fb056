import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { arbitraryBatches, fcParams } from "../../test/support/arbitrary-log.js";
import { simpleCounter } from "../../test/support/simple-counter.js";
import { renderHistory } from "../../test/support/strategy-context.js";
import { BudgetInfeasibleError } from "../errors/ledger-error.js";
import { ThreadLog } from "../log/thread-log.js";
import { type CompactionPlan, emptyPlan } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog } from "../plan/resolve-for-log.js";
import { validatePlan } from "../plan/validate-plan.js";
import { dropOldestToFit, pinnedGroups } from "./drop-oldest-to-fit.js";

const counter = simpleCounter();

function droppedSeqs(log: ThreadLog, plan: CompactionPlan): number[] {
  const resolution = resolveForLog(plan, log);
  const out: number[] = [];
  for (let seq = 0; seq < log.length; seq++) if (decisionAt(resolution, seq)?.kind === "drop") out.push(seq);
  return out;
}

describe("dropOldestToFit", () => {
  it("turn by turn on growing logs: fits, stays valid, never drops pinned groups, keeps earlier drops", () => {
    fc.assert(
      fc.property(arbitraryBatches(), fc.integer({ min: 40, max: 400 }), (batches, budget) => {
        let log = ThreadLog.empty("t");
        let plan = emptyPlan("t");
        for (const batch of batches) {
          log = log.append(batch);
          let next: CompactionPlan;
          try {
            next = dropOldestToFit(log, plan, { counter, budget });
          } catch (error) {
            expect(error).toBeInstanceOf(BudgetInfeasibleError);
            const pinnedTokens = (error as BudgetInfeasibleError).required;
            expect(pinnedTokens).toBeGreaterThan(budget - counter.requestOverhead);
            return;
          }
          expect(validatePlan(next, log)).toEqual([]);
          expect(renderHistory(log, next, counter).tokenCount).toBeLessThanOrEqual(budget);
          const dropped = new Set(droppedSeqs(log, next));
          for (const g of pinnedGroups(log))
            for (const seq of log.groupAt(g).seqs) expect(dropped.has(seq)).toBe(false);
          // Plans are cumulative: whatever an earlier turn dropped stays dropped (the rendered prefix stays stable).
          for (const seq of droppedSeqs(log, plan)) expect(dropped.has(seq)).toBe(true);
          plan = next;
        }
      }),
      fcParams(300),
    );
  });

  it("protects the group of the newest message when a result fuses two call groups (no user message)", () => {
    // Found by CI (FC_SEED=1177013127): the fused group {m1, m3, m4} holds the newest message, but the highest
    // group index is {m2}, which an earlier turn had dropped; protecting that one broke "never drop protected".
    const call = (id: string, callId: string) => ({
      id,
      role: "assistant" as const,
      parts: [{ type: "tool_call" as const, callId, name: "search", args: "{}" }],
    });
    const batches = [
      [
        { id: "m0", role: "system" as const, parts: [{ type: "text" as const, text: "sys" }] },
        call("m1", "c0"),
      ],
      [
        { id: "m2", role: "assistant" as const, parts: [{ type: "text" as const, text: "x".repeat(900) }] },
        call("m3", "c1"),
      ],
      [
        {
          id: "m4",
          role: "tool" as const,
          parts: [
            { type: "tool_result" as const, callId: "c0", content: "a" },
            { type: "tool_result" as const, callId: "c1", content: "" },
          ],
        },
      ],
    ];
    let log = ThreadLog.empty("t");
    let plan = emptyPlan("t");
    for (const batch of batches) {
      log = log.append(batch);
      plan = dropOldestToFit(log, plan, { counter, budget: 56 });
    }
    expect(log.stableGroupIndices).toBe(false);
    const dropped = new Set(droppedSeqs(log, plan));
    expect(dropped.has(2)).toBe(true);
    for (const g of pinnedGroups(log))
      for (const seq of log.groupAt(g).seqs) expect(dropped.has(seq)).toBe(false);
    expect([...pinnedGroups(log)]).toContain(log.groupIndexOf(4));
  });

  it("returns the same plan when the request already fits", () => {
    const log = ThreadLog.from("t", [{ role: "user", parts: [{ type: "text", text: "hi" }] }]);
    const plan = emptyPlan("t");
    expect(dropOldestToFit(log, plan, { counter, budget: 10_000 })).toBe(plan);
  });

  it("says by how much pinned content exceeds the budget", () => {
    const log = ThreadLog.from("t", [
      { role: "system", parts: [{ type: "text", text: "x".repeat(4000) }] },
      { role: "user", parts: [{ type: "text", text: "go" }] },
    ]);
    expect(() => dropOldestToFit(log, emptyPlan("t"), { counter, budget: 100 })).toThrow(/over by \d+/);
  });
});
