import { BudgetInfeasibleError, type LedgerError } from "../errors/ledger-error.js";
import { type CompactionPlan, nextPlan, type PlanAction } from "../plan/compaction-plan.js";
import { validatePlan } from "../plan/validate-plan.js";
import { renderPrompt } from "../render/render-prompt.js";
import type { RenderedPrompt } from "../render/rendered-prompt.js";
import { taskSeqOf, untouchableSeqs } from "../strategies/protected-core.js";
import type { Proposal, StrategyContext, StrategyNote } from "../strategies/strategy.js";
import { compactionTarget } from "../tokens/token-budget.js";
import { historyViews } from "./history-views.js";
import { asLedgerError, failure, finish, providerProblems } from "./pipeline-outcome.js";
import type { StepOutcome, StepReport } from "./pipeline-report.js";
import type { Run, RunSettings } from "./pipeline-run-state.js";
import type { PipelineInput, PipelineResult, PipelineStrategy } from "./pipeline-types.js";

function historyTokens(input: PipelineInput, settings: RunSettings, plan: CompactionPlan): number {
  return historyPrompt(input, settings, plan).tokenCount;
}

/** The history under `plan` as the run measures it: no injected or rehydrated content, plan not re-validated. */
function historyPrompt(input: PipelineInput, settings: RunSettings, plan: CompactionPlan): RenderedPrompt {
  return renderPrompt(input.log, plan, {
    counter: input.counter,
    validatePlan: false,
    pendingCalls: settings.pendingCalls,
    ...(input.previous === undefined ? {} : { previous: input.previous }),
  });
}

function contextFor(run: Run): StrategyContext {
  const { input, settings } = run;
  return {
    log: input.log,
    plan: run.plan,
    counter: input.counter,
    tokens: run.tokens,
    target: run.target,
    goal: run.goal,
    minGain: run.minGain,
    contextWindow: input.budget.contextWindow,
    budget: input.budget,
    taskSeq: taskSeqOf(input.log, settings.task, input.plan),
    durability: settings.durability,
    ...signalOf(input),
    measure: (plan) => historyTokens(input, settings, plan),
    ...historyViews(input.log, input.counter),
  };
}

/** What strategies see as `signal`: the caller's, and `abandon` (either aborts the run's long work). */
function signalOf(input: PipelineInput): { readonly signal?: AbortSignal } {
  const { signal, abandon } = input;
  if (abandon === undefined) return signal === undefined ? {} : { signal };
  return { signal: signal === undefined ? abandon : AbortSignal.any([signal, abandon]) };
}

/** Whether whoever handed out the run's log abandoned the run (see `PipelineInput.abandon`). */
function abandoned(run: Run): boolean {
  return run.input.abandon?.aborted === true;
}

/**
 * One run of the pipeline (see `createPipeline`). Never throws: failures come back as data. An abandoned run
 * (`PipelineInput.abandon`) leaves no trace in the pipeline's failure counters: its caller runs the same turn
 * again on more of the thread, and that run must see the counters as they were.
 */
export async function runPipeline(input: PipelineInput, settings: RunSettings): Promise<PipelineResult> {
  const counters = [...settings.failures].map(([key, state]) => [key, { ...state }] as const);
  const result = await runOnce(input, settings);
  if (input.abandon?.aborted === true) {
    settings.failures.clear();
    for (const [key, state] of counters) settings.failures.set(key, state);
  }
  return result;
}

async function runOnce(input: PipelineInput, settings: RunSettings): Promise<PipelineResult> {
  const started = performance.now();
  const target = compactionTarget(input.budget);
  let before: RenderedPrompt;
  try {
    before = historyPrompt(input, settings, input.plan);
  } catch (error) {
    const run = newRun(input, settings, target, 0, started);
    return failure(run, asLedgerError(error));
  }
  const run = newRun(input, settings, target, before.tokenCount, started);
  run.prompt = before;
  try {
    for (const strategy of settings.strategies) {
      await step(run, strategy);
      if (abandoned(run)) return failure(run, asLedgerError(input.abandon!.reason));
    }
    if (settings.fallback !== undefined && run.tokens > target) {
      const error = await step(run, settings.fallback);
      if (abandoned(run)) return failure(run, asLedgerError(input.abandon!.reason));
      if (error !== undefined) return failure(run, error);
    }
  } catch (error) {
    // Measuring between steps reads the log too: a partial one stops the run there.
    if (abandoned(run)) return failure(run, asLedgerError(input.abandon!.reason));
    throw error;
  }
  return finish(run, input.request);
}

