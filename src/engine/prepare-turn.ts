import type { Pipeline, PipelineResult, PipelineSuccess, RequestSpec } from "../compaction/pipeline-types.js";
import { checkedRequest } from "../compaction/provider-request.js";
import { BudgetInfeasibleError } from "../errors/ledger-error.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import type { ProviderFormat, ProviderRequestMap } from "../render/provider-rules.js";
import type { RenderedPrompt } from "../render/rendered-prompt.js";
import { availableForPrompt, compactionTarget, type TokenBudget } from "../tokens/token-budget.js";
import { scheduleBackground } from "./background-runs.js";
import { type Calibration, calibratedBudget } from "./calibration.js";
import { appliedRefs, saveTurnInputs } from "./call-record.js";
import { commitPlan, observed, onThread, reportSteps, requireMessages } from "./compaction-steps.js";
import type { EngineCore } from "./engine-core.js";
import { inCall } from "./engine-events.js";
import { chainHeads } from "./ledger-audit.js";
import { readerView } from "./reader-view.js";
import {
  announceRehydration,
  leftOut,
  planRehydration,
  type RehydrationPlan,
  rehydratedTokens,
  withRehydration,
} from "./rehydration.js";
import type { LoadedThread } from "./thread-cache.js";
import {
  type PreparedTurn,
  type PrepareTurnOptions,
  parseTurn,
  type TurnInput,
  type TurnStats,
} from "./turn-options.js";

// The turn's option and result types live in turn-options.ts; they are re-exported here, beside the operation.
export type { BudgetInput, PreparedTurn, PrepareTurnOptions, TurnStats } from "./turn-options.js";
export { requestBudget } from "./turn-options.js";

/**
 * The harness step: load → account → compact (free reducers inline, model strategies in the background by
 * default) → validate → commit → render → record the call. Retries on version conflicts with other writers.
 */
export function prepareTurn<F extends ProviderFormat>(
  core: EngineCore,
  threadId: string,
  options: PrepareTurnOptions<F>,
): Promise<PreparedTurn<F>> {
  return observed(core, "prepareTurn", threadId, async () => {
    const started = performance.now();
    const input = parseTurn(core, threadId, options);
    const callNumber = await nextCallNumber(core, threadId);
    // Every event of the turn carries its call number; the call record keeps it for the next turn to count on.
    return inCall(callNumber, () =>
      onThread(core, "prepareTurn", threadId, (state, attempt) =>
        runTurn(core, state, { ...input, callNumber }, started, attempt),
      ),
    );
  });
}

/** The number of the call a turn prepares: one more than the thread's last recorded call's. */
async function nextCallNumber(core: EngineCore, threadId: string): Promise<number> {
  const calls = core.stores.calls;
  const last = (calls.recent === undefined ? await calls.list(threadId) : await calls.recent(threadId, 1)).at(
    -1,
  );
  if (last === undefined) return 1;
  if (last.callNumber !== undefined) return last.callNumber + 1;
  // A thread whose records predate call numbers: count them once; from then on each record holds its number.
  return (await calls.list(threadId)).length + 1;
}

/** How many times a turn compacts again to make room for clearance stubs before it gives up. */
const STUB_REFITS = 3;

