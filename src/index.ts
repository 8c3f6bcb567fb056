// The public API of context-ledger: what a harness, an auditor or a pipeline configuration needs, by name.
// Building blocks for custom strategies and stores are in `context-ledger/extend`; the sample-session
// generator used by the demo and examples is in `context-ledger/sample`.

export type { DefaultPipelineOptions } from "./compaction/default-pipeline.js";
export { createDefaultPipeline, DEFAULT_PIPELINE_CONFIG } from "./compaction/default-pipeline.js";
export type { PipelineOptions } from "./compaction/pipeline.js";
export { createPipeline, toStrategy } from "./compaction/pipeline.js";
export type {
  ConfiguredPipeline,
  PipelineConfig,
  PipelineDependencies,
} from "./compaction/pipeline-config.js";
export {
  loadPipelineConfig,
  parseConfigText,
  pipelineConfigSchema,
  pipelineFromConfig,
} from "./compaction/pipeline-config.js";
export type { PipelineReport, StepOutcome, StepReport } from "./compaction/pipeline-report.js";
export type {
  Pipeline,
  PipelineFailure,
  PipelineInput,
  PipelineResult,
  PipelineStrategy,
  PipelineSuccess,
  RequestSpec,
} from "./compaction/pipeline-types.js";
export { createContextEngine } from "./context-engine.js";
export type { AppendResult } from "./engine/append-messages.js";
export type { PlanDiffResult, RenderedThread, RenderOptionsForThread } from "./engine/audit-views.js";
export type { Calibration, CalibrationSettings } from "./engine/calibration.js";
export type { ContextEngine } from "./engine/context-engine.js";
export type {
  ActionEvent,
  EngineEvent,
  EngineEventMap,
  EngineEventType,
  EngineListener,
  EngineOperation,
  JobEvent,
} from "./engine/engine-events.js";
export type {
  ConfigBudget,
  ContextEngineOptions,
  ContextEngineSettings,
  EngineBudget,
  RehydrationOptions,
  SummarizationMode,
} from "./engine/engine-options.js";
export { engineSettingsSchema } from "./engine/engine-options.js";
export type { ExplainFilter, ExplainRow, Explanation, MessageFate } from "./engine/explain.js";
export { formatExplanation } from "./engine/explain.js";
export type { MessageLocations } from "./engine/locate-messages.js";
export type { LoggingEmitterOptions } from "./engine/logging-emitter.js";
export { createLoggingEmitter } from "./engine/logging-emitter.js";
export type { CompactOptions, CompactResult } from "./engine/maintenance.js";
export type { DurationStats, MetricsCollector, MetricsSnapshot } from "./engine/metrics-collector.js";
export { createMetricsCollector } from "./engine/metrics-collector.js";
export type {
  ArtifactRecall,
  CallRecall,
  QueryRecall,
  RecallRequest,
  RecallResult,
} from "./engine/recall.js";
export type { CompactedFate, RecallMatch } from "./engine/recall-text.js";
export type { ReplayResult } from "./engine/replay.js";
export type {
  BudgetInput,
  PreparedTurn,
  PrepareTurnOptions,
  RehydrationBlock,
  RehydrationBlockReason,
  RehydrationNote,
  TurnStats,
} from "./engine/turn-options.js";
export type { ErrorLocation, LedgerErrorCode, SummarizerFailure } from "./errors/ledger-error.js";
export {
  AccessDeniedError,
  BudgetInfeasibleError,
  ChainBrokenError,
  ClearanceError,
  LedgerError,
  MissingDependencyError,
  NotFoundError,
  PlanValidationError,
  RenderValidationError,
  StoreUnavailableError,
  SummarizerError,
  ThreadAccessError,
  ValidationError,
  VersionConflictError,
} from "./errors/ledger-error.js";
export type { JobOptions } from "./jobs/job-options.js";
export { jobOptionsSchema } from "./jobs/job-options.js";
export type { JobOutcome, JobRunnerKind, PendingJobs } from "./jobs/job-runner.js";
export type { Group, GroupKind } from "./log/groups.js";
export type { ParsedTranscript, TranscriptOptions } from "./log/import-jsonl.js";
export {
  atTranscriptLine,
  exportTranscript,
  importTranscript,
  parseTranscript,
  parseTranscriptLine,
  parseTranscriptLines,
  readTranscriptFile,
} from "./log/import-jsonl.js";
export type { LogView } from "./log/log-view.js";
export type {
  Durability,
  MediaPart,
  Message,
  MessageInput,
  MessageMeta,
  Part,
  PartType,
  ReasoningPart,
  Role,
  Sensitivity,
  TextPart,
  ToolCallPart,
  ToolResultPart,
} from "./log/message.js";
export { textOf, toolCallsOf, toolResultsOf } from "./log/message.js";
export { MAX_ID_LENGTH, MAX_JSON_DEPTH, MAX_META_DEPTH, messageInputSchema } from "./log/message-schema.js";
export type {
  AnthropicReply,
  AnthropicReplyBlock,
  OpenAIChatReply,
  OpenAIChatReplyMessage,
  OpenAIResponseItem,
  OpenAIResponseReply,
  ReplyOptions,
  ToolResultOptions,
} from "./log/provider-replies.js";
export {
  fromAnthropicMessage,
  fromOpenAIChatCompletion,
  fromOpenAIResponse,
  toolResultMessage,
} from "./log/provider-replies.js";
export { splitAtReplies } from "./log/reply-batches.js";
export type { CallRef } from "./log/thread-log.js";
export { ThreadLog } from "./log/thread-log.js";
export type { Turn } from "./log/turns.js";
export type {
  ActionKind,
  ActionRecord,
  ClearExcerpt,
  ClearedItem,
  ClearPartRef,
  ClearRecord,
  CompactionPlan,
  DropRecord,
  ExternalizationRecord,
  IncludeRecord,
  PlanAction,
  StructuredSummary,
  SummarizationRecord,
} from "./plan/compaction-plan.js";
export { createPlan, emptyPlan, extendPlan, nextPlan, PRECEDENCE, parentOf } from "./plan/compaction-plan.js";
export type { MessageChange, MessageState, PlanDiff } from "./plan/diff-plans.js";
export { diffPlans, formatPlanDiff } from "./plan/diff-plans.js";
export type { FateCounts, FinalStates } from "./plan/final-states.js";
export { describeFates, FATE_OF, finalStates } from "./plan/final-states.js";
export { parsePlan, planSchema, serializePlan } from "./plan/plan-schema.js";
export type { Decision, Overlap, ResolvedPlan } from "./plan/resolve-plan.js";
export { kindOf, normalizePlan, resolvePlan } from "./plan/resolve-plan.js";
export type { PlanProblem } from "./plan/validate-plan.js";
export { assertPlanValid, validatePlan } from "./plan/validate-plan.js";
export type { AdapterSource } from "./render/adapter-input.js";
export type {
  AnthropicMessagesOptions,
  AnthropicMessagesRequest,
} from "./render/anthropic-messages-adapter.js";
export { toAnthropicMessages } from "./render/anthropic-messages-adapter.js";
export { suggestCacheBreakpoints } from "./render/cache-breakpoints.js";
export type { OpenAIChatRequest } from "./render/openai-chat-adapter.js";
export { toOpenAIChat } from "./render/openai-chat-adapter.js";
export type { OpenAIResponsesRequest } from "./render/openai-responses-adapter.js";
export { toOpenAIResponses } from "./render/openai-responses-adapter.js";
export { unchangedLeadingTokens } from "./render/prompt-hash.js";
export type { ProviderFormat, ProviderRequestMap } from "./render/provider-rules.js";
export {
  assertValid,
  toProviderRequest,
  validateAnthropicMessages,
  validateOpenAIChat,
  validateOpenAIResponses,
  validateProviderRequest,
} from "./render/provider-rules.js";
export type { RecallToolMap, RecallToolParameters } from "./render/recall-tool.js";
export { RECALL_TOOL, recallTool } from "./render/recall-tool.js";
export type {
  Injection,
  PendingCallMode,
  RehydratedArtifact,
  RenderOptions,
} from "./render/render-prompt.js";
export { renderPrompt } from "./render/render-prompt.js";
export type { Provenance, RenderedKind, RenderedMessage, RenderedPrompt } from "./render/rendered-prompt.js";
export type { ToolDefinition } from "./render/tool-definitions.js";
export { countToolDefinitions, toolsForFormat } from "./render/tool-definitions.js";
export type { AboveClearancePolicy } from "./render/withhold-content.js";
export type {
  Artifact,
  ArtifactInput,
  ArtifactMeta,
  ArtifactStore,
  SecurityContext,
} from "./stores/artifact-store.js";
export { mayRead } from "./stores/artifact-store.js";
export type {
  DurableJobQueue,
  JobCounts,
  JobQueueFactory,
  JobQueueSettings,
  QueuedJob,
  TakenJob,
} from "./stores/job-queue.js";
export type {
  ChainedLogRead,
  LogSearchHit,
  LogSearchOptions,
  LogStore,
  SeqRange,
  StoredMessage,
  TokenCounts,
  TokenCountUpdate,
} from "./stores/log-store.js";
export type {
  MemoryArtifactStore,
  MemoryArtifactStoreOptions,
} from "./stores/memory/memory-artifact-store.js";
export { createMemoryArtifactStore } from "./stores/memory/memory-artifact-store.js";
export type { MemoryStoresOptions } from "./stores/memory/memory-stores.js";
export { createMemoryStores } from "./stores/memory/memory-stores.js";
export type { MemorySummaryCache, MemorySummaryCacheOptions } from "./stores/memory/memory-summary-cache.js";
export { createMemorySummaryCache } from "./stores/memory/memory-summary-cache.js";
export type { ModelCallRecord, ModelCallStore, ModelUsage } from "./stores/model-call-store.js";
export type { CommitOptions, PlanStore } from "./stores/plan-store.js";
export type { Clock, Stores } from "./stores/stores.js";
export type { CachedSummary, SummaryCache } from "./stores/summary-cache.js";
export type { ThreadAccess } from "./stores/thread-tenancy.js";
export { DEFAULT_TENANT } from "./stores/thread-tenancy.js";
export type { DropOldestOptions } from "./strategies/drop-oldest-to-fit.js";
export { dropOldestToFit } from "./strategies/drop-oldest-to-fit.js";
export type { ArtifactPort, ArtifactWrite, ExternalizationOptions } from "./strategies/externalization.js";
export { createExternalization, externalizationOptionsSchema } from "./strategies/externalization.js";
export type { HardFallbackOptions } from "./strategies/hard-fallback.js";
export { createHardFallback, hardFallbackOptionsSchema } from "./strategies/hard-fallback.js";
export type { OversizedExcerptOptions } from "./strategies/oversized-excerpt.js";
export { createOversizedExcerpt, oversizedExcerptOptionsSchema } from "./strategies/oversized-excerpt.js";
export type { TaskRule } from "./strategies/protected-core.js";
export type { ReasoningRetentionOptions } from "./strategies/reasoning-retention.js";
export {
  createReasoningRetention,
  reasoningRetentionOptionsSchema,
} from "./strategies/reasoning-retention.js";
export type { RollingWindowOptions } from "./strategies/rolling-window.js";
export { createRollingWindow, rollingWindowOptionsSchema } from "./strategies/rolling-window.js";
export type { SlidingWindowOptions } from "./strategies/sliding-window.js";
export { createSlidingWindow, slidingWindowOptionsSchema } from "./strategies/sliding-window.js";
export type {
  Proposal,
  Strategy,
  StrategyContext,
  StrategyCost,
  StrategyFunction,
  StrategyNote,
} from "./strategies/strategy.js";
export { NO_PROPOSAL, nothingToDo } from "./strategies/strategy.js";
export type { StrategyMemo } from "./strategies/strategy-memo.js";
export type { SummarizationOptions } from "./strategies/summarization.js";
export { createSummarization, summarizationOptionsSchema } from "./strategies/summarization.js";
export type { Summarizer, SummaryCachePort, SummaryRequest, SummaryResult } from "./strategies/summarizer.js";
export { summaryCacheKey } from "./strategies/summarizer.js";
export type { ExtractiveSummarizerOptions } from "./strategies/summarizers/extractive-summarizer.js";
export { createExtractiveSummarizer } from "./strategies/summarizers/extractive-summarizer.js";
export { parseSummaryOutput } from "./strategies/summarizers/model-answer.js";
export { formatSummary } from "./strategies/summarizers/summary-format.js";
export { SUMMARY_PROMPT_VERSION } from "./strategies/summarizers/summary-prompt.js";
export type { ToolResultCollapseOptions } from "./strategies/tool-result-collapse.js";
export {
  createToolResultCollapse,
  toolResultCollapseOptionsSchema,
} from "./strategies/tool-result-collapse.js";
export type {
  KeyLinesOptions,
  ResolvedToolPolicy,
  ToolPolicy,
  ToolResultRetentionOptions,
} from "./strategies/tool-result-retention.js";
export {
  createToolResultRetention,
  DEFAULT_KEY_LINES,
  DEFAULT_TOOL_POLICY,
  DURABILITY_POLICIES,
  toolResultRetentionOptionsSchema,
} from "./strategies/tool-result-retention.js";
export type { TruncationOptions } from "./strategies/truncation.js";
export { createTruncation, truncationOptionsSchema } from "./strategies/truncation.js";
export type { WindowTrigger } from "./strategies/window-trigger.js";
export { windowTriggerSchema } from "./strategies/window-trigger.js";

