import { describe, expect, it } from "vitest";
import { records } from "../../test/support/builders.js";
import { ThreadLog } from "../log/thread-log.js";
import {
  type ActionKind,
  type CompactionPlan,
  createPlan,
  emptyPlan,
  extendPlan,
  LINEAGE_DEPTH,
  nextPlan,
  type PlanAction,
  PRECEDENCE,
  parentOf,
  type RecordByKind,
} from "./compaction-plan.js";
import { decisionAt, resolveForLog } from "./resolve-for-log.js";
import { kindOf, normalizePlan, resolvePlan } from "./resolve-plan.js";

function act<K extends ActionKind>(kind: K, span: string[], record?: RecordByKind[K]): PlanAction {
  return { kind, span, record: record ?? records[kind], strategy: `by-${kind}`, reason: "" } as PlanAction;
}

const plan = (...actions: PlanAction[]): CompactionPlan =>
  createPlan({ threadId: "t", version: 1, basedOnSeq: 10, actions });

const kinds: ActionKind[] = ["include", "clear", "summarize", "externalize", "drop"];

describe("resolvePlan", () => {
  it("resolves the empty plan to nothing: every message is included", () => {
    const resolved = resolvePlan(emptyPlan("t"));
    expect(resolved.decisions.size).toBe(0);
    expect(resolved.overlaps).toEqual([]);
    expect(kindOf(resolved, "anything")).toBe("include");
  });

  it("gives each mentioned message its action, index and record", () => {
    const p = plan(act("clear", ["a", "b"]), act("drop", ["c"]));
    const resolved = resolvePlan(p);
    expect(resolved.decisions.get("a")).toEqual({ kind: "clear", actionIndex: 0, action: p.actions[0] });
    expect(resolved.decisions.get("c")?.action.record).toEqual(records.drop);
    expect(kindOf(resolved, "b")).toBe("clear");
    expect(kindOf(resolved, "z")).toBe("include");
    expect(resolved.overlaps).toEqual([]);
  });

  it("follows drop > externalize > summarize > clear > include in both orders", () => {
    expect(kinds.map((k) => PRECEDENCE[k])).toEqual([0, 1, 2, 3, 4]);
    for (const low of kinds) {
      for (const high of kinds) {
        if (PRECEDENCE[high] <= PRECEDENCE[low]) continue;
        expect(kindOf(resolvePlan(plan(act(low, ["m"]), act(high, ["m"]))), "m")).toBe(high);
        expect(kindOf(resolvePlan(plan(act(high, ["m"]), act(low, ["m"]))), "m")).toBe(high);
      }
    }
  });

  it("lets the later action win among equals (a newer summary supersedes an older one)", () => {
    const older = { ...records.summarize, summary: "older" };
    const newer = { ...records.summarize, summary: "newer" };
    const resolved = resolvePlan(plan(act("summarize", ["a", "b"], older), act("summarize", ["b"], newer)));
    expect(resolved.decisions.get("a")?.action.record).toEqual(older);
    expect(resolved.decisions.get("b")?.action.record).toEqual(newer);
    expect(resolved.decisions.get("b")?.actionIndex).toBe(1);
  });

  it("reports every overlap with its winner and losers", () => {
    const resolved = resolvePlan(
      plan(act("drop", ["a"]), act("clear", ["a", "b"]), act("summarize", ["b", "c"]), act("include", ["a"])),
    );
    expect(resolved.overlaps).toEqual([
      { messageId: "a", winner: 0, losers: [1, 3] },
      { messageId: "b", winner: 2, losers: [1] },
    ]);
  });

  it("is memoized per plan value", () => {
    const p = plan(act("drop", ["a"]));
    expect(resolvePlan(p)).toBe(resolvePlan(p));
  });
});

describe("normalizePlan", () => {
  it("returns the same plan when nothing overlaps", () => {
    const p = plan(act("drop", ["a"]), act("clear", ["b"]));
    expect(normalizePlan(p)).toBe(p);
  });

  it("keeps only the ids each action won, drops emptied actions and keeps the order", () => {
    const p = plan(
      act("clear", ["a", "b"]),
      act("drop", ["a"]),
      act("include", ["b"]),
      act("summarize", ["c"]),
    );
    const n = normalizePlan(p);
    expect(n.actions.map((a) => [a.kind, a.span])).toEqual([
      ["clear", ["b"]],
      ["drop", ["a"]],
      ["summarize", ["c"]],
    ]);
    expect(n.threadId).toBe(p.threadId);
    expect(n.version).toBe(p.version);
    expect(n.basedOnSeq).toBe(p.basedOnSeq);
    expect(resolvePlan(n).overlaps).toEqual([]);
    expect(normalizePlan(n)).toBe(n);
    for (const id of ["a", "b", "c", "d"]) {
      expect(kindOf(resolvePlan(n), id)).toBe(kindOf(resolvePlan(p), id));
      expect(resolvePlan(n).decisions.get(id)?.action.record).toEqual(
        resolvePlan(p).decisions.get(id)?.action.record,
      );
    }
  });

  it("returns a frozen plan and leaves the input untouched", () => {
    const p = plan(act("clear", ["a"]), act("drop", ["a"]));
    const before = JSON.stringify(p);
    const n = normalizePlan(p);
    expect(Object.isFrozen(n)).toBe(true);
    expect(Object.isFrozen(n.actions)).toBe(true);
    expect(JSON.stringify(p)).toBe(before);
  });
});

