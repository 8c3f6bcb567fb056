import { NotFoundError, ValidationError } from "../errors/ledger-error.js";
import type { PendingJobs } from "../jobs/job-runner.js";
import type { MessageInput } from "../log/message.js";
import type { ProviderFormat } from "../render/provider-rules.js";
import type { ModelUsage } from "../stores/model-call-store.js";
import type { AppendResult } from "./append-messages.js";
import type { PlanDiffResult, RenderedThread, RenderOptionsForThread } from "./audit-views.js";
import { pendingJobs } from "./background-jobs.js";
import type { Calibration } from "./calibration.js";
import { observed } from "./compaction-steps.js";
import type { EngineCore } from "./engine-core.js";
import { outsideCall } from "./engine-events.js";
import type { ContextEngineOptions } from "./engine-options.js";
import { createEngineCore, type EngineParts } from "./engine-setup.js";
import type { ExplainFilter, Explanation } from "./explain.js";
import type { MessageLocations } from "./locate-messages.js";
import type { CompactOptions, CompactResult } from "./maintenance.js";
import type { RecallRequest, RecallResult } from "./recall.js";
import type { ReplayResult } from "./replay.js";
import { checkThreadAccess } from "./thread-access.js";
import type { PreparedTurn, PrepareTurnOptions } from "./turn-options.js";

/**
 * The harness step, audit and replay over one set of stores. A harness calls `append` with what happened and
 * `prepareTurn` before every model call; it gets the provider request back with a call id, and reports the
 * provider's usage with `recordUsage` so the engine calibrates its token estimate per model. Auditors use
 * `replay`, `render`, `explain` and `diff`; `compact` is the maintenance operation on stored history. Several
 * engines (processes, machines) may share the stores: writes are optimistic and retried on conflicts.
 *
 * @example
 * const engine = createContextEngine({ stores: createMemoryStores(), budget: { model: "gpt-4o" } });
 * await engine.append("t1", [{ role: "user", parts: [{ type: "text", text: "hi" }] }]);
 * const { callId, request } = await engine.prepareTurn("t1", { format: "openai", model: "gpt-4o" });
 * // … send `request`, then:
 * await engine.recordUsage(callId, { inputTokens: 9 });
 * (await engine.replay(callId)).ok; // true
 */
export interface ContextEngine {
  /** Validates and appends messages to a thread's log, storing each message's token count beside it. */
  append(threadId: string, messages: ReadonlyArray<MessageInput>): Promise<AppendResult>;
  /** Prepares the next model call: compacts as needed, commits, renders and records the call. */
  prepareTurn<F extends ProviderFormat>(
    threadId: string,
    options: PrepareTurnOptions<F>,
  ): Promise<PreparedTurn<F>>;
  /** Stores the provider's usage for a call and returns the model's updated calibration. */
  recordUsage(callId: string, usage: ModelUsage): Promise<Calibration>;
  /** The current calibration of a model (provider tokens per estimated token). */
  calibration(model: string): Promise<Calibration>;
  /** Re-renders a past call from the stores and checks its hash against what was sent. */
  replay(callId: string): Promise<ReplayResult>;
  /**
   * Replays every recorded call of a thread in call order (each result as `replay` gives it), reading the stored
   * log and each plan version once for all of them: what an audit of a whole thread uses.
   */
  replayThread(threadId: string): AsyncIterable<ReplayResult>;
  /** What changed between two plan versions. */
  diff(threadId: string, fromVersion: number, toVersion: number): Promise<PlanDiffResult>;
  /** Per message, what a plan version (default: the latest) does with it. */
  /** Per message, what a plan version does with it; the filter picks rows ("where did X go?"), not totals. */
  explain(
    threadId: string,
    options?: { readonly planVersion?: number } & ExplainFilter,
  ): Promise<Explanation>;
  /**
   * Which of `ids` the thread's log holds (their seqs), its length and its last message id, read from the stores
   * without loading the log: how a framework adapter tells what it appended already. An unknown thread is empty.
   */
  locateMessages(threadId: string, ids: ReadonlyArray<string>): Promise<MessageLocations>;
  /** Renders a committed plan version (default: the latest) to a provider request. */
  render<F extends ProviderFormat>(
    threadId: string,
    options: RenderOptionsForThread<F>,
  ): Promise<RenderedThread<F>>;
  /** Runs the whole pipeline on a thread's stored history and commits the result (maintenance). */
  compact(threadId: string, options?: CompactOptions): Promise<CompactResult>;
  /** Compacts every stored thread. */
  compactAll(
    options?: CompactOptions,
  ): Promise<
    ReadonlyArray<CompactResult | { readonly threadId: string; readonly ok: false; readonly error: unknown }>
  >;
  /**
   * Answers the model's `recall` tool call (`recallTool`): an artifact by id, or the compacted messages matching
   * a query, cut to the engine's cap (`recall.maxTokens`) and gated by its tenant and clearance. Send
   * `content` as the call's result and append it like any tool result.
   */
  recall(threadId: string, request: RecallRequest): Promise<RecallResult>;
  /**
   * Resolves when no background run of this process, checkpoint write or search indexing is in flight (jobs on a
   * durable queue that other workers run are not waited for: `pendingJobs` counts those).
   */
  idle(): Promise<void>;
  /**
   * Background jobs of a thread (or of all threads) that wait, run, or failed after their attempts: this
   * process's own with the in-process runner, everyone's on the database with the queue (docs/decisions/0020).
   * Emits `job_queue_depth` with the figures.
   */
  pendingJobs(threadId?: string): Promise<PendingJobs>;
  /**
   * Starts taking jobs from the durable queue now rather than at this engine's first queued job (a dedicated
   * worker calls it; `context-ledger worker` does). Nothing to do in process.
   */
  startJobs(): Promise<void>;
  /**
   * Stops taking background jobs, waits up to `timeoutMs` (default `jobs.closeTimeoutMs`, 10 s) for the running
   * ones, and leaves the rest queued for another worker; then waits for checkpoint writes and indexing. The stores
   * stay open (they are the caller's to close, after this).
   */
  close(options?: { readonly timeoutMs?: number }): Promise<void>;
}

