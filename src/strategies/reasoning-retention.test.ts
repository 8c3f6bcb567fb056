import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fcParams } from "../../test/support/arbitrary-log.js";
import { call, result, text } from "../../test/support/builders.js";
import { runStrategy } from "../../test/support/strategy-context.js";
import { ValidationError } from "../errors/ledger-error.js";
import type { MessageInput, Part } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import { emptyPlan, extendPlan } from "../plan/compaction-plan.js";
import { validatePlan } from "../plan/validate-plan.js";
import { toProviderRequest, validateProviderRequest } from "../render/provider-rules.js";
import { renderPrompt } from "../render/render-prompt.js";
import { createMessageCounter } from "../tokens/message-counter.js";
import type { Tokenizer } from "../tokens/tokenizer.js";
import { createReasoningRetention } from "./reasoning-retention.js";

const words: Tokenizer = { id: "words", count: (s) => s.split(/\s+/).filter(Boolean).length };
const anthropic = createMessageCounter(words, "anthropic");
const openai = createMessageCounter(words, "openai");

const thought = (t: string, signed = true): Part => ({
  type: "reasoning",
  text: t,
  ...(signed ? { signature: `sig-${t.length}` } : {}),
});
const long = "weigh the options one by one before acting on any of them";

/** Turn n: a question, signed reasoning alone, the call it led to, its result, an answer with its own thinking. */
function turn(n: number, signed = true): MessageInput[] {
  return [
    { id: `u${n}`, role: "user", parts: [text(`question ${n}`)] },
    { id: `r${n}`, role: "assistant", parts: [thought(`${long} ${n}`, signed)] },
    { id: `a${n}`, role: "assistant", parts: [call(`c${n}`)] },
    { id: `t${n}`, role: "tool", parts: [result(`c${n}`, `out ${n}`)] },
    { id: `f${n}`, role: "assistant", parts: [thought(`${long} again ${n}`, signed), text(`answer ${n}`)] },
  ];
}

const logOf = (turns: number, signed = true) =>
  ThreadLog.from("t", Array.from({ length: turns }, (_, n) => turn(n + 1, signed)).flat());

describe("createReasoningRetention", () => {
  it("refuses bad options naming the field", () => {
    expect(() => createReasoningRetention({ keepTurns: 0 })).toThrow(ValidationError);
    expect(() => createReasoningRetention({ keepTurns: 0 })).toThrow(/keepTurns/);
    expect(() => createReasoningRetention({ keepTurn: 2 } as never)).toThrow(/keepTurn/);
  });

  it("leaves out the reasoning of turns older than keepTurns and keeps everything else", async () => {
    const log = logOf(3);
    const { proposal, plan } = await runStrategy(createReasoningRetention(), log, emptyPlan("t"), {
      counter: anthropic,
    });
    expect(proposal.actions.map((a) => [a.kind, ...a.span])).toEqual([["clear", "r1", "f1", "r2", "f2"]]);
    expect(validatePlan(plan, log)).toEqual([]);
    const sent = renderPrompt(log, plan, { counter: anthropic }).messages;
    const ids = sent.flatMap((m) => [...m.provenance.sourceIds]);
    // Reasoning-only messages of old turns are not sent; their calls, results and answers are, verbatim but for
    // the reasoning; the current turn keeps all of its thinking.
    expect(ids).toEqual(["u1", "a1", "t1", "f1", "u2", "a2", "t2", "f2", "u3", "r3", "a3", "t3", "f3"]);
    const f1 = sent.find((m) => m.provenance.sourceIds.includes("f1"))!;
    expect(f1.parts).toEqual([text("answer 1")]);
    const f3 = sent.find((m) => m.provenance.sourceIds.includes("f3"))!;
    expect(f3.parts).toEqual(log.byId("f3")!.parts);
    // Counted: the request is smaller by what the reasoning cost.
    const before = renderPrompt(log, emptyPlan("t"), { counter: anthropic }).tokenCount;
    expect(renderPrompt(log, plan, { counter: anthropic }).tokenCount).toBeLessThan(before);
    // Nothing more to do under the plan that took it.
    expect(
      (await runStrategy(createReasoningRetention(), log, plan, { counter: anthropic })).proposal.actions,
    ).toEqual([]);
  });

  it("keeps the newest N turns' reasoning with keepTurns N", async () => {
    const { proposal } = await runStrategy(
      createReasoningRetention({ keepTurns: 2 }),
      logOf(3),
      emptyPlan("t"),
      {
        counter: anthropic,
      },
    );
    expect(proposal.actions.map((a) => a.span)).toEqual([["r1", "f1"]]);
  });

  it("proposes nothing for reasoning that is not sent, so costs nothing", async () => {
    const unsigned = await runStrategy(createReasoningRetention(), logOf(3, false), emptyPlan("t"), {
      counter: anthropic,
    });
    expect(unsigned.proposal.actions).toEqual([]);
    const chat = await runStrategy(createReasoningRetention(), logOf(3), emptyPlan("t"), { counter: openai });
    expect(chat.proposal.actions).toEqual([]);
  });

  it("leaves alone messages the plan already changes", async () => {
    const log = logOf(2);
    const other = extendPlan(
      emptyPlan("t"),
      [
        {
          kind: "drop",
          span: ["r1", "a1", "t1"],
          record: { kind: "drop", reason: "test" },
          strategy: "x",
          reason: "",
        },
      ],
      log.length,
    );
    const { proposal } = await runStrategy(createReasoningRetention(), log, other, { counter: anthropic });
    expect(proposal.actions.map((a) => a.span)).toEqual([["f1"]]);
  });

  it("on random turns: valid plans, a smaller request, and a valid Anthropic request with thinking on", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.boolean(), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 3 }),
        async (signs, keepTurns) => {
          const log = ThreadLog.from(
            "t",
            signs.flatMap((signed, n) => turn(n + 1, signed)),
          );
          const { plan } = await runStrategy(createReasoningRetention({ keepTurns }), log, emptyPlan("t"), {
            counter: anthropic,
          });
          expect(validatePlan(plan, log)).toEqual([]);
          const out = renderPrompt(log, plan, { counter: anthropic });
          expect(out.tokenCount).toBeLessThanOrEqual(
            renderPrompt(log, emptyPlan("t"), { counter: anthropic }).tokenCount,
          );
          const request = {
            ...toProviderRequest("anthropic", out),
            thinking: { type: "enabled" as const, budget_tokens: 1024 },
          };
          // (Unsigned reasoning is never sent, so a kept turn of it cannot satisfy the thinking rule anyway.)
          if (signs.slice(-keepTurns).every(Boolean))
            expect(validateProviderRequest("anthropic", request)).toEqual([]);
          // The kept turns' signed reasoning is all still there.
          const keptFrom = log.turns[Math.max(0, log.turns.length - keepTurns)]!.startSeq;
          const sent = JSON.stringify(out.messages);
          for (const m of log.messages.slice(keptFrom))
            for (const p of m.parts) if (p.type === "reasoning") expect(sent).toContain(p.text);
        },
      ),
      fcParams(60),
    );
  });
});
