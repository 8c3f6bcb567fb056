/**
 * Turn-by-turn simulation of an agent run: before every assistant message of a transcript the harness asks for
 * the request it would send (append the messages since the last call, run the pipeline, render), exactly as a
 * harness calling the engine once per model call would. Used by the trajectory test and the pipeline benchmark.
 */

import type { Pipeline } from "../../src/compaction/pipeline-types.js";
import type { MessageInput } from "../../src/log/message.js";
import { ThreadLog } from "../../src/log/thread-log.js";
import { emptyPlan, nextPlan, type PlanAction } from "../../src/plan/compaction-plan.js";
import type { ProviderFormat } from "../../src/render/provider-rules.js";
import { toProviderRequest, validateProviderRequest } from "../../src/render/provider-rules.js";
import { renderPrompt } from "../../src/render/render-prompt.js";
import type { RenderedPrompt } from "../../src/render/rendered-prompt.js";
import { protectedGroups } from "../../src/strategies/hard-fallback.js";
import { createTokenBudget } from "../../src/tokens/token-budget.js";
import type { MessageCounter } from "../../src/tokens/tokenizer.js";

/** The figures of one simulated run. */
export interface SimulationResult {
  readonly budget: number;
  readonly fullTokens: number;
  /** Model calls simulated (one per assistant message). */
  readonly requests: number;
  /** Requests whose run failed (previous plan kept, request not sent). */
  readonly failures: number;
  /**
   * Of the failures, those no compaction could avoid: the system prompt, pinned messages, the last user message
   * and pending calls alone exceed the budget.
   */
  readonly unavoidable: number;
  /**
   * Of the failures, those where the fallback's protected content (the last turn with its tool bodies stubbed,
   * system, pinned, pending) alone is over the budget, by an independent naive computation.
   */
  readonly protectedOverBudget: number;
  readonly failureMessages: ReadonlyArray<string>;
  /** Requests over the budget or invalid for a provider (must be 0). */
  readonly violations: ReadonlyArray<string>;
  /** Runs that changed the plan. */
  readonly compactions: number;
  /** Sum over requests of (uncompacted tokens − sent tokens) / Σ uncompacted tokens. */
  readonly savedShare: number;
  /** Consecutive pairs of sent requests the stability figures average over (0: no figure). */
  readonly pairs: number;
  /** Mean over requests (after the first) of unchanged leading tokens / previous request's tokens. */
  readonly stableOfPrevious: number;
  /**
   * Mean over the same pairs of the most any renderer could keep: this request's tokens minus the messages that
   * are new since the previous request (they cannot be cached), over this request's tokens.
   */
  readonly stableCeiling: number;
  /** Mean over requests (after the first) of unchanged leading tokens / this request's tokens. */
  readonly stableOfCurrent: number;
  readonly maxTokens: number;
  readonly durationMs: number;
}

/** Options of {@link simulateTurns}. */
export interface SimulationOptions {
  readonly messages: ReadonlyArray<MessageInput>;
  readonly counter: MessageCounter;
  /** A fresh pipeline for this run (pipelines keep per-thread failure counters). */
  readonly pipeline: Pipeline;
  /** Budget as a share of the full transcript's rendered size. */
  readonly share: number;
  /** Formats to check every request against (default: all three). */
  readonly formats?: ReadonlyArray<ProviderFormat>;
  readonly threadId?: string;
}

/**
 * Tokens of the smallest request the fallback's rules allow, computed naively and independently of the fallback:
 * every unprotected group dropped, and with `stubBodies` every tool result and call argument list of the protected
 * (non-pending) tool-call groups cleared. `lastUserMessage` without stubs is the floor of any compaction at all.
 */
export function floorTokens(
  log: ThreadLog,
  counter: MessageCounter,
  protect: "lastTurn" | "lastUserMessage" = "lastUserMessage",
  stubBodies = false,
): number {
  // The task (the first user message) is part of every protected core, as the pipeline's default says.
  const keep = protectedGroups(log, protect, log.firstUserSeq);
  const drop: string[] = [];
  const clear: string[] = [];
  for (const group of log.groups) {
    if (keep[group.index] === 0) drop.push(...group.messageIds);
    else if (stubBodies && group.kind === "tool_call" && !group.pending) {
      for (const seq of group.seqs) {
        const m = log.at(seq)!;
        const body = m.parts.some(
          (p) => p.type === "tool_result" || (p.type === "tool_call" && p.args.length > 2),
        );
        if (body && m.meta.pinned !== true) clear.push(m.id);
      }
    }
  }
  const actions: PlanAction[] = [];
  if (drop.length > 0) {
    actions.push({
      kind: "drop",
      span: drop,
      record: { kind: "drop", reason: "floor" },
      strategy: "floor",
      reason: "floor",
    });
  }
  if (clear.length > 0) {
    const record = { kind: "clear" as const, clearArgs: true };
    actions.push({ kind: "clear", span: clear, record, strategy: "floor", reason: "floor" });
  }
  const plan = emptyPlan(log.threadId);
  const floor = actions.length === 0 ? plan : nextPlan(plan, actions, log.length);
  return renderPrompt(log, floor, { counter, validatePlan: false }).tokenCount;
}

