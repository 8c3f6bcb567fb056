import { describe, expect, it } from "vitest";
import { call, result, text } from "../../test/support/builders.js";
import { simpleCounter } from "../../test/support/simple-counter.js";
import { renderHistory, runStrategy, strategyContext } from "../../test/support/strategy-context.js";
import { BudgetInfeasibleError } from "../errors/ledger-error.js";
import type { MessageInput } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import { emptyPlan, extendPlan } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog } from "../plan/resolve-for-log.js";
import { validatePlan } from "../plan/validate-plan.js";
import { createHardFallback, protectedGroups } from "./hard-fallback.js";

const counter = simpleCounter();

/** System, one user request, `n` tool rounds with `size`-character results, then optionally a new user turn. */
function run(n: number, size = 400, newTurn = false): MessageInput[] {
  const out: MessageInput[] = [
    { id: "sys", role: "system", parts: [text("Be careful.")] },
    { id: "u0", role: "user", parts: [text("Fix the build.")] },
  ];
  for (let i = 0; i < n; i++) {
    out.push({ id: `a${i}`, role: "assistant", parts: [text(`step ${i}`), call(`c${i}`, `{"i":${i}}`)] });
    out.push({ id: `t${i}`, role: "tool", parts: [result(`c${i}`, "r".repeat(size))] });
  }
  if (newTurn) out.push({ id: "u1", role: "user", parts: [text("Now the docs.")] });
  return out;
}

const tokensOf = (log: ThreadLog, plan: ReturnType<typeof emptyPlan>) =>
  renderHistory(log, plan, counter).tokenCount;
const kindAt = (log: ThreadLog, plan: ReturnType<typeof emptyPlan>, id: string) =>
  decisionAt(resolveForLog(plan, log), log.seqOf(id)!)?.kind;

