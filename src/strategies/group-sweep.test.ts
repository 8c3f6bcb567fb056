import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { arbitraryBatches, fcParams } from "../../test/support/arbitrary-log.js";
import { call, records, result, text } from "../../test/support/builders.js";
import { strategyContext } from "../../test/support/strategy-context.js";
import type { Message, MessageInput } from "../log/message.js";
import { ThreadLog } from "../log/thread-log.js";
import {
  type CompactionPlan,
  createPlan,
  emptyPlan,
  extendPlan,
  type PlanAction,
} from "../plan/compaction-plan.js";
import { generateSampleSession } from "../sample/sample-session.js";
import { createRollingWindow } from "./rolling-window.js";
import { createSlidingWindow } from "./sliding-window.js";
import type { Strategy, StrategyContext } from "./strategy.js";
import { createSummarization } from "./summarization.js";
import type { Summarizer } from "./summarizer.js";
import { createToolResultRetention, type ToolResultRetentionOptions } from "./tool-result-retention.js";
import { createTruncation } from "./truncation.js";

// The strategies that remember per plan what they settled must propose exactly what a fresh instance on a fresh
// copy of the log (which sweeps the whole log) proposes, whatever happens to the plan between turns: applied or
// deferred proposals, actions of other strategies, plans loaded without lineage.

const inputOf = ({ id, role, parts, meta }: Message): MessageInput => ({ id, role, parts, meta });

const summarizer: Summarizer = {
  id: "echo",
  promptVersion: "v1",
  summarize: async (request) => ({
    text: `${request.previous?.text ?? ""}+${request.messages.map((m) => m.id).join(",")}`,
    structured: {},
  }),
};

const retentionOptions: ReadonlyArray<ToolResultRetentionOptions> = [
  {},
  { default: { keepLast: 1, minChars: 0 } },
  { default: { keepTurns: 1, mode: "hard", minChars: 0 } },
  { default: { keepLast: 2, clearArgs: true, minChars: 0 }, tools: { search: { mode: "hard" } } },
  { default: { keepTurns: 1, keepLast: 2, minChars: 0 }, tools: { read_file: { neverEvict: true } } },
  // A noisy tool kept none of beside others: parallel results in one message are stubbed one by one.
  { default: { keepLast: 3, minChars: 0 }, tools: { search: { keepLast: 0, clearArgs: true } } },
];

// Strategies that fire by their own rule say so with `due` (a pipeline asks it while under target).
type Make = () => Strategy & { due?(context: StrategyContext): boolean };

const makers: ReadonlyArray<readonly [string, Make]> = [
  ...retentionOptions.map((o, i) => [`retention ${i}`, () => createToolResultRetention(o)] as const),
  [
    "summarize by count",
    () => createSummarization({ summarizer, target: 2, threshold: 1, minKeepGroups: 1 }),
  ],
  ["summarize to a goal", () => createSummarization({ summarizer, minKeepGroups: 1, minSpanGroups: 1 })],
  ["sliding window", () => createSlidingWindow({ keepGroups: 3, threshold: 1 })],
  [
    "sliding window starting on a user message",
    () => createSlidingWindow({ keepGroups: 2, startOn: "user" }),
  ],
  ["rolling window", () => createRollingWindow({ keepTurns: 1 })],
  ["truncation", () => createTruncation({ keepFirst: 1, keepLast: 3 })],
  [
    "truncation starting on a user message",
    () => createTruncation({ keepFirst: 1, keepLast: 2, startOn: "user" }),
  ],
];

/** An action another strategy could have added: drop, summarize or clear a whole complete group. */
function otherAction(log: ThreadLog, pick: number): PlanAction[] {
  const count = log.groupCount;
  if (count === 0) return [];
  const group = log.groupAt(pick % count);
  if (group.pending || group.kind === "system") return [];
  const span = group.messageIds;
  const strategy = pick % 7 === 0 ? "summarize" : "other";
  switch (pick % 4) {
    case 0:
      return [{ kind: "drop", span, record: records.drop, strategy, reason: "test" }];
    case 1:
      return [{ kind: "summarize", span, record: records.summarize, strategy, reason: "test" }];
    case 2: {
      // Sometimes only the results: a call whose results are all cleared may then have its arguments cleared.
      const cleared = (pick >> 2) % 2 === 1 ? span.slice(1) : span;
      if (cleared.length === 0) return [];
      return [{ kind: "clear", span: cleared, record: { kind: "clear" }, strategy, reason: "test" }];
    }
    default:
      return [{ kind: "include", span, record: records.include, strategy, reason: "test" }];
  }
}

/** Step k's plan change: 0 apply the proposal, 1 defer it, 2 add another strategy's action, 3 lose lineage. */
async function replay(
  make: Make,
  batches: ReadonlyArray<ReadonlyArray<MessageInput>>,
  moves: ReadonlyArray<number>,
): Promise<void> {
  const long = make();
  let log = ThreadLog.empty("t");
  let plan: CompactionPlan = emptyPlan("t");
  for (const [k, batch] of batches.entries()) {
    log = log.append(batch);
    const move = moves[k % Math.max(1, moves.length)] ?? 0;
    // A goal under the current size makes token-driven strategies act.
    const size = strategyContext(log, plan).tokens;
    const ctx = strategyContext(log, plan, { goal: move % 2 === 0 ? Math.floor(size / 2) : size });
    const fresh = make();
    const copy = strategyContext(ThreadLog.from("t", log.messages.map(inputOf)), plan, { goal: ctx.goal });
    const proposal = await long.propose(ctx);
    expect(proposal).toEqual(await fresh.propose(copy));
    expect(long.due?.(ctx)).toBe(fresh.due?.(copy));
    if (move % 4 === 0 && proposal.actions.length > 0) plan = extendPlan(plan, proposal.actions, log.length);
    if (move % 4 === 2) plan = extendPlan(plan, otherAction(log, move >> 2), log.length);
    if (move % 4 === 3) plan = createPlan(plan);
  }
}

