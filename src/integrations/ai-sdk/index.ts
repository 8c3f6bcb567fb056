// `context-ledger/ai-sdk`: the engine for the Vercel AI SDK (version 6) — converters between the SDK's messages
// and the log, a `prepareStep` hook and a language-model middleware. The `ai` package is an optional peer
// dependency: importing this entry point loads it (load-ai.ts, through the tool definitions) and fails with an
// install hint when it is missing. Nothing else in context-ledger imports this folder.

export { fromModelMessages } from "./from-model-messages.js";
export type { LedgerMiddlewareOptions } from "./ledger-middleware.js";
export { contextLedgerMiddleware } from "./ledger-middleware.js";
export type { LedgerOptions } from "./ledger-options.js";
export { formatForProvider } from "./ledger-options.js";
export type {
  LedgerPrepareStep,
  PrepareStepOptions,
  StepInput,
  StepOverrides,
} from "./prepare-step.js";
export { createPrepareStep } from "./prepare-step.js";
export type { MessageNote, PartNote } from "./sdk-notes.js";
export { NOTE_KEY } from "./sdk-notes.js";
export type { PromptLike } from "./to-model-messages.js";
export { toModelMessages } from "./to-model-messages.js";
