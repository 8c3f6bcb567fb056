/**
 * Every rendered request, put through each provider adapter, passes that provider's validator: no orphaned call
 * or result, Anthropic's alternation and tool_use/tool_result adjacency, and so on. Set FC_SEED to replay.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { emptyPlan } from "../src/plan/compaction-plan.js";
import {
  type ProviderFormat,
  toProviderRequest,
  validateAnthropicMessages,
  validateOpenAIChat,
  validateOpenAIResponses,
  validateProviderRequest,
} from "../src/render/provider-rules.js";
import { renderPrompt } from "../src/render/render-prompt.js";
import type { RenderedPrompt } from "../src/render/rendered-prompt.js";
import { arbitraryLogAndPlan, fcParams, fusedIdReuseLog, renderExtrasArb } from "./support/arbitrary-log.js";
import { simpleCounter } from "./support/simple-counter.js";

const RUNS = 1000;

/** Problems of every format for one rendered prompt, by format. */
function problemsOf(
  prompt: RenderedPrompt,
  cacheBreakpoints: ReadonlyArray<number>,
): Record<ProviderFormat, string[]> {
  const chat = toProviderRequest("openai", prompt);
  const responses = toProviderRequest("responses", prompt);
  const anthropic = toProviderRequest("anthropic", prompt, { cacheBreakpoints });
  const out = {
    openai: validateOpenAIChat(chat),
    responses: validateOpenAIResponses(responses),
    anthropic: validateAnthropicMessages(anthropic),
  };
  // the dispatcher agrees with the direct validators
  expect(validateProviderRequest("openai", chat)).toEqual(out.openai);
  expect(validateProviderRequest("responses", responses)).toEqual(out.responses);
  expect(validateProviderRequest("anthropic", anthropic)).toEqual(out.anthropic);
  return out;
}

describe("provider adapters on random renders", () => {
  it("every adapter's request passes its provider's validator", () => {
    // A request needs something to send: at least one non-system message (Anthropic takes system text apart).
    const arb = fc.tuple(arbitraryLogAndPlan(), renderExtrasArb, fc.array(fc.nat(60), { maxLength: 4 }));
    fc.assert(
      fc.property(arb, ([{ log, plan }, extras, breakpoints]) => {
        const prompt = renderPrompt(log, plan, { counter: simpleCounter(), ...extras });
        fc.pre(prompt.messages.some((m) => m.role !== "system"));
        const cacheBreakpoints = breakpoints.map((b) => b % prompt.messages.length);
        const problems = problemsOf(prompt, cacheBreakpoints);
        expect(problems).toEqual({ openai: [], responses: [], anthropic: [] });
        // adapters are deterministic too
        expect(JSON.stringify(toProviderRequest("anthropic", prompt, { cacheBreakpoints }))).toBe(
          JSON.stringify(toProviderRequest("anthropic", prompt, { cacheBreakpoints })),
        );
      }),
      fcParams(RUNS),
    );
  });

  it("the rendered token count is the sum of per-message tokens plus the request overhead", () => {
    fc.assert(
      fc.property(arbitraryLogAndPlan(), renderExtrasArb, ({ log, plan }, extras) => {
        const counter = simpleCounter();
        const prompt = renderPrompt(log, plan, { counter, ...extras });
        let sum = 0;
        for (const m of prompt.messages) {
          expect(m.tokens).toBe(counter.countMessage({ role: m.role, parts: m.parts }));
          sum += m.tokens;
        }
        expect(prompt.tokenCount).toBe(sum + counter.requestOverhead);
      }),
      fcParams(RUNS),
    );
  });

  // Regression: a fused tool message whose call id was reused once produced a duplicated, orphaned result.
  it("requests stay valid when a tool message answers two assistant messages sharing a call id", () => {
    const log = fusedIdReuseLog();
    const prompt = renderPrompt(log, emptyPlan(log.threadId), { counter: simpleCounter() });
    expect(problemsOf(prompt, [])).toEqual({ openai: [], responses: [], anthropic: [] });
  });
});
