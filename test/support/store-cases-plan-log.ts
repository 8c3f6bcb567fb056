import { expect, it } from "vitest";
import { PlanValidationError } from "../../src/errors/ledger-error.js";
import { hashMessageContent } from "../../src/log/canonical-json.js";
import { deepFreeze } from "../../src/log/deep-freeze.js";
import type { Message, Part, Role } from "../../src/log/message.js";
import { ThreadLog } from "../../src/log/thread-log.js";
import {
  type ActionKind,
  type CompactionPlan,
  createPlan,
  extendPlan,
  type PlanAction,
} from "../../src/plan/compaction-plan.js";
import type { StoredMessage } from "../../src/stores/log-store.js";
import type { StoreOpener } from "./store-backends.js";
import { rejection } from "./store-cases-log.js";
import { COUNTER } from "./store-fixtures.js";

function entry(seq: number, id: string, role: Role, parts: ReadonlyArray<Part>): StoredMessage {
  const message: Message = { id, seq, role, parts, meta: {}, hash: hashMessageContent(role, parts) };
  return deepFreeze({ message, tokens: { [COUNTER]: 10 } });
}

const text = (t: string): Part => ({ type: "text", text: t });
const call = (callId: string): Part => ({ type: "tool_call", callId, name: "grep", args: "{}" });
const result = (callId: string): Part => ({ type: "tool_result", callId, content: `found ${callId}` });

/**
 * Thread "t": u0 asks; a1 calls c1, answered by r1 forty messages later (chatter between), so the check has to
 * read past its first window; a2 makes two parallel calls answered by r2a and r2b; a3 calls c3, never answered.
 */
function threadLog(): StoredMessage[] {
  const log: StoredMessage[] = [entry(0, "u0", "user", [text("find it")])];
  log.push(entry(1, "a1", "assistant", [call("c1")]));
  for (let i = 0; i < 40; i++) log.push(entry(log.length, `x${i}`, "user", [text(`chatter ${i}`)]));
  log.push(entry(log.length, "r1", "tool", [result("c1")]));
  log.push(
    entry(log.length, "a2", "assistant", [
      { type: "reasoning", text: "two at once" },
      call("c2a"),
      call("c2b"),
    ]),
  );
  log.push(entry(log.length, "r2a", "tool", [result("c2a")]));
  log.push(entry(log.length, "u1", "user", [text("meanwhile")]));
  log.push(entry(log.length, "r2b", "tool", [result("c2b")]));
  log.push(entry(log.length, "a3", "assistant", [call("c3")]));
  return log;
}

const LENGTH = threadLog().length;

const RECORDS: Readonly<Record<ActionKind, PlanAction["record"]>> = {
  include: { kind: "include" },
  clear: { kind: "clear" },
  summarize: { kind: "summarize", summary: "s", summarizerId: "x", promptVersion: "p" },
  externalize: { kind: "externalize", artifactId: "art", summary: "" },
  drop: { kind: "drop", reason: "test" },
};

function plan(
  version: number,
  actions: ReadonlyArray<[ActionKind, ReadonlyArray<string>]>,
  basedOnSeq = LENGTH,
): CompactionPlan {
  return createPlan({
    threadId: "t",
    version,
    basedOnSeq,
    actions: actions.map(
      ([kind, span]) => ({ kind, span, record: RECORDS[kind], strategy: "test", reason: "" }) as PlanAction,
    ),
  });
}

