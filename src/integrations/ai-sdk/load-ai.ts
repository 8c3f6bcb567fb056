/**
 * The `ai` package, loaded once when this wing is imported. It is an optional peer dependency of context-ledger:
 * when it is missing, importing `context-ledger/ai-sdk` fails with an error that says what to install, rather than
 * with a resolution error from deep inside the module graph.
 */

type AiModule = typeof import("ai");

/** Whether `error` says that the package `name` itself could not be found (not a module it imports). */
function isMissing(error: unknown, name: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return false;
  const message = error instanceof Error ? error.message : String(error);
  return message.includes(`'${name}'`) || message.includes(`"${name}"`);
}

/** Imports `ai`, turning "not installed" into an error that names the package to install. */
export async function loadAi(load: () => Promise<AiModule> = () => import("ai")): Promise<AiModule> {
  try {
    return await load();
  } catch (error) {
    if (!isMissing(error, "ai")) throw error;
    throw new Error(
      'context-ledger/ai-sdk needs the Vercel AI SDK, which is not installed: add the "ai" package (version 6), e.g. `npm install ai@^6`',
      { cause: error },
    );
  }
}

/** The loaded `ai` module (importing this file fails when it is not installed). */
export const ai: AiModule = await loadAi();
