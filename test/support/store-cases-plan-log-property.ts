/**
 * The commit check against the stored log (no `checkedAgainst`) and `validatePlan` are one rule: on random logs
 * (reasoning-only messages before the calls they led to or alone at the end, call ids reused once answered,
 * results far from their calls, parallel calls answered apart) and random plans, a commit is refused exactly
 * when `validatePlan` finds a problem, on every backend.
 */
import fc from "fast-check";
import { expect, it } from "vitest";
import { PlanValidationError } from "../../src/errors/ledger-error.js";
import type { MessageInput, Part } from "../../src/log/message.js";
import { ThreadLog } from "../../src/log/thread-log.js";
import {
  type ActionKind,
  type ClearPartRef,
  type CompactionPlan,
  emptyPlan,
  extendPlan,
  type PlanAction,
} from "../../src/plan/compaction-plan.js";
import { validatePlan } from "../../src/plan/validate-plan.js";
import type { StoredMessage } from "../../src/stores/log-store.js";
import { fcParams } from "./arbitrary-log.js";
import type { StoreOpener } from "./store-backends.js";
import { COUNTER } from "./store-fixtures.js";

/** One step of a log: what kind of message(s) it adds and the numbers that shape them. */
const stepArb = fc.record({
  op: fc.integer({ min: 0, max: 6 }),
  n: fc.integer({ min: 1, max: 3 }),
  pick: fc.nat({ max: 1_000 }),
});
type Step = typeof stepArb extends fc.Arbitrary<infer T> ? T : never;

// A small pool, so ids are reused once their calls are answered.
const CALL_IDS = ["c0", "c1", "c2", "c3"];

/** Interprets steps as messages, keeping the log's rules (results answer pending calls, no reuse while pending). */
function messagesOf(steps: ReadonlyArray<Step>, pending: string[], prefix: string): MessageInput[] {
  const out: MessageInput[] = [];
  const say = (role: "user" | "assistant", text: string) =>
    out.push({ role, parts: [{ type: "text", text }] });
  const thought = (k: number): Part => ({
    type: "reasoning",
    text: `thinking ${k}`,
    signature: `sig-${prefix}${k}`,
  });
  steps.forEach(({ op, n, pick }, k) => {
    const free = CALL_IDS.filter((id) => !pending.includes(id));
    if (op === 0) say("user", `question ${k}`);
    else if (op === 1)
      out.push({
        role: "assistant",
        parts:
          pick % 2 === 0
            ? [thought(k), { type: "text", text: "answer" }]
            : [{ type: "text", text: "answer" }],
      });
    else if (op === 2) out.push({ role: "assistant", parts: [thought(k)] });
    else if (op === 3 && free.length > 0) {
      const ids = free.slice(0, n);
      pending.push(...ids);
      out.push({
        role: "assistant",
        parts: [
          ...(pick % 3 === 0 ? [thought(k)] : []),
          ...ids.map((callId): Part => ({ type: "tool_call", callId, name: "grep", args: "{}" })),
        ],
      });
    } else if (op === 4 && pending.length > 0) {
      const answered = pending.splice(pick % pending.length, Math.min(n, pending.length));
      out.push({
        role: "tool",
        parts: answered.map((callId): Part => ({ type: "tool_result", callId, content: `found ${callId}` })),
      });
    } else if (op === 5) for (let i = 0; i < 6 * n; i++) say("user", `chatter ${k}.${i}`);
    else say("assistant", `note ${k}`);
  });
  return out;
}

/** One action: a kind, a stretch of the log (or one message's group), and for clears maybe some parts. */
const actionArb = fc.record({
  kind: fc.constantFrom<ActionKind>("include", "clear", "summarize", "externalize", "drop"),
  start: fc.nat(),
  size: fc.integer({ min: 1, max: 5 }),
  wholeGroup: fc.boolean(),
  parts: fc.option(fc.array(fc.nat(), { minLength: 1, maxLength: 3 }), { nil: undefined }),
});
type ActionSpec = typeof actionArb extends fc.Arbitrary<infer T> ? T : never;