async function runTurn<F extends ProviderFormat>(
  core: EngineCore,
  state: LoadedThread,
  input: TurnInput<F>,
  started: number,
  attempt: number,
): Promise<PreparedTurn<F>> {
  const threadId = state.log.threadId;
  requireMessages(state, threadId);
  const calibration = await core.calibration.get(input.model);
  const calibrated = calibratedBudget(input.budget, calibration.ratio);
  let {
    result: compacted,
    rehydration,
    turn,
    waited,
  } = await compactTurn(core, state, input, calibrated, calibration.ratio);
  let budget = turn.budget;
  // What the reader may see: content above the engine's clearance as stubs, or refused before anything is
  // committed. The stubs keep every call and result, so the request is built and checked again when any was made.
  let prompt = readerView(core, state.log, compacted.prompt, "prepareTurn");
  // A stub can be longer than the short message it stands for, so a request the pipeline fitted can be over by
  // those few tokens: compact again with that much less room (the pipeline's decisions depend on the budget, the
  // rendering, and so replay, does not). Never sent over the budget: refused, before anything is committed or
  // recorded, only when compacting harder cannot make room.
  for (
    let extra = 0, refits = 0;
    prompt !== compacted.prompt && prompt.tokenCount > availableForPrompt(budget);
  ) {
    if (refits === STUB_REFITS) {
      throw new BudgetInfeasibleError(
        "the stubs of content above the reader's clearance are longer than what they replace, and compacting harder does not make room for them",
        prompt.tokenCount,
        availableForPrompt(budget),
        { threadId },
      );
    }
    refits++;
    // The overflow counts the stubs of everything the request kept; compacting keeps fewer. Each refit takes that
    // much more room away, but at most half of what is left, so the pipeline always has a target to aim for.
    const room = availableForPrompt(budget);
    extra = Math.min(extra + prompt.tokenCount - room, Math.floor(room * (1 - 0.5 ** refits)));
    const tighter = { ...calibrated, safetyMargin: calibrated.safetyMargin + extra };
    ({
      result: compacted,
      rehydration,
      turn,
      waited,
    } = await compactTurn(core, state, input, tighter, calibration.ratio));
    budget = { ...turn.budget, safetyMargin: turn.budget.safetyMargin - extra };
    prompt = readerView(core, state.log, compacted.prompt, "prepareTurn");
  }
  const { request: _built, ...rest } = compacted;
  const result: PipelineSuccess = prompt === compacted.prompt ? compacted : { ...rest, prompt };
  // Transactional: the pipeline built the request in the caller's format (F) and checked it before anything is
  // committed, so a format it did not validate can never leave a committed plan without its call. A pipeline of
  // the caller's own that returns only the prompt gets its request built and checked here, the same way.
  const request = (result.request ??
    checkedRequest(result.prompt, requestSpec(input))) as ProviderRequestMap[F];
  const figures = { tokensBefore: result.report.tokensBefore, tokensAfter: result.report.tokensAfter };
  if (result.changed) {
    await commitPlan(core, "prepareTurn", state.plan, result.plan, figures, attempt, state.log);
  }
  // A background run starts only once the turn is finished (its call recorded): with a store that answers
  // asynchronously, a run started earlier would take the event loop while the turn waits for that answer.
  let finished!: () => void;
  const turnDone = new Promise<void>((resolve) => {
    finished = resolve;
  });
  const job = {
    threadId,
    log: state.log,
    basePlan: state.plan,
    replaces: result.plan,
    // Without this turn's room for what it brought back: the summary is for the turns after it.
    budget: calibrated,
    tokensAfter: result.report.tokensAfter,
    calibrationRatio: calibration.ratio,
  };
  // A durable queue holds the job before the turn returns, so it outlives a worker that exits right after.
  const scheduled =
    (await core.pipelines()).background &&
    !waited &&
    result.report.triggered &&
    (await scheduleBackground(core, job, turnDone));
  try {
    return await finishTurn(core, state, turn.input, request, {
      result,
      rehydration,
      calibration,
      budget,
      scheduled,
      started,
      conflicts: attempt - 1,
      toolTokens: input.toolTokens,
    });
  } finally {
    finished();
  }
}

/**
 * Runs the turn's pipelines. A turn that brings content back (the caller's, or what the model or the user referred
 * to since the previous call) makes room with the free reducers and the fallback only: a summary or a new artifact
 * waits for a later turn, since it would take away what was just brought back (no ping-pong). When that cannot fit,
 * the referred artifacts are left out and the turn compacts as any other. Never stuck: when the free strategies
 * cannot make the request fit, the turn runs the summarization it needs (the whole pipeline) itself instead of
 * failing while a background run is yet to come.
 */
