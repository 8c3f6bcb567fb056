/**
 * Property tests for the invariants of DESIGN.md that hold for the log and the plan layers (and rendering
 * determinism). Set FC_SEED to replay a failing run.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PlanValidationError, ValidationError } from "../src/errors/ledger-error.js";
import { computeGroups } from "../src/log/groups.js";
import type { MessageInput } from "../src/log/message.js";
import { ThreadLog } from "../src/log/thread-log.js";
import { type CompactionPlan, createPlan, emptyPlan, extendPlan } from "../src/plan/compaction-plan.js";
import { diffPlans } from "../src/plan/diff-plans.js";
import { parsePlan, serializePlan } from "../src/plan/plan-schema.js";
import { normalizePlan, resolvePlan } from "../src/plan/resolve-plan.js";
import { validatePlan } from "../src/plan/validate-plan.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import {
  addedDefect,
  arbitraryBatches,
  arbitraryInvalidPlanFor,
  arbitraryLog,
  arbitraryLogAndPlan,
  arbitraryPlanFor,
  badMessageCases,
  chainOf,
  defectSpecArb,
  fcParams,
  renderExtrasArb,
} from "./support/arbitrary-log.js";
import { referenceGoverningAction } from "./support/reference-renderer.js";
import { simpleCounter } from "./support/simple-counter.js";

const RUNS = 1000;

/** Everything observable about a log value, as JSON. */
function observe(log: ThreadLog): string {
  return JSON.stringify({
    threadId: log.threadId,
    length: log.length,
    messages: log.messages,
    pending: [...log.pendingCalls.entries()],
    groups: log.groups,
    turns: log.turns,
    links: log.messages.map((m) => [log.answersOf(m.seq), log.resultsOf(m.seq)]),
    byId: log.messages.map((m) => log.byId(m.id)?.seq),
  });
}

function expectDeeplyFrozen(value: unknown, path = "message"): void {
  if (value === null || typeof value !== "object") return;
  if (!Object.isFrozen(value)) throw new Error(`${path} is not frozen`);
  for (const [key, child] of Object.entries(value)) expectDeeplyFrozen(child, `${path}.${key}`);
}

function appendAll(log: ThreadLog, batches: ReadonlyArray<ReadonlyArray<MessageInput>>): ThreadLog {
  return batches.reduce((acc, batch) => acc.append(batch), log);
}

describe("the log is never mutated", () => {
  it("earlier values stay deep- and reference-equal while later values grow, branch and fail", () => {
    fc.assert(
      fc.property(arbitraryBatches(), fc.nat(), fc.nat(), (batches, splitPick, badPick) => {
        const split = splitPick % (batches.length + 1);
        const before = appendAll(ThreadLog.empty("t"), batches.slice(0, split));
        const rest = batches.slice(split);
        const snapshot = observe(before);
        const refs = [...before.messages];
        const messagesArray = before.messages;

        // grow linearly, branch from `before` twice, and fail a batch on both the old and the new value
        const grown = appendAll(before, rest);
        const branchA = appendAll(before, rest);
        const branchB = rest.length > 0 ? before.append(rest[0]!) : before;
        const bad = badMessageCases(refs[0]?.id);
        const badBatch = [...(rest[0] ?? []), bad[badPick % bad.length]!.input];
        for (const target of [before, grown, branchB]) {
          expect(() => target.append(badBatch)).toThrow(ValidationError);
        }
        // inputs handed to append are detached from the log
        const inputs = structuredClone(rest[0] ?? []) as MessageInput[];
        const fromInputs = before.append(inputs);
        for (const input of inputs) {
          (input as { role: string }).role = "mutated";
          (input.parts as unknown[]).length = 0;
        }

        expect(observe(before)).toBe(snapshot);
        expect(before.messages).toBe(messagesArray);
        expect(before.append([])).toBe(before);
        refs.forEach((m, seq) => {
          expect(before.at(seq)).toBe(m);
          expect(grown.at(seq)).toBe(m);
          expect(branchA.at(seq)).toBe(m);
          expectDeeplyFrozen(m);
        });
        for (const m of grown.messages) expectDeeplyFrozen(m);
        expect(Object.isFrozen(before.messages)).toBe(true);
        expect(before.at(before.length)).toBeUndefined();
        for (const m of grown.messages.slice(before.length)) expect(before.byId(m.id)).toBeUndefined();
        // the branches agree with each other and with a log built in one go
        const oneGo = observe(ThreadLog.from("t", batches.flat()));
        expect(observe(grown)).toBe(oneGo);
        expect(observe(branchA)).toBe(oneGo);
        expect(observe(fromInputs)).toBe(observe(before.append(rest[0] ?? [])));
      }),
      fcParams(RUNS),
    );
  });
});