const RECORDS = {
  include: { kind: "include" },
  clear: { kind: "clear" },
  summarize: { kind: "summarize", summary: "s", summarizerId: "x", promptVersion: "p" },
  externalize: { kind: "externalize", artifactId: "art", summary: "" },
  drop: { kind: "drop", reason: "test" },
} as const;

function actionOf(spec: ActionSpec, log: ThreadLog): PlanAction | undefined {
  if (log.length === 0) return undefined;
  const at = spec.start % log.length;
  const seqs = spec.wholeGroup
    ? log.groupAt(log.groupIndexOf(at)).seqs
    : Array.from({ length: Math.min(spec.size, log.length - at) }, (_, i) => at + i);
  const span = seqs.map((seq) => log.idAt(seq)!);
  let record: PlanAction["record"] = RECORDS[spec.kind];
  if (spec.kind === "clear" && spec.parts !== undefined) {
    // Parts of the span's messages, reasoning first where there is some (the rule most likely to be broken).
    const refs = new Map<string, ClearPartRef>();
    spec.parts.forEach((p, i) => {
      const message = log.at(seqs[(p + i) % seqs.length]!)!;
      const reasoning = message.parts.findIndex((part) => part.type === "reasoning");
      const partIndex = p % 2 === 0 && reasoning >= 0 ? reasoning : p % message.parts.length;
      refs.set(`${partIndex} ${message.id}`, { messageId: message.id, partIndex });
    });
    record = { kind: "clear", onlyParts: [...refs.values()] };
  }
  return { kind: spec.kind, span, record, strategy: "test", reason: "" } as PlanAction;
}

function storedOf(log: ThreadLog, from: number): StoredMessage[] {
  return log.messages.slice(from).map((message) => ({ message, tokens: { [COUNTER]: 5 } }));
}

/** Commits `plan` and says whether the store refused it (any other error fails the test). */
async function refused(commit: Promise<void>): Promise<boolean> {
  try {
    await commit;
    return false;
  } catch (error) {
    if (error instanceof PlanValidationError) return true;
    throw error;
  }
}

export function planLogPropertyCases(opener: StoreOpener, title: (t: string) => string): void {
  it(
    title("a commit without checkedAgainst is refused exactly when validatePlan finds a problem (property)"),
    async () => {
      const { stores } = await opener.fresh();
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(stepArb, { minLength: 1, maxLength: 24 }),
          fc.array(stepArb, { maxLength: 12 }),
          fc.array(actionArb, { minLength: 1, maxLength: 4 }),
          fc.array(actionArb, { minLength: 1, maxLength: 3 }),
          async (first, later, actions1, actions2) => {
            const threadId = `p${run++}`;
            const pending: string[] = [];
            const log1 = ThreadLog.from(threadId, messagesOf(first, pending, "a"));
            await stores.log.append(threadId, 0, storedOf(log1, 0));
            let committed: CompactionPlan = emptyPlan(threadId);
            const plan1 = extendPlan(
              committed,
              actions1.flatMap((a) => actionOf(a, log1) ?? []),
              log1.length,
            );
            const expected1 = validatePlan(plan1, log1);
            expect(await refused(stores.plans.commit(plan1, 0)), JSON.stringify(expected1)).toBe(
              expected1.length > 0,
            );
            if (expected1.length === 0) committed = plan1;
            // The log grows, and a version on top of what is committed is checked against the longer log.
            const log2 = log1.append(messagesOf(later, pending, "b"));
            await stores.log.append(threadId, log1.length, storedOf(log2, log1.length));
            const plan2 = extendPlan(
              committed,
              actions2.flatMap((a) => actionOf(a, log2) ?? []),
              log2.length,
            );
            const expected2 = validatePlan(plan2, log2);
            expect(
              await refused(stores.plans.commit(plan2, committed.version)),
              JSON.stringify(expected2),
            ).toBe(expected2.length > 0);
          },
        ),
        fcParams(opener.backend.name === "postgres" ? 60 : 150),
      );
    },
  );
}
