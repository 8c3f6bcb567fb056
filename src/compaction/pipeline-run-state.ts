import type { CompactionPlan, PlanAction } from "../plan/compaction-plan.js";
import type { ProviderFormat } from "../render/provider-rules.js";
import type { PendingCallMode } from "../render/render-prompt.js";
import type { RenderedPrompt } from "../render/rendered-prompt.js";
import type { DurabilityClasses } from "../strategies/durability-classes.js";
import type { TaskRule } from "../strategies/protected-core.js";
import type { Strategy } from "../strategies/strategy.js";
import type { StepReport } from "./pipeline-report.js";
import type { PipelineInput, PipelineStrategy } from "./pipeline-types.js";

/** Settings of a pipeline, fixed when it is created (plus the failure counters it keeps across runs). */
export interface RunSettings {
  readonly strategies: ReadonlyArray<PipelineStrategy>;
  readonly fallback: Strategy | undefined;
  readonly goalRatio: number;
  readonly minGain: number | undefined;
  readonly maxAttempts: number;
  readonly failureCooldown: number;
  readonly formats: ReadonlyArray<ProviderFormat>;
  readonly pendingCalls: PendingCallMode;
  /** Which message is the thread's task, protected like the newest user message. */
  readonly task: TaskRule;
  /** How tool results are classed for durability. */
  readonly durability: DurabilityClasses;
  /** Per thread and model strategy: consecutive failures and runs left to sit out. */
  readonly failures: Map<string, { count: number; cooldown: number }>;
}

/** The mutable state of one run. */
export interface Run {
  readonly input: PipelineInput;
  readonly settings: RunSettings;
  readonly target: number;
  readonly minGain: number;
  readonly triggered: boolean;
  readonly goal: number;
  plan: CompactionPlan;
  readonly added: PlanAction[];
  tokens: number;
  /**
   * The render of `plan` without the turn's injected and rehydrated content (with `previous`), which the run
   * measured `tokens` from: when the turn adds nothing at the end, it is the request, and is not rendered again.
   */
  prompt: RenderedPrompt | undefined;
  /** Computed on the first proposal that needs it. */
  protectedSeqs?: Set<number>;
  readonly steps: StepReport[];
  readonly started: number;
  readonly tokensBefore: number;
}
