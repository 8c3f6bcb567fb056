/**
 * Loading an optional peer dependency (`pg`, `openai`, `@anthropic-ai/sdk`, `@opentelemetry/api`): only the entry
 * point that needs one loads it, and a missing one fails with `MissingDependencyError` naming the package, rather
 * than with the runtime's module-resolution error.
 */
import { createRequire } from "node:module";
import { MissingDependencyError } from "./ledger-error.js";

const load = createRequire(import.meta.url);

/**
 * The package `name` as `require` gives it (its CommonJS build: every optional peer ships one); throws
 * `MissingDependencyError` saying that `neededBy` needs it when it is not installed.
 */
export function requirePeer<T>(name: string, neededBy: string): T {
  let loaded: unknown;
  try {
    loaded = load(name);
  } catch (cause) {
    const code = (cause as { code?: unknown } | null)?.code;
    if (code !== "MODULE_NOT_FOUND" && code !== "ERR_MODULE_NOT_FOUND") throw cause;
    throw new MissingDependencyError(name, neededBy, { cause });
  }
  return loaded as T;
}
