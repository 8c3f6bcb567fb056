/**
 * Differential test: the optimized `renderPrompt` against the naive reference renderer in
 * `support/reference-renderer.ts`, message for message (role, parts, provenance). Set FC_SEED to replay.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ThreadLog } from "../src/log/thread-log.js";
import { createPlan } from "../src/plan/compaction-plan.js";
import { validatePlan } from "../src/plan/validate-plan.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import type { RenderedPrompt } from "../src/render/rendered-prompt.js";
import { arbitraryLogAndPlan, chainOf, fcParams, renderExtrasArb } from "./support/arbitrary-log.js";
import { type ReferenceMessage, referenceRender } from "./support/reference-renderer.js";
import { simpleCounter } from "./support/simple-counter.js";

const RUNS = 1000;

const shape = (prompt: RenderedPrompt) =>
  prompt.messages.map(({ role, parts, provenance }) => ({ role, parts, provenance }));

/** The stable prefix by its definition: the leading run of system messages and summaries, pointers, drop markers. */
function referenceStablePrefixEnd(messages: ReadonlyArray<ReferenceMessage>): number {
  let end = -1;
  while (end + 1 < messages.length) {
    const m = messages[end + 1]!;
    const standIn = ["summary", "pointer", "drop_marker"].includes(m.provenance.kind);
    if (m.role !== "system" && !standIn) break;
    end += 1;
  }
  return end;
}

/** Tokens of the leading messages of `current` equal (role, parts, provenance) to those of `previous`. */
function referenceUnchangedTokens(previous: RenderedPrompt, current: RenderedPrompt): number {
  let tokens = 0;
  for (let i = 0; i < Math.min(previous.messages.length, current.messages.length); i++) {
    if (JSON.stringify(shape(previous)[i]) !== JSON.stringify(shape(current)[i])) break;
    tokens += current.messages[i]!.tokens;
  }
  return tokens;
}

describe("renderPrompt matches the reference renderer", () => {
  it("on random logs, valid plans, both pending modes, injections and rehydrations", () => {
    const arb = arbitraryLogAndPlan();
    fc.assert(
      fc.property(arb, renderExtrasArb, ({ log, plan }, extras) => {
        const counter = simpleCounter();
        const actual = renderPrompt(log, plan, { counter, ...extras });
        const expected = referenceRender(log, plan, extras);
        expect(shape(actual)).toEqual(expected);
        expect(actual.stablePrefixEnd).toBe(referenceStablePrefixEnd(expected));
        // the memo of a reused counter must not change anything
        expect(shape(renderPrompt(log, plan, { counter, ...extras }))).toEqual(shape(actual));
      }),
      fcParams(RUNS),
    );
  });

  it("when the log keeps growing under the same plan (memoized counter, previous render)", () => {
    const arb = fc.tuple(arbitraryLogAndPlan(), fc.nat(), renderExtrasArb);
    fc.assert(
      fc.property(arb, ([{ log, plan }, cutPick, extras]) => {
        // the plan is valid for a prefix of the log as long as it mentions only messages of that prefix
        const counter = simpleCounter();
        const cut = Math.max(plan.basedOnSeq, cutPick % (log.length + 1));
        const inputs = log.messages.map(({ id, role, parts, meta }) => ({ id, role, parts, meta }));
        const prefix = ThreadLog.from(log.threadId, inputs.slice(0, cut));
        // a clear may name a call whose result comes after basedOnSeq: such a plan is not valid for the prefix
        fc.pre(validatePlan(plan, prefix).length === 0);
        const grown = prefix.append(inputs.slice(cut));
        const early = renderPrompt(prefix, plan, { counter, ...extras });
        expect(shape(early)).toEqual(referenceRender(prefix, plan, extras));
        const late = renderPrompt(grown, plan, { counter, ...extras, previous: early });
        expect(shape(late)).toEqual(referenceRender(grown, plan, extras));
        expect(late.unchangedLeadingTokens).toBe(referenceUnchangedTokens(early, late));
        // and in the other order: the memo filled by the longer log must not leak into the shorter one
        const fresh = simpleCounter();
        renderPrompt(grown, plan, { counter: fresh, ...extras });
        expect(shape(renderPrompt(prefix, plan, { counter: fresh, ...extras }))).toEqual(shape(early));
      }),
      fcParams(RUNS),
    );
  });

  it("for plans built step by step with extendPlan (incremental resolution and validation)", () => {
    const arb = fc.tuple(
      arbitraryLogAndPlan(),
      fc.array(fc.nat(), { maxLength: 3 }),
      fc.nat(),
      renderExtrasArb,
    );
    fc.assert(
      fc.property(arb, ([{ log, plan }, cuts, cutPick, extras]) => {
        const chain = chainOf(plan, cuts, log);
        const counter = simpleCounter();
        const inputs = log.messages.map(({ id, role, parts, meta }) => ({ id, role, parts, meta }));
        const cut = Math.max(plan.basedOnSeq, cutPick % (log.length + 1));
        const prefix = ThreadLog.from(log.threadId, inputs.slice(0, cut));
        fc.pre(chain.every((p) => validatePlan(createPlan(p), prefix).length === 0));
        const grown = prefix.append(inputs.slice(cut));
        // in the order a harness meets them: each step on the short log, then the grown log
        for (const target of [prefix, grown]) {
          for (const step of chain) {
            expect(validatePlan(step, target)).toEqual([]);
            const actual = renderPrompt(target, step, { counter, ...extras });
            expect(shape(actual)).toEqual(referenceRender(target, step, extras));
          }
        }
        const flat = renderPrompt(grown, createPlan(plan), { counter, ...extras });
        expect(renderPrompt(grown, chain[chain.length - 1]!, { counter, ...extras }).hash).toBe(flat.hash);
      }),
      fcParams(RUNS),
    );
  });
});