describe("resolveForLog", () => {
  const log = ThreadLog.from("t", [
    { id: "a", role: "user", parts: [{ type: "text", text: "a" }] },
    { id: "b", role: "assistant", parts: [{ type: "text", text: "b" }] },
    { id: "c", role: "user", parts: [{ type: "text", text: "c" }] },
  ]);

  it("agrees with resolvePlan, per seq", () => {
    const p = createPlan({
      threadId: "t",
      version: 1,
      basedOnSeq: 3,
      actions: [act("clear", ["a", "b"]), act("drop", ["b"]), act("summarize", ["c"]), act("include", ["c"])],
    });
    const resolution = resolveForLog(p, log);
    for (const m of log.messages) {
      expect(decisionAt(resolution, m.seq)?.kind ?? "include").toBe(kindOf(resolvePlan(p), m.id));
      expect(decisionAt(resolution, m.seq)?.actionIndex).toBe(
        resolvePlan(p).decisions.get(m.id)?.actionIndex,
      );
    }
  });

  it("extends a parent's resolution with the added actions (same result as a flat plan)", () => {
    const parent = createPlan({
      threadId: "t",
      version: 1,
      basedOnSeq: 2,
      actions: [act("summarize", ["a", "b"])],
    });
    const child = extendPlan(parent, [act("summarize", ["b"]), act("drop", ["a"])], 3);
    const flat = createPlan(child);
    const kindsOf = (p: CompactionPlan) =>
      log.messages.map((m) => decisionAt(resolveForLog(p, log), m.seq)).map((d) => [d?.kind, d?.actionIndex]);
    expect(kindsOf(child)).toEqual(kindsOf(flat));
  });

  // Regression: a child must not reuse a parent resolution that skipped ids its own basedOnSeq covers.
  it("applies a parent's action that only the child's basedOnSeq brings into range", () => {
    const parent = createPlan({ threadId: "t", version: 1, basedOnSeq: 0, actions: [act("drop", ["a"])] });
    const child = nextPlan(parent, parent.actions, 3);
    expect(decisionAt(resolveForLog(child, log), 0)?.kind).toBe(kindOf(resolvePlan(child), "a"));
  });

  it("takes a plan made from another plan's very actions list as its parent (a background result committed on top)", () => {
    const base = createPlan({ threadId: "t", version: 1, basedOnSeq: 3, actions: [act("drop", ["a"])] });
    const result = extendPlan(base, [act("summarize", ["b"])], 3);
    const newer = extendPlan(base, [act("drop", ["b"])], 3);
    const committed = nextPlan(newer, result.actions, result.basedOnSeq);
    expect(parentOf(committed)).toBe(result);
    expect(parentOf(nextPlan(newer, result.actions, 2))).toBeUndefined();
    expect(parentOf(nextPlan(newer, [...result.actions], 3))).toBeUndefined();
    const kindsOf = (p: CompactionPlan) =>
      log.messages.map((m) => decisionAt(resolveForLog(p, log), m.seq)?.kind);
    expect(kindsOf(committed)).toEqual(kindsOf(createPlan(committed)));
  });

  it("keeps at most LINEAGE_DEPTH parents reachable and resolves every generation like its flat copy", () => {
    const kinds3: ActionKind[] = ["clear", "summarize", "drop", "include", "externalize"];
    const chain: CompactionPlan[] = [emptyPlan("t")];
    for (let i = 0; i < LINEAGE_DEPTH + 8; i++) {
      const id = ["a", "b", "c"][i % 3]!;
      chain.push(extendPlan(chain[chain.length - 1]!, [act(kinds3[i % kinds3.length]!, [id])], 3));
    }
    let reachable = 0;
    for (let p = parentOf(chain[chain.length - 1]!); p !== undefined; p = parentOf(p)) reachable++;
    expect(reachable).toBe(LINEAGE_DEPTH);
    // Newest first, then oldest first: tables of dropped generations are rebuilt flat, never by walking the chain.
    const kindsOf = (p: CompactionPlan) =>
      log.messages.map((m) => [
        decisionAt(resolveForLog(p, log), m.seq)?.kind,
        decisionAt(resolveForLog(p, log), m.seq)?.actionIndex,
      ]);
    for (const p of [...chain].reverse()) expect(kindsOf(p)).toEqual(kindsOf(createPlan(p)));
    for (const p of chain) expect(kindsOf(p)).toEqual(kindsOf(createPlan(p)));
  });
});