async function compactTurn<F extends ProviderFormat>(
  core: EngineCore,
  state: LoadedThread,
  input: TurnInput<F>,
  calibrated: TokenBudget,
  ratio: number,
): Promise<{
  readonly result: PipelineSuccess;
  readonly rehydration: RehydrationPlan;
  readonly turn: { readonly input: TurnInput<F>; readonly budget: TokenBudget };
  readonly waited: boolean;
}> {
  const threadId = state.log.threadId;
  const explicit = rehydratedTokens(core, input.inputs.rehydrated);
  let rehydration = await planRehydration(
    core,
    state.log,
    state.plan,
    calibrated,
    explicit,
    input.rehydrationReserve,
  );
  let turn = withRehydration(input, calibrated, rehydration);
  let announced = false;
  const run = async (pipeline: Pipeline): Promise<PipelineResult> => {
    const out = await runInline(core, pipeline, state, turn.input, turn.budget, ratio, !announced);
    announced = true;
    reportSteps(core, "prepareTurn", threadId, out.report);
    return out;
  };
  const pipelines = await core.pipelines();
  let result: PipelineResult | undefined;
  if (turn.input.inputs.rehydrated.length > 0) {
    result = await run(pipelines.calm);
    if (!result.ok && result.error instanceof BudgetInfeasibleError && rehydration.artifacts.length > 0) {
      rehydration = leftOut(rehydration);
      turn = withRehydration(input, calibrated, rehydration);
      result = undefined;
    }
  }
  result ??= await run(pipelines.inline);
  const waited =
    !result.ok && result.error instanceof BudgetInfeasibleError && pipelines.inline !== pipelines.full;
  if (waited) result = await run(pipelines.full);
  if (!result.ok) throw result.error;
  announceRehydration(core, threadId, input.inputs.rehydrated, rehydration);
  return { result, rehydration, turn, waited };
}

/** The request body the turn asks its pipeline for: the caller's format, cache breakpoints and the turn's tools. */
function requestSpec<F extends ProviderFormat>(input: TurnInput<F>): RequestSpec {
  return { format: input.format, tools: input.tools, cacheBreakpoints: input.cacheControl };
}

/** Announces the check and runs one of the turn's pipelines (its free strategies, or all of them). */
async function runInline<F extends ProviderFormat>(
  core: EngineCore,
  pipeline: Pipeline,
  state: LoadedThread,
  input: TurnInput<F>,
  budget: TokenBudget,
  ratio: number,
  announce = true,
): Promise<PipelineResult> {
  const threadId = state.log.threadId;
  // The check is announced once per turn, not again when the turn runs another of its pipelines.
  if (announce) {
    core.events.emit("check_started", threadId, {
      operation: "prepareTurn",
      logSeq: state.log.length,
      planVersion: state.plan.version,
      target: compactionTarget(budget),
      calibrationRatio: ratio,
    });
  }
  const result = await pipeline.run({
    log: state.log,
    plan: state.plan,
    counter: core.counter,
    budget,
    injections: input.inputs.injections,
    rehydrated: input.inputs.rehydrated,
    ...(state.previous === undefined ? {} : { previous: state.previous }),
    ...(input.signal === undefined ? {} : { signal: input.signal }),
    request: requestSpec(input),
    ...(state.abandon === undefined ? {} : { abandon: state.abandon }),
  });
  return result;
}

interface TurnOutcome {
  readonly result: PipelineSuccess;
  readonly rehydration: RehydrationPlan;
  readonly calibration: Calibration;
  readonly budget: TokenBudget;
  readonly scheduled: boolean;
  readonly started: number;
  readonly conflicts: number;
  readonly toolTokens: number;
}

async function finishTurn<F extends ProviderFormat>(
  core: EngineCore,
  state: LoadedThread,
  input: TurnInput<F>,
  request: ProviderRequestMap[F],
  outcome: TurnOutcome,
): Promise<PreparedTurn<F>> {
  const { result, calibration } = outcome;
  const threadId = state.log.threadId;
  const prompt = result.prompt;
  core.events.emit("rendered", threadId, {
    format: input.format,
    tokens: prompt.tokenCount,
    messages: prompt.messages.length,
    hash: prompt.hash,
  });
  const callId = core.newCallId();
  await saveTurnInputs(
    core.stores.artifacts,
    { tenant: core.settings.tenant, threadId, callId },
    input.inputs,
  );
  const durationMs = performance.now() - outcome.started;
  await recordCall(core, state, result.plan, prompt, {
    callId,
    format: input.format,
    model: input.model,
    callNumber: input.callNumber,
    durationMs,
    // The provider's input count includes the tool definitions and request framing the budget reserves.
    fixedTokens: outcome.budget.toolSchemaTokens + outcome.budget.formattingOverhead,
    budget: outcome.budget,
    rehydration: outcome.rehydration,
  });
  core.loader.remember(threadId, { log: state.log, plan: result.plan, previous: prompt });
  core.loader.settled(state.log, result.plan, result.changed);
  const stats = turnStats(state, outcome, prompt, calibration, durationMs);
  core.events.emit("completed", threadId, {
    operation: "prepareTurn",
    durationMs,
    callId,
    tokens: prompt.tokenCount,
    tokensBefore: result.report.tokensBefore,
    compacted: result.changed,
  });
  return { callId, request, prompt, stats };
}

