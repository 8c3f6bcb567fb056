/**
 * Seq resolution (`resolveForLog`, the table every strategy and the renderer read) against the pure id-based
 * resolution of DESIGN.md (`resolvePlan`), on random logs and random spans: ids in and out of log order, repeated,
 * unknown and past `basedOnSeq`, and spans built from seqs (`spanOfSeqs`, which resolve through recorded runs
 * instead of id lookups). Set FC_SEED to replay a failing run.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ThreadLog } from "../src/log/thread-log.js";
import { type ActionKind, createPlan, extendPlan, type PlanAction } from "../src/plan/compaction-plan.js";
import { decisionAt, resolveForLog, type SeqResolution } from "../src/plan/resolve-for-log.js";
import { resolvePlan } from "../src/plan/resolve-plan.js";
import { recordedRuns, spanOfRuns, spanOfSeqs } from "../src/plan/span-seqs.js";
import { arbitraryLog, arbitraryLogInputs, fcParams } from "./support/arbitrary-log.js";
import { records } from "./support/builders.js";

const RUNS = 1000;
const kinds: ActionKind[] = ["include", "clear", "summarize", "externalize", "drop"];

/** One action's span: seqs of the log (possibly repeated, in any order) plus unknown ids, and how to build it. */
interface SpanSpec {
  readonly kind: ActionKind;
  readonly picks: ReadonlyArray<number>;
  readonly unknown: ReadonlyArray<number>;
  readonly order: "ascending" | "as-drawn";
  readonly fromSeqs: boolean;
}

const spanSpecArb: fc.Arbitrary<SpanSpec> = fc.record({
  kind: fc.constantFrom(...kinds),
  picks: fc.array(fc.nat(200), { maxLength: 12 }),
  unknown: fc.array(fc.nat(3), { maxLength: 2 }),
  order: fc.constantFrom("ascending", "ascending", "as-drawn"),
  fromSeqs: fc.boolean(),
});

function actionOf(log: ThreadLog, spec: SpanSpec): PlanAction {
  const seqs = log.length === 0 ? [] : spec.picks.map((p) => p % log.length);
  let span: string[];
  if (spec.fromSeqs) {
    span = spanOfSeqs(
      log,
      [...new Set(seqs)].sort((a, b) => a - b),
    );
  } else {
    const ordered = spec.order === "ascending" ? [...seqs].sort((a, b) => a - b) : seqs;
    span = ordered.map((seq) => log.at(seq)!.id);
    for (const u of spec.unknown) span.splice(u % (span.length + 1), 0, `unknown-${u}`);
  }
  return { kind: spec.kind, span, record: records[spec.kind], strategy: "prop", reason: "" } as PlanAction;
}

/** A random log with a plan of random spans (see `actionOf`) based on a random length up to the log's. */
const flatPlanArb = fc
  .tuple(arbitraryLog({ maxOps: 24 }), fc.array(spanSpecArb, { maxLength: 5 }), fc.nat(40))
  .map(([log, specs, slack]) => {
    const actions = specs.map((s) => actionOf(log, s));
    const basedOnSeq = Math.max(0, log.length - (slack % (log.length + 1)));
    return { log, plan: createPlan({ threadId: log.threadId, version: 1, basedOnSeq, actions }) };
  });

function table(log: ThreadLog, resolution: SeqResolution): Array<[string, number] | null> {
  return log.messages.map((m) => {
    const d = decisionAt(resolution, m.seq);
    return d === undefined ? null : [d.kind, d.actionIndex];
  });
}

/** The dropped seqs of a resolution as flat [start, end) runs, read from its table seq by seq. */
function runsOfTable(log: ThreadLog, resolution: SeqResolution): number[] {
  const runs: number[] = [];
  for (let seq = 0; seq < log.length; seq++) {
    if (decisionAt(resolution, seq)?.kind !== "drop") continue;
    if (runs.length > 0 && runs[runs.length - 1] === seq) runs[runs.length - 1] = seq + 1;
    else runs.push(seq, seq + 1);
  }
  return runs;
}

