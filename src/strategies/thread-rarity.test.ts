import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { arbitraryLogAndPlan, chainOf, fcParams } from "../../test/support/arbitrary-log.js";
import { ThreadLog } from "../log/thread-log.js";
import { emptyPlan } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog, type SeqResolution } from "../plan/resolve-for-log.js";
import { type Rarity, rarityOf } from "./salient-lines.js";
import { messageWords, threadRarity } from "./thread-rarity.js";

/** The rarity counted from scratch: every message of `log` that renders under `resolution`. */
function fromScratch(log: ThreadLog, resolution: SeqResolution): { rarity: Rarity; words: Set<string> } {
  const documents = [];
  for (let seq = 0; seq < log.length; seq++) {
    const kind = decisionAt(resolution, seq)?.kind;
    if (kind === undefined || kind === "include" || kind === "clear")
      documents.push(messageWords(log.at(seq)!));
  }
  return { rarity: rarityOf(documents), words: new Set(documents.flatMap((d) => [...d])) };
}

function expectSame(actual: Rarity, log: ThreadLog, resolution: SeqResolution, seen: Set<string>): void {
  const expected = fromScratch(log, resolution);
  for (const word of expected.words) seen.add(word);
  expect(actual.documents).toBe(expected.rarity.documents);
  for (const word of seen)
    expect(actual.documentFrequency(word)).toBe(expected.rarity.documentFrequency(word));
}

describe("threadRarity", () => {
  it("counts what renders after any order of syncs: longer and shorter log values, plans along a lineage and back", () => {
    fc.assert(
      fc.property(
        arbitraryLogAndPlan({ maxOps: 20 }),
        fc.array(fc.nat(), { maxLength: 4 }),
        fc.array(fc.tuple(fc.nat(), fc.nat()), { minLength: 1, maxLength: 8 }),
        ({ log, plan }, cuts, visits) => {
          // Every value of one history (appended one message at a time, so all share its memos) and every plan
          // of a lineage ending in `plan`.
          const values = [ThreadLog.empty(log.threadId)];
          for (const message of log.messages)
            values.push(values[values.length - 1]!.appendTrusted([message]));
          const plans = [emptyPlan(log.threadId), ...chainOf(plan, cuts, log)];
          const seen = new Set<string>();
          for (const [v, p] of visits) {
            const value = values[v % values.length]!;
            const resolution = resolveForLog(plans[p % plans.length]!, value);
            expectSame(threadRarity(value, resolution), value, resolution, seen);
          }
        },
      ),
      fcParams(200),
    );
  });
});
