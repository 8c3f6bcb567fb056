/**
 * The context-ledger systems of the retention benchmark: the engine with its defaults (once awaiting `idle()`
 * between calls, once never awaiting it, as a fast tool loop would) and the default pipeline run directly over
 * a ThreadLog and a plan. Each gets a budget whose prompt room equals the benchmark budget exactly.
 */

import { createDefaultPipeline } from "../../src/compaction/default-pipeline.js";
import { createContextEngine } from "../../src/context-engine.js";
import type { MessageInput } from "../../src/log/message.js";
import { ThreadLog } from "../../src/log/thread-log.js";
import { type CompactionPlan, emptyPlan } from "../../src/plan/compaction-plan.js";
import type { OpenAIChatRequest } from "../../src/render/openai-chat-adapter.js";
import { toProviderRequest } from "../../src/render/provider-rules.js";
import type { RenderedPrompt } from "../../src/render/rendered-prompt.js";
import { createMemoryStores } from "../../src/stores/memory/memory-stores.js";
import { createTokenBudget, type TokenBudget } from "../../src/tokens/token-budget.js";
import type { MessageCounter } from "../../src/tokens/tokenizer.js";

/** One system replaying one run: `call` appends what happened since the last call and returns the request. */
export interface SystemRun {
  /** Throws when the system cannot produce a request (counted as a failed call; the run goes on). */
  call(fresh: ReadonlyArray<MessageInput>): Promise<OpenAIChatRequest>;
  /** Runs between calls, outside the timing (e.g. awaiting the engine's background work). */
  settle(): Promise<void>;
  /** Runs after the last call. */
  close(): Promise<void>;
}

/** A system under test. */
export interface QualitySystem {
  readonly key: string;
  readonly label: string;
  readonly family: "context-ledger" | "peer";
  /** How it is configured, for the report. */
  readonly setting: string;
  start(budget: number, counter: MessageCounter): SystemRun;
}

/**
 * A budget whose prompt room (`availableForPrompt`, and the compaction target: no reserves) is exactly `tokens`:
 * the window is the benchmark budget, nothing is reserved for output, no safety margin.
 */
export function benchBudget(tokens: number): TokenBudget {
  return createTokenBudget({ contextWindow: tokens, reserveOutput: 0, safetyMargin: 0 });
}

const noop = async (): Promise<void> => {};

/** `createContextEngine` with its defaults over in-memory stores, format openai. */
export function engineSystem(awaitIdle: boolean): QualitySystem {
  return {
    key: awaitIdle ? "engine-idle" : "engine-loop",
    label: awaitIdle
      ? "context-ledger engine, idle() awaited"
      : "context-ledger engine, idle() never awaited",
    family: "context-ledger",
    setting: "defaults; memory stores; budget = window, reserveOutput 0, safetyMargin 0",
    start(budget) {
      const engine = createContextEngine({ stores: createMemoryStores(), budget: benchBudget(budget) });
      const thread = "quality";
      return {
        async call(fresh) {
          if (fresh.length > 0) await engine.append(thread, fresh);
          return (await engine.prepareTurn(thread, { format: "openai" })).request;
        },
        settle: awaitIdle ? () => engine.idle() : noop,
        close: () => engine.idle(),
      };
    },
  };
}

/** `createDefaultPipeline()` run over a ThreadLog and the previous plan, rendered to OpenAI Chat. */
export function pipelineSystem(): QualitySystem {
  return {
    key: "pipeline",
    label: "context-ledger default pipeline",
    family: "context-ledger",
    setting: "createDefaultPipeline() over ThreadLog + plan",
    start(tokens, counter) {
      const pipeline = createDefaultPipeline();
      const budget = benchBudget(tokens);
      let log = ThreadLog.empty("quality");
      let plan: CompactionPlan = emptyPlan("quality");
      let previous: RenderedPrompt | undefined;
      return {
        async call(fresh) {
          log = log.append(fresh);
          const input = { log, plan, counter, budget, ...(previous === undefined ? {} : { previous }) };
          const result = await pipeline.run(input);
          if (!result.ok) throw result.error;
          plan = result.plan;
          previous = result.prompt;
          return toProviderRequest("openai", result.prompt);
        },
        settle: noop,
        close: noop,
      };
    },
  };
}
