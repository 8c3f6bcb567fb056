/**
 * The `ai` package, loaded once when this wing is imported. It is an optional peer dependency of context-ledger:
 * when it is missing, importing `context-ledger/ai-sdk` fails with an error that says what to install, rather than
 * with a resolution error from deep inside the module graph.
 */

import { importPeer } from "../../extend.js";

type AiModule = typeof import("ai");

/** Imports `ai`, turning "not installed" into a `MissingDependencyError` that names the package to install. */
export function loadAi(load: () => Promise<AiModule> = () => import("ai")): Promise<AiModule> {
  return importPeer(load, "ai", "context-ledger/ai-sdk");
}

/** The loaded `ai` module (importing this file fails when it is not installed). */
export const ai: AiModule = await loadAi();