describe("strategies that remember settled groups per plan", () => {
  it("retention looks again at a settled group when a later action clears its results", async () => {
    const ask = (n: number): MessageInput[] => [
      { id: `a${n}`, role: "assistant", parts: [call(`c${n}`, `{"q":"${"x".repeat(300)}"}`, "search")] },
      { id: `r${n}`, role: "tool", parts: [result(`c${n}`, "ok")] },
    ];
    const log = ThreadLog.from("t", [{ id: "u", role: "user", parts: [text("go")] }, ...ask(1), ...ask(2)]);
    const retention = createToolResultRetention({ default: { keepLast: 1, clearArgs: true } });
    const plan = emptyPlan("t");
    // r1 expired but is too small to clear, so nothing happens to its group, and the sweep settles it.
    expect((await retention.propose(strategyContext(log, plan))).actions).toEqual([]);
    const clear: PlanAction = {
      kind: "clear",
      span: ["r1"],
      record: { kind: "clear" },
      strategy: "x",
      reason: "",
    };
    const next = extendPlan(plan, [clear], log.length);
    const proposal = await retention.propose(strategyContext(log.append([]), next));
    expect(proposal.actions.map((a) => a.span)).toEqual([["a1"]]);
  });

  it("summarization releases what its older summary held when a newer one by its name does not hold it", async () => {
    const rounds = (from: number, n: number): MessageInput[] =>
      Array.from({ length: n }, (_, k) => [
        { id: `a${from + k}`, role: "assistant" as const, parts: [call(`c${from + k}`, "{}", "grep")] },
        { id: `t${from + k}`, role: "tool" as const, parts: [result(`c${from + k}`, `match ${from + k}`)] },
      ]).flat();
    const log = ThreadLog.from("t", [{ id: "u", role: "user", parts: [text("go")] }, ...rounds(0, 8)]);
    const make = () => createSummarization({ summarizer, target: 2, minKeepGroups: 1 });
    const long = make();
    const first = await long.propose(strategyContext(log, emptyPlan("t")));
    expect(first.actions).toHaveLength(1);
    const summarized = extendPlan(emptyPlan("t"), first.actions, log.length);
    const longer = log.append(rounds(8, 1));
    await long.propose(strategyContext(longer, summarized));
    // Someone else writes a summary under the strategy's name over one newer group only.
    const other: PlanAction = { ...first.actions[0]!, span: ["a8", "t8"], reason: "elsewhere" } as PlanAction;
    const next = extendPlan(summarized, [other], longer.length);
    const last = longer.append(rounds(9, 1));
    const copy = ThreadLog.from("t", last.messages.map(inputOf));
    expect(await long.propose(strategyContext(last, next))).toEqual(
      await make().propose(strategyContext(copy, next)),
    );
  });

  it("retention does not settle reasoning that ends the log: the calls it led to may join it", async () => {
    const search = (callId: string) => call(callId, "{}", "search");
    const batches: MessageInput[][] = [
      [{ id: "m0", role: "assistant", parts: [{ type: "reasoning", text: "think" }] }],
      [{ id: "m1", role: "assistant", parts: [search("c0")] }],
      [{ id: "m2", role: "tool", parts: [result("c0", "")] }],
      [{ id: "m3", role: "assistant", parts: [search("c1"), search("c2")] }],
      [{ id: "m4", role: "tool", parts: [result("c1", "a")] }],
      [{ id: "m5", role: "tool", parts: [result("c2", "b")] }],
    ];
    const make = () => createToolResultRetention(retentionOptions[3]!);
    await replay(make, batches, [0]);
    // The case is not vacuous: at the end the first group (reasoning, call, result) expired and is dropped.
    let log = ThreadLog.empty("t");
    for (const batch of batches) log = log.append(batch);
    const proposal = await make().propose(strategyContext(log, emptyPlan("t")));
    expect(proposal.actions.map((a) => [a.kind, a.span])).toEqual([["drop", ["m0", "m1", "m2"]]]);
  });

  for (const [name, make] of makers) {
    it(`${name}: proposes what a fresh instance proposes, turn by turn on random logs`, async () => {
      await fc.assert(
        fc.asyncProperty(
          arbitraryBatches({ maxOps: 24 }),
          fc.array(fc.nat(63), { minLength: 1, maxLength: 12 }),
          (batches, moves) => replay(make, batches, moves),
        ),
        fcParams(60),
      );
    });

    it(`${name}: proposes what a fresh instance proposes on a long generated session`, async () => {
      const inputs = generateSampleSession({ messages: 700, seed: 5 });
      const batches: MessageInput[][] = [];
      for (let at = 0; at < inputs.length; at += 9) batches.push(inputs.slice(at, at + 9));
      await replay(make, batches, [0, 1, 1, 0, 2, 1, 0, 6, 3, 0, 1, 10, 1, 4, 14]);
    });
  }
});
