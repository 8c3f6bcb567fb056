import type { RenderedPrompt } from "./rendered-prompt.js";

/**
 * Where to put prompt-cache breakpoints (Anthropic's `cache_control`) for a rendered prompt: after the stable
 * prefix (system + summaries, unchanged for many turns) and after the last history message before the per-turn
 * content (injections and rehydrated artifacts change every turn, so caching past them never pays). At most two
 * indices, ascending; pass them as `toProviderRequest("anthropic", prompt, { cacheBreakpoints })`.
 *
 * @example
 * const body = toProviderRequest("anthropic", prompt, { cacheBreakpoints: suggestCacheBreakpoints(prompt) });
 */
export function suggestCacheBreakpoints(prompt: RenderedPrompt): number[] {
  const points: number[] = [];
  if (prompt.stablePrefixEnd >= 0) points.push(prompt.stablePrefixEnd);
  let last = prompt.messages.length - 1;
  while (last >= 0) {
    const kind = prompt.messages[last]!.provenance.kind;
    if (kind !== "injection" && kind !== "rehydration") break;
    last--;
  }
  if (last > prompt.stablePrefixEnd) points.push(last);
  return points;
}