describe("derived views", () => {
  it("groups extended batch by batch equal groups computed from scratch", () => {
    fc.assert(
      fc.property(arbitraryBatches(), fc.array(fc.boolean(), { maxLength: 12 }), (batches, looks) => {
        let log = ThreadLog.empty("t");
        batches.forEach((batch, i) => {
          log = log.append(batch);
          // look at the groups only after some batches, so extensions span one or several batches
          if (looks[i] === false && i < batches.length - 1) return;
          const scratch = computeGroups(log);
          expect(JSON.stringify(log.groups)).toBe(JSON.stringify(scratch.groups));
          for (let seq = 0; seq < log.length; seq++)
            expect(log.groupIndexOf(seq)).toBe(scratch.indexBySeq[seq]);
        });
      }),
      fcParams(RUNS),
    );
  });

  it("every earlier log value keeps its own groups and pinned seqs after later appends share the index", () => {
    fc.assert(
      fc.property(arbitraryBatches(), (batches) => {
        const values = [ThreadLog.empty("t")];
        for (const batch of batches) values.push(values[values.length - 1]!.append(batch));
        // Ask the newest value first, so the shared index is extended past every earlier value.
        for (const log of [...values].reverse()) {
          const scratch = computeGroups(log);
          expect(log.groupCount).toBe(scratch.groups.length);
          expect(JSON.stringify(scratch.groups.map((_, i) => log.groupAt(i)))).toBe(
            JSON.stringify(scratch.groups),
          );
          expect(JSON.stringify(log.groups)).toBe(JSON.stringify(scratch.groups));
          const pinned = log.messages
            .filter((m) => m.role === "system" || m.meta.pinned === true)
            .map((m) => m.seq);
          expect(log.pinnedSeqs).toEqual(pinned);
        }
      }),
      fcParams(RUNS),
    );
  });
});

describe("append is atomic", () => {
  it("a bad batch appends nothing, names the bad message and field, and a retry with the good part works", () => {
    fc.assert(
      fc.property(
        arbitraryBatches(),
        fc.nat(),
        fc.nat(),
        fc.nat(),
        (batches, splitPick, badPick, posPick) => {
          const split = splitPick % Math.max(1, batches.length);
          const log = appendAll(ThreadLog.empty("t"), batches.slice(0, split));
          const good = batches[split] ?? [];
          const cases = badMessageCases(log.messages.find((m) => m.id.startsWith("m"))?.id);
          const bad = cases[badPick % cases.length]!;
          const at = posPick % (good.length + 1);
          const badBatch = [...good.slice(0, at), bad.input, ...good.slice(at)];
          const snapshot = observe(log);
          let error: unknown;
          try {
            log.append(badBatch);
          } catch (e) {
            error = e;
          }
          expect(error, bad.why).toBeInstanceOf(ValidationError);
          const where = (error as ValidationError).where;
          expect(where.index, bad.why).toBe(at);
          expect(where.threadId).toBe("t");
          expect(typeof where.field, bad.why).toBe("string");
          expect(observe(log)).toBe(snapshot);
          const retried = log.append(good);
          expect(retried.length).toBe(log.length + good.length);
          expect(observe(retried)).toBe(observe(ThreadLog.from("t", batches.slice(0, split + 1).flat())));
        },
      ),
      fcParams(RUNS),
    );
  });
});

