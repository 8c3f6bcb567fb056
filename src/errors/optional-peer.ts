/**
 * Loading an optional peer dependency (`pg`, `openai`, `@anthropic-ai/sdk`, `@opentelemetry/api`): only the entry
 * point that needs one loads it, and a missing one fails with `MissingDependencyError` naming the package, rather
 * than with the runtime's module-resolution error.
 */
import { createRequire } from "node:module";
import { MissingDependencyError } from "./ledger-error.js";

const load = createRequire(import.meta.url);

/** True when `text` names `packageName` as a whole, not as part of a longer (scoped) name that contains it. */
function names(text: string, packageName: string): boolean {
  const escaped = packageName.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  return new RegExp(`(^|['"\\s/])${escaped}(['"\\s/]|$)`).test(text);
}

/**
 * True when `error` says that `packageName` (or a module inside it) could not be found — not another package the
 * peer itself needs, which is a broken install of that one.
 */
export function isMissingPackage(error: unknown, packageName: string): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  const notFound =
    code === "MODULE_NOT_FOUND" ||
    code === "ERR_MODULE_NOT_FOUND" ||
    code === "ERR_PACKAGE_PATH_NOT_EXPORTED" ||
    /cannot find (package|module)/i.test(error.message);
  // What could not be found, without the importer's path ("… imported from /app/node_modules/x/…", or CommonJS's
  // "Require stack:" lines).
  const subject = (error.message.split(" imported from ")[0] ?? "").split("\n")[0] ?? "";
  return notFound && names(subject, packageName);
}

/**
 * Imports a peer's ES module, turning "not installed" into `MissingDependencyError` naming `packageName`; any other
 * failure (a broken install, an error while the module runs) is rethrown as it is.
 */
export async function importPeer<T>(
  load: () => Promise<T>,
  packageName: string,
  neededBy: string,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isMissingPackage(error, packageName))
      throw new MissingDependencyError(packageName, neededBy, { cause: error });
    throw error;
  }
}

/**
 * The package `name` as `require` gives it (its CommonJS build: every optional peer ships one); throws
 * `MissingDependencyError` saying that `neededBy` needs it when it is not installed.
 */
export function requirePeer<T>(name: string, neededBy: string): T {
  let loaded: unknown;
  try {
    loaded = load(name);
  } catch (cause) {
    if (!isMissingPackage(cause, name)) throw cause;
    throw new MissingDependencyError(name, neededBy, { cause });
  }
  return loaded as T;
}