async function recordCall(
  core: EngineCore,
  state: LoadedThread,
  plan: CompactionPlan,
  prompt: RenderedPrompt,
  call: {
    callId: string;
    format: string;
    model: string | undefined;
    callNumber: number | undefined;
    durationMs: number;
    fixedTokens: number;
    budget: TokenBudget;
    rehydration: RehydrationPlan;
  },
): Promise<void> {
  const { rehydrated, blocked } = call.rehydration;
  const refs = appliedRefs(state.log, plan);
  const heads = await chainHeads(core, state.log.threadId, state.log.length, plan.version);
  await core.stores.calls.record({
    callId: call.callId,
    threadId: state.log.threadId,
    logSeq: state.log.length,
    ...(call.callNumber === undefined ? {} : { callNumber: call.callNumber }),
    planVersion: plan.version,
    format: call.format,
    ...(call.model === undefined ? {} : { model: call.model }),
    requestHash: prompt.hash,
    // The renderer's own count (plus the tools and framing the budget reserves), not the calibrated one:
    // calibration learns usage / this figure, and a reference that does not move with the ratio keeps that
    // learning free of feedback; leaving the tools out would count them as estimation error.
    tokenEstimate: prompt.tokenCount + call.fixedTokens,
    // What an audit draws the request against (the report's budget line).
    budget: {
      contextWindow: call.budget.contextWindow,
      available: availableForPrompt(call.budget),
      target: compactionTarget(call.budget),
    },
    summaries: refs.summaries,
    evictions: refs.evictions,
    ...(refs.summarizers.length === 0 ? {} : { summarizers: refs.summarizers }),
    createdAt: new Date(core.now()).toISOString(),
    durationMs: call.durationMs,
    // What it brought back and what it left out (the cooldown reads these across workers).
    ...(rehydrated.length === 0 ? {} : { rehydrated }),
    ...(blocked.length === 0 ? {} : { rehydrationBlocked: blocked }),
    ...heads,
    clearance: core.settings.clearance,
  });
  core.events.emit("call_recorded", state.log.threadId, {
    callId: call.callId,
    planVersion: plan.version,
    logSeq: state.log.length,
    tokenEstimate: prompt.tokenCount + call.fixedTokens,
  });
}

function turnStats(
  state: LoadedThread,
  outcome: TurnOutcome,
  prompt: RenderedPrompt,
  calibration: Calibration,
  durationMs: number,
): TurnStats {
  const { result, budget } = outcome;
  return {
    tokens: prompt.tokenCount,
    calibratedTokens: Math.ceil(prompt.tokenCount * calibration.ratio),
    tokensBefore: result.report.tokensBefore,
    budget: {
      contextWindow: budget.contextWindow,
      available: availableForPrompt(budget),
      target: compactionTarget(budget),
    },
    calibration,
    planVersion: result.plan.version,
    logSeq: state.log.length,
    compacted: result.changed,
    actionsByKind: result.report.actionsByKind,
    unchangedLeadingTokens: prompt.unchangedLeadingTokens,
    loadedFrom: state.source,
    conflicts: outcome.conflicts,
    backgroundScheduled: outcome.scheduled,
    durationMs,
    toolTokens: outcome.toolTokens,
    rehydrated: outcome.rehydration.rehydrated,
    rehydrationBlocked: outcome.rehydration.blocked,
  };
}