describe("rendering is deterministic", () => {
  it("same log + plan + options give identical JSON and hash (fresh counter, JSON round-tripped plan)", () => {
    fc.assert(
      fc.property(arbitraryLogAndPlan(), renderExtrasArb, ({ log, plan }, extras) => {
        const counter = simpleCounter();
        const first = renderPrompt(log, plan, { counter, ...extras });
        const again = renderPrompt(log, plan, { counter, ...extras });
        const fresh = renderPrompt(log, plan, { counter: simpleCounter(), ...extras });
        const roundTripped = renderPrompt(log, parsePlan(serializePlan(plan)), {
          counter: simpleCounter(),
          ...extras,
        });
        const inputs = log.messages.map(({ id, role, parts, meta }) => ({ id, role, parts, meta }));
        const rebuilt = renderPrompt(ThreadLog.from(log.threadId, inputs), plan, { counter, ...extras });
        const json = JSON.stringify(first);
        for (const other of [again, fresh, roundTripped, rebuilt]) {
          expect(JSON.stringify(other)).toBe(json);
          expect(other.hash).toBe(first.hash);
        }
        // nothing changed since `first`, so every token of the new render is an unchanged leading token
        const next = renderPrompt(log, plan, { counter, ...extras, previous: first });
        expect(next.unchangedLeadingTokens).toBe(first.tokenCount - counter.requestOverhead);
      }),
      fcParams(RUNS),
    );
  });
});