describe("resolveForLog agrees with resolvePlan (property)", () => {
  it("resolves a plan extended step by step (each step on a longer log) exactly like its flat copy", () => {
    fc.assert(
      fc.property(
        arbitraryLogInputs({ maxOps: 24 }),
        fc.array(fc.tuple(fc.array(spanSpecArb, { maxLength: 2 }), fc.nat(40)), { maxLength: 6 }),
        (inputs, steps) => {
          // One history, grown batch by batch: spans built from seqs keep resolving through their runs.
          let log = ThreadLog.from("thread-1", []);
          let plan = createPlan({ threadId: log.threadId, version: 0, basedOnSeq: 0, actions: [] });
          for (const [specs, grow] of steps) {
            const length = Math.min(inputs.length, log.length + (grow % 8));
            log = log.append(inputs.slice(log.length, length));
            const added = specs.map((spec) => actionOf(log, spec));
            plan = extendPlan(plan, added, length);
            const stepwise = resolveForLog(plan, log);
            const flat = resolveForLog(createPlan(plan), log);
            expect(table(log, stepwise)).toEqual(table(log, flat));
            expect([...stepwise.dropRuns]).toEqual([...flat.dropRuns]);
            expect([...stepwise.dropRuns]).toEqual(runsOfTable(log, stepwise));
          }
        },
      ),
      fcParams(RUNS),
    );
  });

  it("per seq below basedOnSeq: same winning kind and action, whatever the span order, repeats or unknown ids", () => {
    fc.assert(
      fc.property(flatPlanArb, ({ log, plan }) => {
        const { actions, basedOnSeq } = plan;
        const resolution = resolveForLog(plan, log);
        const byId = resolvePlan(plan);
        for (const m of log.messages) {
          const d = decisionAt(resolution, m.seq);
          if (m.seq >= basedOnSeq) {
            expect(d).toBeUndefined();
            continue;
          }
          const expected = byId.decisions.get(m.id);
          expect(d === undefined ? null : [d.kind, d.actionIndex]).toEqual(
            expected === undefined ? null : [expected.kind, expected.actionIndex],
          );
        }
        expect(runsOfTable(log, resolution)).toEqual([...resolution.dropRuns]);
        // Governed counts are what the table says, action by action.
        const counts = new Array<number>(actions.length).fill(0);
        for (const m of log.messages) {
          const d = decisionAt(resolution, m.seq);
          if (d !== undefined) counts[d.actionIndex]!++;
        }
        expect([...resolution.governed]).toEqual(counts);
      }),
      fcParams(RUNS),
    );
  });

  it("reports each repeated, unknown and future id of a span exactly as often as it occurs", () => {
    fc.assert(
      fc.property(flatPlanArb, ({ log, plan }) => {
        const { actions, basedOnSeq } = plan;
        const issues = resolveForLog(plan, log).spanIssues;
        const expected: string[] = [];
        actions.forEach((action, a) => {
          const seen = new Set<string>();
          for (const id of action.span) {
            const seq = log.seqOf(id);
            if (seq === undefined) {
              expected.push(`${a} unknown_id ${id}`);
              continue;
            }
            if (seen.has(id)) expected.push(`${a} duplicate_in_span ${id}`);
            seen.add(id);
            if (seq >= basedOnSeq) expected.push(`${a} future_id ${id}`);
          }
        });
        const got = issues.map((i) => `${i.actionIndex} ${i.code} ${i.messageId}`);
        expect(got.sort()).toEqual(expected.sort());
      }),
      fcParams(RUNS),
    );
  });

  it("resolves a span built from seqs exactly like a plain copy of its ids", () => {
    fc.assert(
      fc.property(arbitraryLog({ maxOps: 24 }), fc.array(spanSpecArb, { maxLength: 5 }), (log, specs) => {
        const actions = specs.map((s) => actionOf(log, { ...s, fromSeqs: true }));
        const copies = actions.map((a) => ({ ...a, span: [...a.span] }));
        for (const a of actions) if (a.span.length > 0) expect(recordedRuns(a.span, log)).toBeDefined();
        for (const a of copies) expect(recordedRuns(a.span, log)).toBeUndefined();
        const make = (list: PlanAction[]) =>
          createPlan({ threadId: log.threadId, version: 1, basedOnSeq: log.length, actions: list });
        expect(table(log, resolveForLog(make(actions), log))).toEqual(
          table(log, resolveForLog(make(copies), log)),
        );
      }),
      fcParams(RUNS),
    );
  });
});

describe("spanOfSeqs", () => {
  it("refuses seqs out of order, repeated or past the log, and forgets runs for another history", () => {
    fc.assert(
      fc.property(arbitraryLog({ maxOps: 8 }), arbitraryLog({ maxOps: 8 }), (log, other) => {
        fc.pre(log.length >= 2);
        expect(() => spanOfSeqs(log, [1, 0])).toThrow(RangeError);
        expect(() => spanOfSeqs(log, [0, 0])).toThrow(RangeError);
        expect(() => spanOfSeqs(log, [log.length])).toThrow(RangeError);
        const span = spanOfSeqs(log, [0, 1]);
        expect(span).toEqual([log.at(0)!.id, log.at(1)!.id]);
        expect([...recordedRuns(span, log)!]).toEqual([0, 2]);
        if (other.idTable() !== log.idTable()) expect(recordedRuns(span, other)).toBeUndefined();
      }),
      fcParams(200),
    );
  });

  it("builds a span of many runs as the ids of their seqs, and refuses runs that touch, overlap or leave the log", () => {
    fc.assert(
      fc.property(arbitraryLog({ maxOps: 24 }), fc.array(fc.boolean(), { maxLength: 80 }), (log, keep) => {
        const seqs = log.messages
          .map((m) => m.seq)
          .filter((seq) => keep[seq % Math.max(1, keep.length)] === true);
        const span = spanOfSeqs(log, seqs);
        expect(span).toEqual(seqs.map((seq) => log.at(seq)!.id));
        const runs = recordedRuns(span, log);
        if (seqs.length > 0) expect(runs).toBeDefined();
        const covered: number[] = [];
        for (let r = 0; r < (runs?.length ?? 0); r += 2)
          for (let q = runs![r]!; q < runs![r + 1]!; q++) covered.push(q);
        expect(covered).toEqual(seqs);
      }),
      fcParams(RUNS),
    );
    const log = ThreadLog.from("t", [
      { id: "a", role: "user", parts: [{ type: "text", text: "a" }] },
      { id: "b", role: "assistant", parts: [{ type: "text", text: "b" }] },
      { id: "c", role: "user", parts: [{ type: "text", text: "c" }] },
    ]);
    expect(spanOfRuns(log, [0, 1, 2, 3])).toEqual(["a", "c"]);
    expect(() => spanOfRuns(log, [0, 1, 1, 2])).toThrow(RangeError); // touching: one run written as two
    expect(() => spanOfRuns(log, [0, 2, 1, 3])).toThrow(RangeError);
    expect(() => spanOfRuns(log, [2, 4])).toThrow(RangeError);
    expect(() => spanOfRuns(log, [1, 1])).toThrow(RangeError);
  });
});