export type { RenderFormatVersion } from "./texts/placeholders.js";
export { RENDER_FORMAT_VERSION, RENDER_FORMAT_VERSIONS } from "./texts/placeholders.js";
export type { ExcerptOptions, Omitted, TextExcerpt } from "./texts/text-excerpt.js";
export { estimateTokens, excerptText, omissionMarker, textTokenCounter } from "./texts/text-excerpt.js";

export type { CreateTokenizerOptions, TokenizerBackend } from "./tokens/create-tokenizer.js";
export { createTokenizer, DEFAULT_BACKEND } from "./tokens/create-tokenizer.js";
export type { EncodingName } from "./tokens/encoding-data.js";
export type {
  MessageCounterOptions,
  OverheadProfile,
  OverheadProfileName,
} from "./tokens/message-counter.js";
export { createMessageCounter, OVERHEAD_PROFILES } from "./tokens/message-counter.js";
export type { ModelInfo, ModelProvider } from "./tokens/model-table.js";
export { encodingForModel, lookupModel, MODEL_TABLE } from "./tokens/model-table.js";
export type { TierCaps, TokenBudget, TokenBudgetOptions } from "./tokens/token-budget.js";
export { availableForPrompt, compactionTarget, createTokenBudget } from "./tokens/token-budget.js";
export type { CountableMessage, MessageCounter, Tokenizer } from "./tokens/tokenizer.js";
