import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CandidateQueue } from "./candidate-queue.js";

const POS = CandidateQueue.POS;

type Op = { kind: "push"; rank: number; start: number } | { kind: "pop" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant("push" as const),
    rank: fc.integer({ min: 0, max: 40 }),
    start: fc.nat(200),
  }),
  fc.constant({ kind: "pop" as const }),
);

describe("CandidateQueue", () => {
  it("pops in (rank, start) order and returns -1 when empty", () => {
    const q = new CandidateQueue();
    q.reset(4, 100);
    q.push(7, 3);
    q.push(2, 9);
    q.push(7, 1);
    q.push(2, 4);
    expect([q.pop(), q.pop(), q.pop(), q.pop(), q.pop()]).toEqual([
      2 * POS + 4,
      2 * POS + 9,
      7 * POS + 1,
      7 * POS + 3,
      -1,
    ]);
  });

  it("behaves like a sorted list under any interleaving of pushes and pops, growing past its reserve", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 300 }), (ops) => {
        const q = new CandidateQueue();
        q.reset(2, 41);
        const model: number[] = [];
        for (const op of ops) {
          if (op.kind === "push") {
            q.push(op.rank, op.start);
            model.push(op.rank * POS + op.start);
            continue;
          }
          model.sort((a, b) => a - b);
          expect(q.pop()).toBe(model.length === 0 ? -1 : model.shift());
        }
        model.sort((a, b) => a - b);
        for (const key of model) expect(q.pop()).toBe(key);
        expect(q.pop()).toBe(-1);
      }),
      { numRuns: 300 },
    );
  });

  it("is reusable after reset and shrink", () => {
    const q = new CandidateQueue();
    q.reset(1, 10);
    for (let i = 0; i < 1000; i++) q.push(i % 10, i);
    q.shrink(8);
    q.reset(1, 10);
    q.push(5, 5);
    expect(q.pop()).toBe(5 * POS + 5);
    expect(q.pop()).toBe(-1);
  });
});