describe("createHardFallback", () => {
  it("protects system, the last user turn and pending calls; with lastUserMessage only the message itself", () => {
    const log = ThreadLog.from("t", [...run(3), { id: "late", role: "assistant", parts: [call("cp")] }]);
    const turn = protectedGroups(log, "lastTurn");
    const message = protectedGroups(log, "lastUserMessage");
    expect([...turn].every((k) => k === 1)).toBe(true);
    expect(message[log.groupIndexOf(log.seqOf("a0")!)]).toBe(0);
    expect(message[log.groupIndexOf(log.seqOf("late")!)]).toBe(1);
    expect(message[log.groupIndexOf(log.seqOf("u0")!)]).toBe(1);
  });

  it("measures each candidate cut once, across the goal and target bisections", async () => {
    const log = ThreadLog.from("t", run(40, 400, true));
    const ctx = strategyContext(log, emptyPlan("t"), { target: 3_000, goal: 50 });
    const spans: string[] = [];
    const measure = ctx.measure;
    const proposal = await createHardFallback().propose({
      ...ctx,
      measure: (p) => {
        spans.push(p.actions.map((a) => a.span.join(",")).join("|"));
        return measure(p);
      },
    });
    expect(proposal.actions.length).toBeGreaterThan(0);
    expect(new Set(spans).size).toBe(spans.length);
  });

  it("fits when a call's results arrive after a later group (its measurements are not mixed up)", async () => {
    // An assistant text sits between a call and its results: in log order the droppable groups go g, g+1, g, g.
    const log = ThreadLog.from("t", [
      { id: "sys", role: "system", parts: [text("Be careful.")] },
      { id: "a1", role: "assistant", parts: [call("c0"), call("c1")] },
      { id: "a2", role: "assistant", parts: [text("w".repeat(800))] },
      { id: "t1", role: "tool", parts: [result("c0", "r")] },
      { id: "t2", role: "tool", parts: [result("c1", "s")] },
      { id: "u1", role: "user", parts: [text("And now?")] },
    ]);
    // Dropping the small call group alone does not fit; the long text after it must go too.
    const target = tokensOf(log, emptyPlan("t")) - 100;
    const { plan } = await runStrategy(createHardFallback(), log, emptyPlan("t"), { target, goal: target });
    expect(validatePlan(plan, log)).toEqual([]);
    expect(tokensOf(log, plan)).toBeLessThanOrEqual(target);
    expect(kindAt(log, plan, "a2")).toBe("drop");
  });

  it("drops the oldest groups of earlier turns down to the goal, by the renderer's count", async () => {
    const log = ThreadLog.from("t", run(12, 400, true));
    const { plan } = await runStrategy(createHardFallback(), log, emptyPlan("t"), { target: 800, goal: 600 });
    expect(validatePlan(plan, log)).toEqual([]);
    expect(tokensOf(log, plan)).toBeLessThanOrEqual(600);
    expect(kindAt(log, plan, "a0")).toBe("drop");
    expect(kindAt(log, plan, "u1")).toBeUndefined();
    expect(kindAt(log, plan, "a11")).toBeUndefined();
  });

  it("spares summarized spans while dropping other groups is enough", async () => {
    const log = ThreadLog.from("t", run(12, 400, true));
    const summary = extendPlan(
      emptyPlan("t"),
      [
        {
          kind: "summarize",
          span: ["a0", "t0", "a1", "t1", "a2", "t2"],
          record: { kind: "summarize", summary: "three builds ran", summarizerId: "x", promptVersion: "1" },
          strategy: "summarize",
          reason: "test",
        },
      ],
      log.length,
    );
    const { plan } = await runStrategy(createHardFallback(), log, summary, { target: 900, goal: 700 });
    expect(kindAt(log, plan, "a0")).toBe("summarize");
    expect(kindAt(log, plan, "a3")).toBe("drop");
    expect(tokensOf(log, plan)).toBeLessThanOrEqual(700);
  });

  it("does not drop the newest droppable group for the goal when the target keeps it", async () => {
    const log = ThreadLog.from("t", run(6, 800));
    const fallback = createHardFallback({ protect: "lastUserMessage" });
    const rendered = renderHistory(log, emptyPlan("t"), counter).messages;
    const head = counter.requestOverhead + rendered[0]!.tokens + rendered[1]!.tokens;
    const newest = rendered.slice(-2).reduce((n, m) => n + m.tokens, 0);
    // The goal is reachable only by dropping every droppable group; the target keeps the newest one.
    const { plan } = await runStrategy(fallback, log, emptyPlan("t"), {
      target: head + newest + 20,
      goal: head + 5,
    });
    expect(kindAt(log, plan, "a4")).toBe("drop");
    expect(kindAt(log, plan, "a5")).toBeUndefined();
    expect(tokensOf(log, plan)).toBeLessThanOrEqual(head + newest + 20);
  });

  it("drops the oldest calls of a last turn that cannot fit whole, then stubs, and says by how much when even that fails", async () => {
    const log = ThreadLog.from("t", run(8, 2_000));
    const { plan } = await runStrategy(createHardFallback(), log, emptyPlan("t"), {
      target: 3_000,
      goal: 2_500,
    });
    // One turn: its user message (the task) and the newest call stay, the oldest calls go first.
    expect(kindAt(log, plan, "a0")).toBe("drop");
    expect(kindAt(log, plan, "a7")).toBeUndefined();
    expect(tokensOf(log, plan)).toBeLessThanOrEqual(3_000);
    const stubbed = await runStrategy(createHardFallback(), log, emptyPlan("t"), {
      target: 300,
      goal: 250,
    });
    // Nothing left to drop is enough: the newest call's bodies are stubbed, its pairing kept.
    expect(kindAt(log, stubbed.plan, "t7")).toBe("clear");
    expect(kindAt(log, stubbed.plan, "a0")).toBe("drop");
    expect(tokensOf(log, stubbed.plan)).toBeLessThanOrEqual(300);
    const error = await runStrategy(createHardFallback(), log, emptyPlan("t"), {
      target: 20,
      goal: 10,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BudgetInfeasibleError);
    expect((error as Error).message).toMatch(/over by \d+/);
  });

  it("drops groups by durability class, least durable first, oldest first within a class", async () => {
    const classes = [undefined, "ephemeral", "anchoring", "non-replayable", "replayable"] as const;
    const base = run(15, 400, true);
    const classOf = (i: number) => classes[i % classes.length];
    const log = ThreadLog.from(
      "t",
      base.map((m) => {
        const i = m.id?.startsWith("t") ? Number(m.id.slice(1)) : -1;
        const d = i >= 0 ? classOf(i) : undefined;
        return d === undefined ? m : { ...m, meta: { durability: d } };
      }),
    );
    // The drop order the classes give: ephemeral, then unclassed and replayable, then anchoring, then
    // non-replayable; oldest first within each.
    const ranks: Record<string, number> = { ephemeral: 0, anchoring: 2, "non-replayable": 3 };
    const rank = (i: number) => ranks[classOf(i) ?? "replayable"] ?? 1;
    const order = [...Array(15).keys()].sort((a, b) => rank(a) - rank(b) || a - b);
    const full = tokensOf(log, emptyPlan("t"));
    for (const share of [0.85, 0.6, 0.4, 0.25]) {
      const target = Math.floor(full * share);
      const { plan } = await runStrategy(createHardFallback(), log, emptyPlan("t"), { target, goal: target });
      expect(validatePlan(plan, log)).toEqual([]);
      expect(tokensOf(log, plan)).toBeLessThanOrEqual(target);
      const dropped = order.map((i) => kindAt(log, plan, `a${i}`) === "drop");
      const count = dropped.filter(Boolean).length;
      expect(count).toBeGreaterThan(0);
      // Exactly a prefix of the order is gone.
      expect(dropped).toEqual(order.map((_, k) => k < count));
    }
  });

  it("stubs a non-replayable result of the protected turn only after every other body, and stamps replayable ones", async () => {
    const log = ThreadLog.from("t", [
      { id: "sys", role: "system", parts: [text("Be careful.")] },
      { id: "u0", role: "user", parts: [text("Book it.")] },
      {
        id: "a0",
        role: "assistant",
        parts: [call("c0", "{}", "book_flight"), call("c1", "{}", "read_file"), call("c2", "{}", "bash")],
      },
      { id: "t0", role: "tool", parts: [result("c0", "confirmation ".repeat(60))] },
      { id: "t1", role: "tool", parts: [result("c1", "line\n".repeat(150))], meta: { etag: "v7" } },
      { id: "t2", role: "tool", parts: [result("c2", "out ".repeat(150))] },
    ]);
    const full = tokensOf(log, emptyPlan("t"));
    const { plan } = await runStrategy(createHardFallback(), log, emptyPlan("t"), {
      target: full - 200,
      goal: full - 200,
    });
    expect(validatePlan(plan, log)).toEqual([]);
    expect(kindAt(log, plan, "t0")).toBeUndefined();
    expect(kindAt(log, plan, "t1")).toBe("clear");
    const shown = renderHistory(log, plan, counter).messages.map((m) => JSON.stringify(m.parts));
    expect(shown.join("\n")).toContain('replayable, etag \\"v7\\"');
    // With room for nothing else, the booking confirmation is stubbed too rather than failing the turn.
    const tight = await runStrategy(createHardFallback(), log, emptyPlan("t"), { target: 90, goal: 90 });
    expect(kindAt(log, tight.plan, "t0")).toBe("clear");
    expect(tokensOf(log, tight.plan)).toBeLessThanOrEqual(90);
  });

  it("gives up a non-replayable group only after every other droppable group", async () => {
    const log = ThreadLog.from("t", [
      { id: "sys", role: "system", parts: [text("Be careful.")] },
      { id: "u0", role: "user", parts: [text("Book it.")] },
      { id: "a0", role: "assistant", parts: [call("c0", "{}", "book_flight")] },
      { id: "t0", role: "tool", parts: [result("c0", "confirmation ".repeat(60))] },
      { id: "a1", role: "assistant", parts: [call("c1", "{}", "read_file")] },
      { id: "t1", role: "tool", parts: [result("c1", "line\n".repeat(150))] },
      { id: "a2", role: "assistant", parts: [call("c2", "{}", "bash")] },
      { id: "t2", role: "tool", parts: [result("c2", "out ".repeat(150))] },
      { id: "a3", role: "assistant", parts: [text("done")] },
    ]);
    const full = tokensOf(log, emptyPlan("t"));
    const { plan } = await runStrategy(createHardFallback(), log, emptyPlan("t"), {
      target: full - 200,
      goal: full - 200,
    });
    expect(kindAt(log, plan, "a0")).toBeUndefined();
    expect(kindAt(log, plan, "a1")).toBe("drop");
  });

  it("with markDrops, leaves a marker where its dropped run begins, paid for in what it measures", async () => {
    const log = ThreadLog.from("t", run(12, 400, true));
    const plain = await runStrategy(createHardFallback(), log, emptyPlan("t"), { target: 800, goal: 600 });
    expect(plain.proposal.actions.some((a) => a.kind === "drop" && a.record.marker === true)).toBe(false);
    const { proposal, plan } = await runStrategy(
      createHardFallback({ markDrops: true }),
      log,
      emptyPlan("t"),
      {
        target: 800,
        goal: 600,
      },
    );
    const drop = proposal.actions.find((a) => a.kind === "drop")!;
    expect(drop.record).toMatchObject({ kind: "drop", marker: true });
    const prompt = renderHistory(log, plan, counter);
    const markers = prompt.messages.filter((m) => m.provenance.kind === "drop_marker");
    expect(markers).toHaveLength(1);
    expect(markers[0]!.parts).toEqual([
      text(`[${drop.span.length} earlier messages left out; recall by query]`),
    ]);
    expect(markers[0]!.provenance.sourceIds).toEqual(drop.span);
    expect(prompt.tokenCount).toBeLessThanOrEqual(600);
  });

  it("drops without markers, and takes earlier markers out, when only that lets the protected core fit", async () => {
    const log = ThreadLog.from("t", run(3, 400, true));
    const droppable = ["a0", "t0", "a1", "t1", "a2", "t2"];
    const silent = extendPlan(
      emptyPlan("t"),
      [{ kind: "drop", span: droppable, record: { kind: "drop", reason: "x" }, strategy: "x", reason: "x" }],
      log.length,
    );
    // The target is exactly what the core costs without a marker.
    const floor = tokensOf(log, silent);
    const bare = await runStrategy(createHardFallback({ markDrops: true }), log, emptyPlan("t"), {
      target: floor,
    });
    expect(bare.proposal.actions.map((a) => a.record)).toEqual([
      expect.not.objectContaining({ marker: true }),
    ]);
    expect(tokensOf(log, bare.plan)).toBeLessThanOrEqual(floor);
    // A marker an earlier turn's drop left is taken out by a later drop governing its run's first message.
    const marked = extendPlan(
      emptyPlan("t"),
      [
        {
          kind: "drop",
          span: ["a0", "t0"],
          record: { kind: "drop", reason: "earlier", marker: true },
          strategy: "hardFallback",
          reason: "earlier",
        },
      ],
      log.length,
    );
    const later = await runStrategy(createHardFallback({ markDrops: true }), log, marked, { target: floor });
    expect(later.proposal.actions[0]).toMatchObject({ kind: "drop", span: ["a0"] });
    expect(validatePlan(later.plan, log)).toEqual([]);
    const prompt = renderHistory(log, later.plan, counter);
    expect(prompt.messages.some((m) => m.provenance.kind === "drop_marker")).toBe(false);
    expect(prompt.tokenCount).toBeLessThanOrEqual(floor);
  });

  it("proposes nothing when the request already fits", async () => {
    const log = ThreadLog.from("t", run(2));
    const { proposal } = await runStrategy(createHardFallback(), log, emptyPlan("t"), { target: 10_000 });
    expect(proposal.actions).toEqual([]);
  });
});
