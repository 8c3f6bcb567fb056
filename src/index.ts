// The public API of context-ledger. Everything a harness, an auditor or the CLI needs is exported here by name.

export type { ErrorLocation, LedgerErrorCode } from "./errors/ledger-error.js";
export {
  BudgetInfeasibleError,
  LedgerError,
  PlanValidationError,
  RenderValidationError,
  ValidationError,
  VersionConflictError,
} from "./errors/ledger-error.js";

export { canonicalJson, hashMessageContent, sha256Hex } from "./log/canonical-json.js";
export type { Group, GroupKind } from "./log/groups.js";
export type { TranscriptOptions } from "./log/import-jsonl.js";
export {
  exportTranscript,
  importTranscript,
  parseTranscript,
  parseTranscriptLine,
  readTranscriptFile,
} from "./log/import-jsonl.js";
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
export { messageInputSchema } from "./log/message-schema.js";
export type { CallRef } from "./log/thread-log.js";
export { ThreadLog } from "./log/thread-log.js";
export type { Turn } from "./log/turns.js";

export type {
  ActionKind,
  ActionRecord,
  ClearedItem,
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
export { parsePlan, planSchema, serializePlan } from "./plan/plan-schema.js";
export type { SeqResolution } from "./plan/resolve-for-log.js";
export { decisionAt, resolveForLog } from "./plan/resolve-for-log.js";
export type { Decision, Overlap, ResolvedPlan } from "./plan/resolve-plan.js";
export { kindOf, normalizePlan, resolvePlan } from "./plan/resolve-plan.js";
export type { PlanProblem } from "./plan/validate-plan.js";
export { assertPlanValid, validatePlan } from "./plan/validate-plan.js";

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
export { RENDER_FORMAT_VERSION } from "./render/placeholders.js";
export { hashRendered, unchangedLeadingTokens } from "./render/prompt-hash.js";
export type { ProviderFormat, ProviderRequestMap } from "./render/provider-rules.js";
export {
  assertValid,
  toProviderRequest,
  validateAnthropicMessages,
  validateOpenAIChat,
  validateOpenAIResponses,
  validateProviderRequest,
} from "./render/provider-rules.js";
export type {
  Injection,
  PendingCallMode,
  RehydratedArtifact,
  RenderOptions,
} from "./render/render-prompt.js";
export { renderPrompt } from "./render/render-prompt.js";
export type { Provenance, RenderedKind, RenderedMessage, RenderedPrompt } from "./render/rendered-prompt.js";

export type { SampleSessionOptions } from "./sample/sample-session.js";
export { generateSampleSession } from "./sample/sample-session.js";

export type { DropOldestOptions } from "./strategies/drop-oldest-to-fit.js";
export { dropOldestToFit } from "./strategies/drop-oldest-to-fit.js";

export type { CreateTokenizerOptions, TokenizerBackend } from "./tokens/create-tokenizer.js";
export { createTokenizer, DEFAULT_BACKEND } from "./tokens/create-tokenizer.js";
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
