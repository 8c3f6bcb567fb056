/**
 * The LangChain packages this wing runs on. They are optional peer dependencies of context-ledger: only
 * `context-ledger/langchain` loads them, once, when it is imported, so the rest of the package never needs them.
 * A missing one fails the import with an error that names the package to install, instead of Node's
 * "Cannot find package" from deep inside the wing.
 */
import { importPeer } from "../../errors/optional-peer.js";

const WING = "context-ledger/langchain";

/**
 * Imports a peer module, turning "not installed" into a `MissingDependencyError` naming `packageName`. Any other
 * failure (a broken install, an error while the module runs) is rethrown as it is.
 */
export function loadPeer<T>(load: () => Promise<T>, packageName: string): Promise<T> {
  return importPeer(load, packageName, WING);
}

/** `@langchain/core/messages`: the message classes `toLangChainMessages` builds. */
export const lcMessages = await loadPeer(() => import("@langchain/core/messages"), "@langchain/core");

/** `@langchain/core/utils/function_calling`: tool definitions as JSON Schema, for counting them. */
export const lcFunctionCalling = await loadPeer(
  () => import("@langchain/core/utils/function_calling"),
  "@langchain/core",
);

/** `langchain`: `createMiddleware`, which brands the middleware so that `createAgent` accepts it. */
export const lcAgents = await loadPeer(() => import("langchain"), "langchain");
