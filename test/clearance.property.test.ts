/**
 * For random logs whose messages carry random sensitivities and random valid plans over them, a reader of any
 * clearance never receives content above it in any rendered request (OpenAI Chat, OpenAI Responses, Anthropic),
 * and every request, stubs included, stays valid for its provider (no orphaned call or result). Each message
 * carries a marker unique to it in its text, results and reasoning, so a leak is a marker in the request's JSON.
 * Set FC_SEED to replay.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { MessageInput, Part, Sensitivity } from "../src/log/message.js";
import { mayRead } from "../src/log/sensitivity.js";
import { ThreadLog } from "../src/log/thread-log.js";
import {
  type ProviderFormat,
  toProviderRequest,
  validateProviderRequest,
} from "../src/render/provider-rules.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import { type AboveClearancePolicy, withholdAboveClearance } from "../src/render/withhold-content.js";
import { arbitraryLogInputs, arbitraryPlanFor, fcParams } from "./support/arbitrary-log.js";
import { simpleCounter } from "./support/simple-counter.js";

const CLASSES: ReadonlyArray<Sensitivity> = ["public", "internal", "confidential", "restricted"];
const FORMATS: ReadonlyArray<ProviderFormat> = ["openai", "responses", "anthropic"];
const marker = (i: number) => `⟦secret-${i}⟧`;

/** The message with marker `i` in every text it carries (arguments stay JSON), and a class (none: internal). */
function marked(input: MessageInput, i: number, sensitivity: Sensitivity | undefined): MessageInput {
  const parts = input.parts.map((part): Part => {
    if (part.type === "text") return { ...part, text: `${part.text} ${marker(i)}` };
    if (part.type === "tool_result") return { ...part, content: `${part.content} ${marker(i)}` };
    if (part.type === "reasoning") return { ...part, text: `${part.text} ${marker(i)}` };
    return part;
  });
  return {
    ...input,
    parts,
    meta: { ...input.meta, ...(sensitivity === undefined ? {} : { sensitivity }) },
  };
}

const caseArb = arbitraryLogInputs().chain((inputs) => {
  const classes = fc.array(fc.option(fc.constantFrom(...CLASSES), { nil: undefined }), {
    minLength: inputs.length,
    maxLength: inputs.length,
  });
  return classes.chain((sensitivities) => {
    const log = ThreadLog.from(
      "t",
      inputs.map((input, i) => marked(input, i, sensitivities[i])),
    );
    return fc.record({
      log: fc.constant(log),
      sensitivities: fc.constant(sensitivities),
      plan: arbitraryPlanFor(log),
      clearance: fc.constantFrom(...CLASSES),
    });
  });
});

describe("clearance on rendered requests (property)", () => {
  it("no request carries content above the reader's clearance, and every request stays valid", () => {
    const counter = simpleCounter();
    fc.assert(
      fc.property(caseArb, ({ log, sensitivities, plan, clearance }) => {
        const rendered = renderPrompt(log, plan, { counter });
        const reader = { clearance, policy: "placeholder" as AboveClearancePolicy };
        const prompt = withholdAboveClearance(rendered, log, reader, { counter, what: "render" });
        const hidden = sensitivities.flatMap((s, i) => (mayRead(s ?? "internal", clearance) ? [] : [i]));
        if (hidden.length === 0) expect(prompt).toBe(rendered);
        expect(prompt.messages.map((m) => m.role)).toEqual(rendered.messages.map((m) => m.role));
        for (const format of FORMATS) {
          const request = toProviderRequest(format, prompt);
          // Stubs never make a request invalid (an empty log renders an empty, invalid request either way).
          const before = validateProviderRequest(format, toProviderRequest(format, rendered));
          expect(validateProviderRequest(format, request), format).toEqual(before);
          const json = JSON.stringify(request);
          for (const i of hidden) expect(json, `${format}: message ${i}`).not.toContain(marker(i));
        }
      }),
      fcParams(400),
    );
  });

  it("the refuse policy throws exactly when a placeholder would be needed", () => {
    const counter = simpleCounter();
    fc.assert(
      fc.property(caseArb, ({ log, plan, clearance }) => {
        const rendered = renderPrompt(log, plan, { counter });
        const stubbed = withholdAboveClearance(
          rendered,
          log,
          { clearance, policy: "placeholder" },
          { counter, what: "render" },
        );
        const refuse = () =>
          withholdAboveClearance(rendered, log, { clearance, policy: "refuse" }, { counter, what: "render" });
        if (stubbed === rendered) expect(refuse()).toBe(rendered);
        else expect(refuse).toThrow(/above|clearance/);
      }),
      fcParams(200),
    );
  });
});