async function recordUsage(core: EngineCore, callId: string, usage: ModelUsage): Promise<Calibration> {
  const record = await core.stores.calls.get(callId);
  if (record === undefined) {
    throw new NotFoundError(`model call ${JSON.stringify(callId)} was never recorded`, { field: "callId" });
  }
  await checkThreadAccess(core, record.threadId, "recordUsage");
  return observed(core, "recordUsage", record.threadId, async () => {
    await core.stores.calls.setUsage(callId, usage);
    const calibration =
      record.model === undefined
        ? { model: "", ratio: 1, samples: 0 }
        : await core.calibration.refresh(record.model);
    core.events.emit("usage_recorded", record.threadId, {
      callId,
      ...(record.model === undefined ? {} : { model: record.model }),
      inputTokens: usage.inputTokens,
      tokenEstimate: record.tokenEstimate,
      ratio: calibration.ratio,
    });
    return calibration;
  });
}

/**
 * Creates a context engine over a set of stores with the given way of loading threads (default: the in-process
 * cache and whole logs) and of building its pipelines (default: on first use). The public `createContextEngine`
 * (src/context-engine.ts) picks the checkpointed loader and builds the pipelines at once; the CLI builds an engine
 * here that loads neither a strategy nor an operation it does not run. Each operation's module loads on its
 * first call.
 */
export function createEngine(options: ContextEngineOptions, parts: EngineParts = {}): ContextEngine {
  const core = createEngineCore(options, parts);
  /** Runs `work` once the engine has checked that the thread is its tenant's. */
  const checked =
    <T>(operation: string, work: () => Promise<T>) =>
    async (threadId: string): Promise<T> => {
      await checkThreadAccess(core, threadId, operation);
      return work();
    };
  return Object.freeze({
    append: (threadId: string, messages: ReadonlyArray<MessageInput>) =>
      checked("append", async () =>
        (await import("./append-messages.js")).appendMessages(core, threadId, messages),
      )(threadId),
    prepareTurn: <F extends ProviderFormat>(threadId: string, o: PrepareTurnOptions<F>) =>
      checked("prepareTurn", async () => (await import("./prepare-turn.js")).prepareTurn(core, threadId, o))(
        threadId,
      ),
    recordUsage: (callId: string, usage: ModelUsage) => recordUsage(core, callId, usage),
    calibration: (model: string) => core.calibration.get(model),
    replay: async (callId: string) => (await import("./replay.js")).replayCall(core, callId),
    replayThread: async function* (threadId: string) {
      yield* (await import("./replay.js")).replayThreadCalls(core, threadId);
    },
    diff: (threadId: string, from: number, to: number) =>
      checked("diff", async () => (await import("./audit-views.js")).diffThread(core, threadId, from, to))(
        threadId,
      ),
    explain: (threadId: string, o?: { readonly planVersion?: number } & ExplainFilter) =>
      checked("explain", async () => (await import("./audit-views.js")).explainThread(core, threadId, o))(
        threadId,
      ),
    locateMessages: (threadId: string, ids: ReadonlyArray<string>) =>
      checked("locateMessages", async () =>
        (await import("./locate-messages.js")).locateMessages(core, threadId, ids),
      )(threadId),
    render: <F extends ProviderFormat>(threadId: string, o: RenderOptionsForThread<F>) =>
      checked("render", async () => (await import("./audit-views.js")).renderThread(core, threadId, o))(
        threadId,
      ),
    compact: (threadId: string, o?: CompactOptions) =>
      checked("compact", async () => (await import("./maintenance.js")).compactThread(core, threadId, o))(
        threadId,
      ),
    compactAll: async (o?: CompactOptions) => (await import("./maintenance.js")).compactAllThreads(core, o),
    recall: (threadId: string, request: RecallRequest) =>
      checked("recall", async () => (await import("./recall.js")).recall(core, threadId, request))(threadId),
    idle: async () => {
      // A background run's commit may make the loader write (a checkpoint), and a write never schedules a run.
      await core.jobs.idle();
      await core.loader.idle();
      await core.indexer.idle();
    },
    pendingJobs: (threadId?: string) => pendingJobs(core, threadId),
    startJobs: () => outsideCall(() => core.jobs.start()),
    close: async (o?: { readonly timeoutMs?: number }) => {
      const timeoutMs = o?.timeoutMs ?? core.settings.jobs.closeTimeoutMs;
      if (!Number.isFinite(timeoutMs) || timeoutMs < 0) {
        throw new ValidationError("close timeoutMs must be a non-negative number", { field: "timeoutMs" });
      }
      await core.jobs.close(timeoutMs);
      await core.loader.idle();
      await core.indexer.idle();
    },
  });
}
