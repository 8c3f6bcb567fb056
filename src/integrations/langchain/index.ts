// context-ledger/langchain: converters between LangChain.js messages and the engine's log and prompts, and an
// agent middleware for LangChain's `createAgent`. `@langchain/core` and `langchain` are optional peer
// dependencies of context-ledger that only this entry point loads; importing it without them fails naming the
// package to install. Nothing else in the package imports this folder.

export { fromLangChainMessages } from "./from-langchain.js";
export type { AgentRuntimeLike, ContextLedgerMiddlewareOptions } from "./ledger-middleware.js";
export { CONTEXT_LEDGER_MIDDLEWARE_NAME, contextLedgerMiddleware } from "./ledger-middleware.js";
export { toLangChainMessages } from "./to-langchain.js";