describe("plans", () => {
  it("plan JSON round-trips exactly", () => {
    fc.assert(
      fc.property(arbitraryLogAndPlan(), fc.constantFrom(undefined, 2), ({ plan }, indent) => {
        const text = serializePlan(plan, indent);
        const back = parsePlan(text);
        expect(back).toStrictEqual(plan);
        // Not byte-identical on the first round (zod re-emits record keys in schema order, see report), but a
        // parsed plan serializes to a fixed point.
        const canonical = serializePlan(back, indent);
        expect(serializePlan(parsePlan(canonical), indent)).toBe(canonical);
        expect(parsePlan(JSON.parse(text))).toStrictEqual(plan);
      }),
      fcParams(RUNS),
    );
  });

  it("normalizePlan is idempotent and keeps every decision; winners have the highest precedence", () => {
    fc.assert(
      fc.property(arbitraryLogAndPlan(), ({ log, plan }) => {
        const normalized = normalizePlan(plan);
        expect(normalizePlan(normalized)).toBe(normalized);
        expect(resolvePlan(normalized).overlaps).toEqual([]);
        const original = resolvePlan(plan);
        const resolved = resolvePlan(normalized);
        for (const m of log.messages) {
          const a = original.decisions.get(m.id);
          const b = resolved.decisions.get(m.id);
          expect(b?.kind ?? "include").toBe(a?.kind ?? "include");
          expect(b?.action.record).toStrictEqual(a?.action.record);
          // the winner, scanning every action: highest precedence, later among equals
          expect(a?.actionIndex ?? -1).toBe(referenceGoverningAction(plan, m.id));
        }
        for (const overlap of original.overlaps) {
          const claimants = plan.actions.flatMap((action, i) =>
            action.span.includes(overlap.messageId) ? [i] : [],
          );
          expect(overlap.winner).toBe(referenceGoverningAction(plan, overlap.messageId));
          expect([...overlap.losers].sort((x, y) => x - y)).toEqual(
            claimants.filter((c) => c !== overlap.winner),
          );
        }
        // an equivalent plan renders the same request
        const counter = simpleCounter();
        expect(renderPrompt(log, normalized, { counter }).hash).toBe(
          renderPrompt(log, plan, { counter }).hash,
        );
      }),
      fcParams(RUNS),
    );
  });

  it("valid random plans pass validatePlan", () => {
    const arb = arbitraryLog().chain((log) => arbitraryPlanFor(log).map((plan) => ({ log, plan })));
    fc.assert(
      fc.property(arb, ({ log, plan }) => {
        expect(validatePlan(plan, log)).toEqual([]);
      }),
      fcParams(RUNS),
    );
  });

  it("invalid plans are rejected with the right problem code, and renderPrompt refuses them", () => {
    const arb = arbitraryLog().chain((log) => arbitraryInvalidPlanFor(log).map((bad) => ({ log, bad })));
    fc.assert(
      fc.property(arb, ({ log, bad }) => {
        const codes = new Set(validatePlan(bad.plan, log).map((p) => p.code));
        expect([...codes], bad.why).toEqual([bad.code]);
        expect(() => renderPrompt(log, bad.plan, { counter: simpleCounter() })).toThrow(PlanValidationError);
      }),
      fcParams(RUNS),
    );
  });

  it("incremental validation (extendPlan of a plan known valid) reports an added defect like a full check", () => {
    const arb = fc.tuple(arbitraryLogAndPlan(), fc.array(fc.nat(), { maxLength: 3 }), defectSpecArb);
    fc.assert(
      fc.property(arb, ([{ log, plan }, cuts, d]) => {
        const chain = chainOf(plan, cuts, log);
        const last = chain[chain.length - 1]!;
        for (const step of chain) expect(validatePlan(step, log)).toEqual([]);
        const defect = addedDefect(log, last, d);
        fc.pre(defect !== null);
        const child = extendPlan(last, [defect!.action], log.length);
        const codes = new Set(validatePlan(child, log).map((p) => p.code));
        expect([...codes]).toEqual([defect!.code]);
        const flatCodes = new Set(validatePlan(createPlan(child), log).map((p) => p.code));
        expect([...flatCodes]).toEqual([defect!.code]);
        expect(() => renderPrompt(log, child, { counter: simpleCounter() })).toThrow(PlanValidationError);
      }),
      fcParams(RUNS),
    );
  });

  it("diffPlans(p, p) is empty and diffPlans(empty, p) lists exactly the messages p changes (no include actions)", () => {
    fc.assert(
      fc.property(arbitraryLogAndPlan(), ({ log, plan: withIncludes }) => {
        const plan = withoutIncludes(withIncludes);
        expect(diffPlans(plan, plan).changes).toEqual([]);
        expect(diffPlans(withIncludes, withIncludes).changes).toEqual([]);
        const expected = nonIncludeIds(log, plan);
        const diff = diffPlans(emptyPlan(log.threadId), plan, (id) => log.seqOf(id));
        expect(diff.changes.map((c) => c.messageId)).toEqual(expected);
        for (const change of diff.changes) {
          expect(change.from).toEqual({ kind: "include" });
          expect(change.to.kind).not.toBe("include");
        }
      }),
      fcParams(RUNS),
    );
  });

  // An explicit include sends the same as the default include, so the diff must not list it.
  it("diffPlans(empty, p) lists exactly the non-include messages, also when p has include actions", () => {
    fc.assert(
      fc.property(arbitraryLogAndPlan(), ({ log, plan }) => {
        const diff = diffPlans(emptyPlan(log.threadId), plan, (id) => log.seqOf(id));
        expect(diff.changes.map((c) => c.messageId)).toEqual(nonIncludeIds(log, plan));
      }),
      { ...fcParams(RUNS), examples: [[minimalIncludeCase()]] },
    );
  });
});

function withoutIncludes(plan: CompactionPlan): CompactionPlan {
  return createPlan({ ...plan, actions: plan.actions.filter((a) => a.kind !== "include") });
}

function nonIncludeIds(log: ThreadLog, plan: CompactionPlan): string[] {
  const resolved = resolvePlan(plan);
  return log.messages
    .filter((m) => (resolved.decisions.get(m.id)?.kind ?? "include") !== "include")
    .map((m) => m.id);
}

function minimalIncludeCase(): { log: ThreadLog; plan: CompactionPlan } {
  const log = ThreadLog.from("t", [{ id: "m0", role: "user", parts: [{ type: "text", text: "hi" }] }]);
  const plan = createPlan({
    threadId: "t",
    version: 1,
    basedOnSeq: 1,
    actions: [
      { kind: "include", span: ["m0"], record: { kind: "include" }, strategy: "pin", reason: "pinned" },
    ],
  });
  return { log, plan };
}