/** Cases for the check of a commit against the stored log: a plan the log cannot carry is never written. */
export function planLogCases(opener: StoreOpener, title: (t: string) => string): void {
  async function withLog() {
    const { stores } = await opener.fresh();
    await stores.log.append("t", 0, threadLog());
    return stores;
  }

  /** Commits `bad` on top of what is committed and expects a refusal naming version and id, nothing written. */
  async function expectRefused(
    bad: CompactionPlan,
    messageId: string,
    pattern: RegExp,
    before: ReadonlyArray<CompactionPlan> = [],
  ) {
    const stores = await withLog();
    for (const p of before) await stores.plans.commit(p, p.version - 1);
    const error = await rejection(stores.plans.commit(bad, bad.version - 1), PlanValidationError);
    expect(error.planVersion).toBe(bad.version);
    expect(error.where).toMatchObject({ threadId: "t", messageId });
    expect(error.message).toContain(`version ${bad.version}`);
    expect(error.message).toMatch(pattern);
    expect(await stores.plans.versions("t")).toEqual(before.map((p) => p.version));
    // The store still takes a plan the log carries on top of what it holds.
    const good = plan(before.length + 1, [["drop", ["u0"]]]);
    await stores.plans.commit(good, before.length);
  }

  it(title("a span naming an id the log does not hold is refused, naming version and id"), async () => {
    await expectRefused(plan(1, [["drop", ["u0", "ghost"]]]), "ghost", /unknown message ghost/);
  });

  it(title("a span naming an id at or after basedOnSeq is refused"), async () => {
    await expectRefused(plan(1, [["drop", ["u0", "x3"]]], 5), "x3", /not before basedOnSeq 5/);
  });

  it(title("a plan based past the end of the log is refused"), async () => {
    const stores = await withLog();
    const error = await rejection(stores.plans.commit(plan(1, [], LENGTH + 1), 0), PlanValidationError);
    expect(error.message).toMatch(/based on seq \d+ but the stored log has only \d+ messages/);
    expect(await stores.plans.versions("t")).toEqual([]);
  });

  it(title("a thread without a log takes no span at all"), async () => {
    const { stores } = await opener.fresh();
    await rejection(stores.plans.commit(plan(1, [["drop", ["u0"]]], 0), 0), PlanValidationError);
    expect(await stores.plans.versions("t")).toEqual([]);
  });

  it(title("a call dropped without its result (found 40 messages on) is refused as an orphan"), async () => {
    await expectRefused(plan(1, [["drop", ["a1"]]]), "a1", /removes a1 but keeps r1/);
    await expectRefused(plan(1, [["summarize", ["r1"]]]), "r1", /removes r1 but keeps a1/);
  });

  it(title("parallel calls: removing the call and one of its two results is refused"), async () => {
    await expectRefused(plan(1, [["externalize", ["a2", "r2a"]]]), "a2", /removes a2, r2a but keeps r2b/);
  });

  it(title("a pending call cleared or dropped is refused"), async () => {
    await expectRefused(plan(1, [["clear", ["a3"]]]), "a3", /no result yet/);
    await expectRefused(plan(1, [["drop", ["a3"]]]), "a3", /no result yet/);
  });

  it(title("a bad action added to a committed version is refused; the version below stays"), async () => {
    const v1 = plan(1, [["drop", ["a1", "r1"]]]);
    const v2 = extendPlan(v1, plan(2, [["drop", ["r2b"]]]).actions, LENGTH);
    await expectRefused(v2, "r2b", /removes r2b but keeps a2, r2a/, [v1]);
  });

  it(
    title("given the log it was checked against (the engine's commits), a plan is validated on it"),
    async () => {
      const stores = await withLog();
      const view = ThreadLog.fromTrusted(
        "t",
        threadLog().map((e) => e.message),
      );
      const bad = plan(1, [["drop", ["a1"]]]);
      const error = await rejection(
        stores.plans.commit(bad, 0, { checkedAgainst: view }),
        PlanValidationError,
      );
      expect(error.planVersion).toBe(1);
      expect(error.message).toMatch(/removes a1 but keeps r1/);
      const ghost = plan(1, [["drop", ["ghost"]]]);
      await rejection(stores.plans.commit(ghost, 0, { checkedAgainst: view }), PlanValidationError);
      // A log that is not this store's (another history under the same thread id) is not taken as proof: the plan
      // is checked by reading the store, which does not hold "m9".
      const foreign = ThreadLog.fromTrusted("t", [
        ...threadLog()
          .slice(0, 5)
          .map((e) => e.message),
        entry(5, "m9", "user", [text("elsewhere")]).message,
      ]);
      const forged = plan(1, [["drop", ["m9"]]], 6);
      const refused = await rejection(
        stores.plans.commit(forged, 0, { checkedAgainst: foreign }),
        PlanValidationError,
      );
      expect(refused.message).toMatch(/unknown message m9/);
      expect(await stores.plans.versions("t")).toEqual([]);
      await stores.plans.commit(plan(1, [["drop", ["a1", "r1"]]]), 0, { checkedAgainst: view });
      expect(await stores.plans.versions("t")).toEqual([1]);
    },
  );

  /**
   * Thread "r": a reasoning-only message (s1) before the calls it led to (a1 calls c1, answered by r1); c1 is used
   * again (a2, answered by r2) once answered; u2 asks again, then a3 thinks and calls c2 (r3 answers), and the log
   * ends with reasoning alone (s4), whose calls may still come.
   */
  function reasoningLog(): StoredMessage[] {
    const thought = (t: string): Part => ({ type: "reasoning", text: t, signature: `sig-${t}` });
    return [
      entry(0, "u0", "user", [text("find it")]),
      entry(1, "s1", "assistant", [thought("look with grep")]),
      entry(2, "a1", "assistant", [call("c1")]),
      entry(3, "r1", "tool", [result("c1")]),
      entry(4, "a2", "assistant", [call("c1")]),
      entry(5, "r2", "tool", [result("c1")]),
      entry(6, "u2", "user", [text("and now?")]),
      entry(7, "a3", "assistant", [thought("once more"), call("c2")]),
      entry(8, "r3", "tool", [result("c2")]),
      entry(9, "s4", "assistant", [thought("then")]),
    ];
  }
  const R_LENGTH = reasoningLog().length;

  async function commitOnReasoningLog(actions: ReadonlyArray<[ActionKind, ReadonlyArray<string>]>) {
    const { stores } = await opener.fresh();
    await stores.log.append("t", 0, reasoningLog());
    return stores.plans.commit(plan(1, actions, R_LENGTH), 0);
  }

  it(title("the reasoning a call was led by is in its group: dropping it alone is refused"), async () => {
    const error = await rejection(commitOnReasoningLog([["drop", ["s1"]]]), PlanValidationError);
    expect(error.message).toMatch(/removes s1 but keeps a1, r1/);
    await commitOnReasoningLog([["drop", ["s1", "a1", "r1"]]]);
  });

  it(title("reasoning alone at the end of the log is pending: it is not compacted yet"), async () => {
    const error = await rejection(commitOnReasoningLog([["drop", ["s4"]]]), PlanValidationError);
    expect(error.where).toMatchObject({ messageId: "s4" });
    expect(error.message).toMatch(/reasoning that ends the log/);
  });

  it(title("a reused call id pairs each result with the call before it"), async () => {
    // a1's call is answered by r1, not r2 (c1 was called again by a2 after r1 answered it).
    const error = await rejection(commitOnReasoningLog([["drop", ["s1", "a1"]]]), PlanValidationError);
    expect(error.message).toMatch(/removes s1, a1 but keeps r1/);
    await commitOnReasoningLog([["drop", ["a2", "r2"]]]);
    await commitOnReasoningLog([["summarize", ["s1", "a1", "r1", "a2", "r2"]]]);
  });

  it(
    title("a clear leaving out the reasoning of the turn in progress is refused; an older turn's is taken"),
    async () => {
      const onlyParts = (messageId: string): PlanAction => ({
        kind: "clear",
        span: [messageId],
        record: { kind: "clear", onlyParts: [{ messageId, partIndex: 0 }] },
        strategy: "test",
        reason: "",
      });
      const { stores } = await opener.fresh();
      await stores.log.append("t", 0, reasoningLog());
      const current = createPlan({
        threadId: "t",
        version: 1,
        basedOnSeq: R_LENGTH,
        actions: [onlyParts("a3")],
      });
      const error = await rejection(stores.plans.commit(current, 0), PlanValidationError);
      expect(error.where).toMatchObject({ messageId: "a3" });
      expect(error.message).toMatch(/reasoning of the turn in progress/);
      const older = createPlan({
        threadId: "t",
        version: 1,
        basedOnSeq: R_LENGTH,
        actions: [onlyParts("s1")],
      });
      await stores.plans.commit(older, 0);
      expect(await stores.plans.versions("t")).toEqual([1]);
    },
  );

  it(
    title("plans the log carries are taken: groups removed whole, cleared in part, or outranked"),
    async () => {
      const stores = await withLog();
      const v1 = plan(1, [
        ["drop", ["a1", "r1"]],
        ["clear", ["r2a"]],
        ["summarize", ["u0", "x0", "x1"]],
      ]);
      await stores.plans.commit(v1, 0);
      // r2b removed and a2, r2a removed by a stronger action than the clear above: the group goes whole.
      const v2 = extendPlan(v1, plan(2, [["externalize", ["a2", "r2a", "u1", "r2b"]]]).actions, LENGTH);
      await stores.plans.commit(v2, 1);
      expect(await stores.plans.versions("t")).toEqual([1, 2]);
    },
  );
}
