import { describe, expect, it } from "vitest";
import { call, result, text, validationError } from "../../test/support/builders.js";
import { simpleCounter } from "../../test/support/simple-counter.js";
import { renderHistory, runStrategy } from "../../test/support/strategy-context.js";
import { answers, asks, user } from "../../test/support/strategy-fixtures.js";
import type { MessageInput } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import { emptyPlan } from "../plan/compaction-plan.js";
import { validatePlan } from "../plan/validate-plan.js";
import { createOversizedExcerpt } from "./oversized-excerpt.js";

const counter = simpleCounter();
const numbered = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag} ${i}`).join("\n");

/** A task, a few small calls, then one huge result; 'u2' is the last user message. */
function hugeResultLog(): ThreadLog {
  const small = (n: number): MessageInput[] => [
    asks(`a${n}`, [call(`c${n}`, `{"n":${n}}`)]),
    answers(`r${n}`, [result(`c${n}`, `small output ${n}`)]),
  ];
  return ThreadLog.from("t", [
    { id: "s", role: "system", parts: [text("be brief")] },
    user("u1"),
    ...small(1),
    ...small(2),
    user("u2"),
    asks("a3", [call("c3", "{}"), call("c4", "{}")]),
    answers("r3", [result("c3", numbered(4000, "row")), result("c4", "tiny")]),
  ]);
}

const bodyOf = (prompt: ReturnType<typeof renderHistory>, id: string) =>
  prompt.messages.find((m) => m.provenance.sourceIds[0] === id)!.parts;

describe("createOversizedExcerpt", () => {
  it("cuts a message over the share of the target to its head and tail, keeping the rest verbatim", async () => {
    const log = hugeResultLog();
    const target = 8000;
    const { proposal, plan } = await runStrategy(createOversizedExcerpt(), log, emptyPlan("t"), { target });
    expect(proposal.actions.map((a) => [a.kind, ...a.span])).toEqual([["clear", "r3"]]);
    expect(validatePlan(plan, log)).toEqual([]);
    const prompt = renderHistory(log, plan, counter);
    const cut = prompt.messages.find((m) => m.provenance.sourceIds[0] === "r3")!;
    expect(cut.tokens).toBeLessThanOrEqual(target * 0.125);
    const [big, tiny] = bodyOf(prompt, "r3") as unknown as [{ content: string }, { content: string }];
    expect(big.content.startsWith("row 0\nrow 1\n")).toBe(true);
    expect(big.content.endsWith("row 3998\nrow 3999")).toBe(true);
    expect(big.content).toMatch(
      /\n\[… \d+ chars \(\d+ lines, ~\d+ tokens\) omitted; recall callId "c3" …\]\n/,
    );
    expect(tiny.content).toBe("tiny");
    // Every other message renders as it was; the call/result pairing holds.
    const others = prompt.messages.filter((m) => m !== cut);
    expect(others.every((m) => m.provenance.kind === "original")).toBe(true);
    expect(prompt.messages.length).toBe(log.length);
    expect(proposal.actions[0]!.reason).toMatch(/over 25 % of the 8000-token target/);
  });

  it("keeps the lines of the cut middle with the thread's rare words, errors or paths", async () => {
    const rows = Array.from({ length: 4000 }, (_, i) =>
      i === 2000 ? "Traceback: /srv/app/ledger/vault.py raised KeyError zephyrine-77" : `row ${i}`,
    );
    const log = ThreadLog.from("t", [
      user("u1"),
      asks("a1", [call("c1", "{}")]),
      answers("r1", [result("c1", rows.join("\n"))]),
      user("u2"),
    ]);
    const target = 8000;
    const { plan } = await runStrategy(createOversizedExcerpt(), log, emptyPlan("t"), { target });
    expect(validatePlan(plan, log)).toEqual([]);
    const prompt = renderHistory(log, plan, counter);
    const cut = prompt.messages.find((m) => m.provenance.sourceIds[0] === "r1")!;
    expect(cut.tokens).toBeLessThanOrEqual(target * 0.125);
    const [body] = bodyOf(prompt, "r1") as unknown as [{ content: string }];
    expect(body.content.startsWith("row 0\n")).toBe(true);
    expect(body.content.endsWith("row 3999")).toBe(true);
    expect(body.content).toMatch(/key lines? of it below/);
    expect(body.content).toContain("zephyrine-77");
  });

  it("leaves messages under the share alone, and acts under target only when told to", async () => {
    const log = hugeResultLog();
    const roomy = await runStrategy(createOversizedExcerpt(), log, emptyPlan("t"), { target: 1_000_000 });
    expect(roomy.proposal.actions).toEqual([]);
    expect(roomy.proposal.notes?.[0]?.code).toBe("nothing_to_do");
    const full = renderHistory(log, emptyPlan("t"), counter).tokenCount;
    const always = createOversizedExcerpt({ when: "always", share: 0.5, keepShare: 0.2 });
    const fits = await runStrategy(always, log, emptyPlan("t"), { target: full + 10 });
    expect(fits.proposal.actions.map((a) => a.span)).toEqual([["r3"]]);
  });

  it("never touches the system prompt, pinned messages, the last user message or pending calls", async () => {
    const huge = numbered(3000, "line");
    const log = ThreadLog.from("t", [
      { id: "s", role: "system", parts: [text(huge)] },
      { id: "p", role: "user", parts: [text(huge)], meta: { pinned: true } },
      asks("a1", [call("c1", "{}")]),
      answers("r1", [result("c1", "ok")]),
      user("u9", { pinned: false }),
      { id: "last", role: "user", parts: [text(huge)] },
      asks("a2", [text(huge), call("c2", "{}")]),
    ]);
    const { proposal } = await runStrategy(createOversizedExcerpt(), log, emptyPlan("t"), { target: 2000 });
    expect(proposal.actions).toEqual([]);
  });

  it("rejects bad options naming the field", () => {
    for (const [options, field] of [
      [{ share: 0 }, "share"],
      [{ share: 0.2, keepShare: 0.3 }, "keepShare"],
      [{ headShare: 2 }, "headShare"],
      [{ when: "sometimes" }, "when"],
      [{ shares: 0.1 }, "shares"],
    ] as const) {
      const error = validationError(() => createOversizedExcerpt(options as never));
      expect(error.where.field).toBe(field);
      expect(error.message).toContain("oversizedExcerpt");
    }
  });
});