function newRun(
  input: PipelineInput,
  settings: RunSettings,
  target: number,
  tokensBefore: number,
  started: number,
): Run {
  const triggered = tokensBefore > target;
  return {
    input,
    settings,
    target,
    minGain: settings.minGain ?? Math.ceil(target * 0.1),
    triggered,
    goal: triggered ? Math.floor(target * settings.goalRatio) : target,
    plan: input.plan,
    added: [],
    tokens: tokensBefore,
    prompt: undefined,
    steps: [],
    started,
    tokensBefore,
  };
}

/** Whether a strategy runs now, or why not. */
function gate(run: Run, strategy: PipelineStrategy, ctx: StrategyContext): string | undefined {
  if (strategy.cost === "free" || strategy === run.settings.fallback) return undefined;
  const key = `${run.input.log.threadId}\u0000${strategy.name}`;
  const state = run.settings.failures.get(key);
  if (state !== undefined && state.cooldown > 0) {
    state.cooldown--;
    return `cooling down after ${state.count} failed run(s)`;
  }
  const aim = run.triggered ? run.goal : run.target;
  if (run.tokens > aim) return undefined;
  return strategy.due?.(ctx) === true ? undefined : "under target";
}

function noteFailure(run: Run, strategy: PipelineStrategy, failed: boolean): void {
  if (strategy.cost === "free") return;
  const key = `${run.input.log.threadId}\u0000${strategy.name}`;
  if (!failed) {
    run.settings.failures.delete(key);
    return;
  }
  const state = run.settings.failures.get(key) ?? { count: 0, cooldown: 0 };
  // Every attempt of this run failed: sit out the next runs rather than hammer a failing model every turn.
  state.count++;
  state.cooldown = run.settings.failureCooldown;
  run.settings.failures.set(key, state);
}

/** Asks a strategy (with retries for model strategies) for a proposal; errors become a failed outcome. */
async function ask(
  run: Run,
  strategy: PipelineStrategy,
  ctx: StrategyContext,
): Promise<{ proposal?: Proposal; error?: unknown; attempts: number }> {
  const tries = strategy.cost === "model" ? run.settings.maxAttempts : 1;
  let last: { proposal?: Proposal; error?: unknown; attempts: number } = { attempts: 0 };
  for (let attempt = 1; attempt <= tries; attempt++) {
    try {
      const proposal = await strategy.propose(ctx);
      const failed = proposal.actions.length === 0 && proposal.notes?.some((n) => n.level === "error");
      last = { proposal, attempts: attempt };
      if (!failed) return last;
    } catch (error) {
      last = { error, attempts: attempt };
      if (error instanceof BudgetInfeasibleError) return last;
    }
    if (run.input.signal?.aborted === true || abandoned(run)) break;
  }
  return last;
}

/**
 * Checks a proposal against the strategy's declared kinds, and that it leaves what no strategy may compact alone:
 * system prompts, pinned messages, the task and the last user message. Returns the problems.
 */
function check(run: Run, strategy: PipelineStrategy, actions: ReadonlyArray<PlanAction>): string[] {
  const problems: string[] = [];
  const { log } = run.input;
  actions.forEach((action, i) => {
    if (!strategy.kinds.includes(action.kind)) {
      problems.push(`action ${i} is a ${action.kind}, which ${strategy.name} does not declare`);
    }
    if (!Array.isArray(action.span) || action.span.length === 0)
      problems.push(`action ${i} has an empty span`);
    if (action.kind === "include") return;
    run.protectedSeqs ??= untouchableSeqs(log, taskSeqOf(log, run.settings.task, run.input.plan));
    // Spans list ids in log order: the hint finds each seq without hashing the id (a summary names thousands).
    let hint = 0;
    for (const id of action.span) {
      const seq = log.seqOf(id, hint);
      if (seq !== undefined) hint = seq + 1;
      // A protected message may be cut to the excerpt the action records (head and tail, with a marker): that is
      // how the protected core itself fits when one of its messages alone is too large.
      const excerpted = (): boolean =>
        action.kind === "clear" && action.record.excerpts?.some((e) => e.messageId === id) === true;
      if (seq !== undefined && run.protectedSeqs.has(seq) && !excerpted()) {
        problems.push(
          `action ${i} (${action.kind}) touches message ${JSON.stringify(id)}, which is protected`,
        );
        break;
      }
    }
  });
  return problems;
}

