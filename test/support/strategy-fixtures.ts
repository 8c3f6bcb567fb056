/**
 * What the strategy tests share: small conversations, a strategy run that checks the plan it extends, and the
 * checks a window or tool-result strategy must pass on random logs and on the real trajectories.
 */
import { describe, expect, it } from "vitest";
import type { Group } from "../../src/log/groups.js";
import { importTranscript, parseTranscript } from "../../src/log/import-jsonl.js";
import type { MessageInput, MessageMeta, Part } from "../../src/log/message.js";
import { ThreadLog } from "../../src/log/thread-log.js";
import { type CompactionPlan, emptyPlan } from "../../src/plan/compaction-plan.js";
import { decisionAt, resolveForLog } from "../../src/plan/resolve-for-log.js";
import { validatePlan } from "../../src/plan/validate-plan.js";
import { toProviderRequest, validateProviderRequest } from "../../src/render/provider-rules.js";
import { renderPrompt } from "../../src/render/render-prompt.js";
import type { Strategy } from "../../src/strategies/strategy.js";
import { createTokenizer } from "../../src/tokens/create-tokenizer.js";
import { createMessageCounter } from "../../src/tokens/message-counter.js";
import { call, result, text } from "./builders.js";
import { simpleCounter } from "./simple-counter.js";
import { runStrategy, type StrategyRun } from "./strategy-context.js";
import { listTrajectories, type TrajectoryFile, trajectoriesAvailable } from "./trajectories.js";

const counter = simpleCounter();

// ---------------------------------------------------------------------------------------------------------------
// conversations

/** Turn k: user `uk`, a tool-call group `ak`+`tk`, an answer `rk` (three groups). */
export function chatTurn(k: number): MessageInput[] {
  return [
    { id: `u${k}`, role: "user", parts: [text(`question ${k}`)] },
    { id: `a${k}`, role: "assistant", parts: [call(`c${k}`)] },
    { id: `t${k}`, role: "tool", parts: [result(`c${k}`, `output ${k}`)] },
    { id: `r${k}`, role: "assistant", parts: [text(`answer ${k}`)] },
  ];
}

const withMeta = (meta: MessageMeta | undefined) => (meta ? { meta } : {});

/** A user message `ask <id>`. */
export const user = (id: string, meta?: MessageMeta): MessageInput => ({
  id,
  role: "user",
  parts: [text(`ask ${id}`)],
  ...withMeta(meta),
});

/** An assistant message with the given parts (typically tool calls). */
export const asks = (id: string, parts: Part[], meta?: MessageMeta): MessageInput => ({
  id,
  role: "assistant",
  parts,
  ...withMeta(meta),
});

/** A tool message with the given parts (tool results). */
export const answers = (id: string, parts: Part[], meta?: MessageMeta): MessageInput => ({
  id,
  role: "tool",
  parts,
  ...withMeta(meta),
});

// ---------------------------------------------------------------------------------------------------------------
// runs

/** Runs the strategy, checks the extended plan validates and renders, and returns the run. */
export async function checkedStep(
  strategy: Strategy,
  log: ThreadLog,
  plan = emptyPlan(log.threadId),
  contextWindow?: number,
): Promise<StrategyRun> {
  const run = await runStrategy(strategy, log, plan, contextWindow === undefined ? {} : { contextWindow });
  expect(validatePlan(run.plan, log)).toEqual([]);
  renderPrompt(log, run.plan, { counter });
  return run;
}

/** Ids of the messages the plan does not drop. */
export function keptIds(log: ThreadLog, plan: CompactionPlan): string[] {
  const resolution = resolveForLog(plan, log);
  return log.messages.filter((m) => decisionAt(resolution, m.seq)?.kind !== "drop").map((m) => m.id);
}

// ---------------------------------------------------------------------------------------------------------------
// window strategies

/**
 * One random case of a window strategy: the proposal validates and renders no bigger, it overrides no decision
 * but a clear, it never drops a pending or pinned group, and a second run proposes nothing. `checkDropped`
 * asserts what else may not go, once per newly dropped message with its group.
 */
