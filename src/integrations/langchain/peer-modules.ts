/**
 * The LangChain packages this wing runs on. They are optional peer dependencies of context-ledger: only
 * `context-ledger/langchain` loads them, once, when it is imported, so the rest of the package never needs them.
 * A missing one fails the import with an error that names the package to install, instead of Node's
 * "Cannot find package" from deep inside the wing.
 */

/** `context-ledger/langchain` was imported without one of the LangChain packages it needs. */
export class MissingPeerDependencyError extends Error {
  /** The npm package to install. */
  readonly packageName: string;

  constructor(packageName: string, cause: unknown) {
    super(
      `context-ledger/langchain needs the package "${packageName}", an optional peer dependency of ` +
        `context-ledger that is not installed (or too old to have the module it needs): ` +
        `run \`npm install ${packageName}\``,
      { cause },
    );
    this.name = "MissingPeerDependencyError";
    this.packageName = packageName;
  }
}

/** True when `text` names `packageName` as a whole (`langchain` is not named by "'@langchain/core'"). */
function names(text: string, packageName: string): boolean {
  const escaped = packageName.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  return new RegExp(`(^|['"\\s/])${escaped}(['"\\s/]|$)`).test(text);
}

/** True when `error` says that `packageName` (or a module inside it) could not be found. */
function isMissing(error: unknown, packageName: string): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  const notFound =
    code === "ERR_MODULE_NOT_FOUND" ||
    code === "ERR_PACKAGE_PATH_NOT_EXPORTED" ||
    /cannot find (package|module)/i.test(error.message);
  // What could not be found, without the importer's path ("… imported from /app/node_modules/langchain/…").
  const subject = error.message.split(" imported from ")[0] ?? "";
  return notFound && names(subject, packageName);
}

/**
 * Imports a peer module, turning "not installed" into a {@link MissingPeerDependencyError} naming `packageName`.
 * Any other failure (a broken install, an error while the module runs) is rethrown as it is.
 */
export async function loadPeer<T>(load: () => Promise<T>, packageName: string): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isMissing(error, packageName)) throw new MissingPeerDependencyError(packageName, error);
    throw error;
  }
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