/** Tokens of the rendered messages that stand for log messages appended since the previous request. */
function newTokens(log: ThreadLog, prompt: RenderedPrompt, previousLength: number): number {
  let sum = 0;
  for (const message of prompt.messages) {
    const ids = message.provenance.sourceIds;
    if (ids.some((id) => (log.seqOf(id) ?? 0) >= previousLength)) sum += message.tokens;
  }
  return sum;
}

/** Indices where a model call happens: before each assistant message (and once at the end). */
function callPoints(messages: ReadonlyArray<MessageInput>): number[] {
  const points: number[] = [];
  messages.forEach((m, i) => {
    if (m.role === "assistant" && i > 0 && messages[i - 1]!.role !== "assistant") points.push(i);
  });
  if (points[points.length - 1] !== messages.length) points.push(messages.length);
  return points;
}

/** Runs the simulation and collects its figures; violations are collected, not thrown. */
export async function simulateTurns(options: SimulationOptions): Promise<SimulationResult> {
  const started = performance.now();
  const { counter, messages } = options;
  const threadId = options.threadId ?? "sim";
  const formats = options.formats ?? ["openai", "responses", "anthropic"];
  const full = ThreadLog.from(threadId, messages);
  const fullTokens = renderPrompt(full, emptyPlan(threadId), { counter }).tokenCount;
  const budgetTokens = Math.floor(fullTokens * options.share);
  const budget = createTokenBudget({ contextWindow: budgetTokens, reserveOutput: 0, safetyMargin: 0 });
  let log = ThreadLog.empty(threadId);
  let plan = emptyPlan(threadId);
  let previous: RenderedPrompt | undefined;
  let from = 0;
  const out = {
    requests: 0,
    failures: 0,
    unavoidable: 0,
    protectedOverBudget: 0,
    compactions: 0,
    maxTokens: 0,
    rawSum: 0,
    sentSum: 0,
  };
  const failureMessages: string[] = [];
  const violations: string[] = [];
  let stablePrev = 0;
  let stableCur = 0;
  let ceiling = 0;
  let previousLength = 0;
  let pairs = 0;
  for (const point of callPoints(messages)) {
    log = log.append(messages.slice(from, point));
    from = point;
    out.requests++;
    const result = await options.pipeline.run({
      log,
      plan,
      counter,
      budget,
      ...(previous === undefined ? {} : { previous }),
    });
    if (!result.ok) {
      out.failures++;
      if (floorTokens(log, counter) > budgetTokens) out.unavoidable++;
      // Judged independently of the pipeline: would the fallback's own rules (last turn kept, its tool bodies
      // stubbed) leave the request over budget?
      if (floorTokens(log, counter, "lastTurn", true) > budgetTokens) out.protectedOverBudget++;
      if (failureMessages.length < 5)
        failureMessages.push(`request ${out.requests}: ${result.error.message}`);
      continue;
    }
    if (result.changed) out.compactions++;
    plan = result.plan;
    const prompt = result.prompt;
    if (prompt.tokenCount > budgetTokens) {
      violations.push(`request ${out.requests}: ${prompt.tokenCount} tokens > budget ${budgetTokens}`);
    }
    for (const format of formats) {
      const problems = validateProviderRequest(format, toProviderRequest(format, prompt));
      if (problems.length > 0) violations.push(`request ${out.requests} (${format}): ${problems[0]}`);
    }
    const raw = renderPrompt(log, emptyPlan(threadId), { counter, validatePlan: false }).tokenCount;
    out.rawSum += raw;
    out.sentSum += prompt.tokenCount;
    out.maxTokens = Math.max(out.maxTokens, prompt.tokenCount);
    if (previous !== undefined) {
      stablePrev += prompt.unchangedLeadingTokens / previous.tokenCount;
      stableCur += prompt.unchangedLeadingTokens / prompt.tokenCount;
      ceiling += (prompt.tokenCount - newTokens(log, prompt, previousLength)) / prompt.tokenCount;
      pairs++;
    }
    previous = prompt;
    previousLength = log.length;
  }
  return {
    budget: budgetTokens,
    fullTokens,
    requests: out.requests,
    failures: out.failures,
    unavoidable: out.unavoidable,
    protectedOverBudget: out.protectedOverBudget,
    failureMessages,
    violations,
    compactions: out.compactions,
    savedShare: out.rawSum === 0 ? 0 : (out.rawSum - out.sentSum) / out.rawSum,
    pairs,
    stableOfPrevious: pairs === 0 ? 0 : stablePrev / pairs,
    stableOfCurrent: pairs === 0 ? 0 : stableCur / pairs,
    stableCeiling: pairs === 0 ? 0 : ceiling / pairs,
    maxTokens: out.maxTokens,
    durationMs: performance.now() - started,
  };
}
