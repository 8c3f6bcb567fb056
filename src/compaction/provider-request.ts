import { suggestCacheBreakpoints } from "../render/cache-breakpoints.js";
import {
  assertValid,
  type ProviderFormat,
  type ProviderRequestMap,
  toProviderRequest,
} from "../render/provider-rules.js";
import type { RenderedPrompt } from "../render/rendered-prompt.js";
import { toolsForFormat } from "../render/tool-definitions.js";
import type { RequestSpec } from "./pipeline-types.js";

/**
 * The request body of a prompt in the spec's format, with its cache breakpoints and tools, checked against the
 * format's rules: throws `RenderValidationError` listing every rule it breaks.
 */
export function checkedRequest(
  prompt: RenderedPrompt,
  spec: RequestSpec,
): ProviderRequestMap[ProviderFormat] {
  const cache = spec.cacheBreakpoints === true && spec.format === "anthropic";
  const body = toProviderRequest(
    spec.format,
    prompt,
    cache ? { cacheBreakpoints: suggestCacheBreakpoints(prompt) } : {},
  );
  const tools = spec.tools ?? [];
  const request = tools.length === 0 ? body : { ...body, tools: toolsForFormat(spec.format, tools) };
  assertValid(spec.format, request);
  return request;
}