export async function checkWindowRun(
  strategy: Strategy,
  log: ThreadLog,
  plan: CompactionPlan,
  checkDropped: (group: Group) => void,
): Promise<void> {
  const before = renderPrompt(log, plan, { counter }).tokenCount;
  const run = await checkedStep(strategy, log, plan);
  expect(renderPrompt(log, run.plan, { counter }).tokenCount).toBeLessThanOrEqual(before);
  const was = resolveForLog(plan, log);
  const now = resolveForLog(run.plan, log);
  for (const m of log.messages) {
    const old = decisionAt(was, m.seq)?.kind ?? "include";
    const next = decisionAt(now, m.seq)?.kind ?? "include";
    if (old !== "include" && old !== "clear") expect(next).toBe(old);
    if (next === "drop" && old !== "drop") {
      const group = log.groupAt(log.groupIndexOf(m.seq));
      expect(group.pending).toBe(false);
      expect(group.seqs.some((s) => log.at(s)!.meta.pinned === true)).toBe(false);
      checkDropped(group);
    }
  }
  expect((await checkedStep(strategy, log, run.plan)).proposal).toEqual({ actions: [] });
}

/**
 * Replays a real trajectory one message at a time under a strategy: every plan validates, the request never
 * grows, and the final request is valid in every provider format. Returns the final log and plan.
 */
export async function replayTrajectory(
  strategy: Strategy,
  file: TrajectoryFile,
): Promise<{ readonly log: ThreadLog; readonly plan: CompactionPlan }> {
  let log = ThreadLog.empty(file.name);
  let plan = emptyPlan(log.threadId);
  for (const input of parseTranscript(file.text)) {
    log = log.append([input]);
    const before = renderPrompt(log, plan, { counter }).tokenCount;
    plan = (await checkedStep(strategy, log, plan)).plan;
    expect(renderPrompt(log, plan, { counter }).tokenCount).toBeLessThanOrEqual(before);
  }
  const prompt = renderPrompt(log, plan, { counter });
  for (const format of ["openai", "responses", "anthropic"] as const) {
    expect(validateProviderRequest(format, toProviderRequest(format, prompt)), format).toEqual([]);
  }
  return { log, plan };
}

// ---------------------------------------------------------------------------------------------------------------
// tool-result strategies

/**
 * Appends `batches` one at a time, running `run` after each: `check` sees the extended plan, a second run on it
 * proposes nothing, and the next batch starts from it.
 */
export async function replayBatches(
  batches: ReadonlyArray<ReadonlyArray<MessageInput>>,
  run: (log: ThreadLog, plan: CompactionPlan) => Promise<StrategyRun>,
  check: (log: ThreadLog, plan: CompactionPlan) => void,
): Promise<void> {
  let log = ThreadLog.empty("t");
  let plan = emptyPlan("t");
  for (const batch of batches) {
    log = log.append(batch);
    const next = await run(log, plan);
    check(log, next.plan);
    expect((await run(log, next.plan)).proposal.actions).toEqual([]);
    plan = next.plan;
  }
}

/** A suite with one test per real trajectory file (`<file>: <test>`), skipped when the trajectories are absent. */
export function describeTrajectories(
  suite: string,
  test: string,
  body: (file: TrajectoryFile) => Promise<void>,
): void {
  describe.skipIf(!trajectoriesAvailable)(suite, () => {
    for (const file of listTrajectories()) it(`${file.name}: ${test}`, () => body(file));
  });
}

/**
 * One test per real trajectory: on the whole run, each strategy's proposal validates and does not grow the
 * request, counted with a real BPE tokenizer.
 */
export function describeProposalsOnTrajectories(strategies: () => ReadonlyArray<Strategy>): void {
  const bpe = createMessageCounter(createTokenizer({ model: "gpt-4o" }), "openai");
  const test = "proposals validate and never grow the rendered request";
  describeTrajectories("on every real trajectory", test, async (file) => {
    const log = importTranscript(ThreadLog.empty(file.name), file.text);
    const empty = emptyPlan(log.threadId);
    const before = renderPrompt(log, empty, { counter: bpe }).tokenCount;
    for (const strategy of strategies()) {
      const { plan } = await runStrategy(strategy, log, empty, { counter: bpe });
      expect(validatePlan(plan, log)).toEqual([]);
      expect(renderPrompt(log, plan, { counter: bpe }).tokenCount).toBeLessThanOrEqual(before);
    }
  });
}