/** Runs one strategy; returns the error that ends the run (only a fallback's infeasible budget does). */
async function step(run: Run, strategy: PipelineStrategy): Promise<LedgerError | undefined> {
  const t0 = performance.now();
  const before = run.tokens;
  const ctx = contextFor(run);
  const record = (outcome: StepOutcome, extra: Partial<StepReport> = {}): void => {
    run.steps.push({
      strategy: strategy.name,
      cost: strategy.cost,
      outcome,
      tokensBefore: before,
      tokensAfter: run.tokens,
      actions: 0,
      notes: [],
      attempts: 0,
      durationMs: performance.now() - t0,
      ...extra,
    });
  };
  const skip = gate(run, strategy, ctx);
  if (skip !== undefined) {
    record("skipped", { detail: skip });
    return undefined;
  }
  const { proposal, error, attempts } = await ask(run, strategy, ctx);
  const notes: ReadonlyArray<StrategyNote> = proposal?.notes ?? [];
  if (proposal === undefined) {
    noteFailure(run, strategy, true);
    const failure = asLedgerError(error);
    record("failed", { detail: failure.message, attempts });
    return error instanceof BudgetInfeasibleError ? error : undefined;
  }
  if (proposal.actions.length === 0) {
    const failed = notes.some((n) => n.level === "error");
    noteFailure(run, strategy, failed);
    record(failed ? "failed" : "nothing", {
      notes,
      attempts,
      ...(failed ? { detail: notes[0]!.message } : {}),
    });
    return undefined;
  }
  noteFailure(run, strategy, false);
  apply(run, strategy, proposal, notes, attempts, record);
  return undefined;
}

function apply(
  run: Run,
  strategy: PipelineStrategy,
  proposal: Proposal,
  notes: ReadonlyArray<StrategyNote>,
  attempts: number,
  record: (outcome: StepOutcome, extra?: Partial<StepReport>) => void,
): void {
  const { input } = run;
  const base = { notes, attempts, actions: proposal.actions.length };
  const problems = check(run, strategy, proposal.actions);
  const candidate =
    problems.length > 0
      ? undefined
      : nextPlan(input.plan, [...input.plan.actions, ...run.added, ...proposal.actions], input.log.length);
  if (candidate !== undefined) problems.push(...validatePlan(candidate, input.log).map((p) => p.message));
  if (candidate === undefined || problems.length > 0) {
    record("rejected", { ...base, detail: problems.slice(0, 3).join("; ") });
    return;
  }
  const prompt = historyPrompt(input, run.settings, candidate);
  const tokens = prompt.tokenCount;
  const gain = run.tokens - tokens;
  if (gain <= 0) {
    record("no_gain", { ...base, detail: `the request would grow by ${-gain} tokens` });
    return;
  }
  if (
    strategy.cost === "free" &&
    proposal.binding !== true &&
    run.tokens <= run.target &&
    gain < run.minGain
  ) {
    record("deferred", { ...base, detail: `saves ${gain} < ${run.minGain} tokens while under target` });
    return;
  }
  // A plan can be valid for the log and still leave a request no provider takes (e.g. nothing but the system
  // prompt): such a proposal is rejected here, so one bad strategy never fails the whole run. Checked only for
  // a proposal the run would take (rendering the request in every format is most of a proposal's cost).
  const invalid = providerProblems(run.settings.formats, prompt, () =>
    renderPrompt(input.log, run.plan, {
      counter: input.counter,
      validatePlan: false,
      pendingCalls: run.settings.pendingCalls,
    }),
  );
  if (invalid !== undefined) {
    record("rejected", { ...base, detail: invalid });
  } else {
    run.added.push(...proposal.actions);
    run.plan = candidate;
    run.tokens = tokens;
    run.prompt = prompt;
    record("applied", base);
  }
}
