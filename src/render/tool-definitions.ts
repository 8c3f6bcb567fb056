/**
 * The tools a turn offers the model, in one neutral shape, written into each provider's request and counted
 * against the budget (tool definitions travel with every request and take room the history cannot use).
 */

import { textTokenCounter } from "../texts/text-excerpt.js";
import type { MessageCounter } from "../tokens/tokenizer.js";
import type { ProviderFormat } from "./provider-rules.js";

/** A function tool: its name, what it does, and its arguments as a JSON Schema object. */
export interface ToolDefinition {
  readonly name: string;
  readonly description?: string;
  /** JSON Schema of the arguments (default: an object without properties). */
  readonly parameters?: Readonly<Record<string, unknown>>;
}

const EMPTY_SCHEMA: Readonly<Record<string, unknown>> = Object.freeze({ type: "object", properties: {} });

/** The `tools` field of a request in `format`. */
export function toolsForFormat(format: ProviderFormat, tools: ReadonlyArray<ToolDefinition>): unknown[] {
  return tools.map((tool) => {
    const parameters = tool.parameters ?? EMPTY_SCHEMA;
    const description = tool.description === undefined ? {} : { description: tool.description };
    if (format === "openai")
      return { type: "function", function: { name: tool.name, ...description, parameters } };
    if (format === "responses")
      return { type: "function", name: tool.name, ...description, parameters, strict: false };
    return { name: tool.name, ...description, input_schema: parameters };
  });
}

/**
 * Framing a provider adds around tool definitions, in tokens, beyond their JSON: Anthropic puts a tool-use system
 * prompt in front of them (346 tokens with automatic tool choice, per its documentation); OpenAI writes them into
 * the system message as a namespace (a few tokens per tool). Estimates: `recordUsage` calibrates the rest.
 */
const FRAMING: Readonly<Record<ProviderFormat, { readonly once: number; readonly perTool: number }>> = {
  openai: { once: 12, perTool: 8 },
  responses: { once: 12, perTool: 8 },
  anthropic: { once: 346, perTool: 4 },
};

/** Tokens the tool definitions add to a request in `format` (0 without tools). */
export function countToolDefinitions(
  format: ProviderFormat,
  tools: ReadonlyArray<ToolDefinition>,
  counter: MessageCounter,
): number {
  if (tools.length === 0) return 0;
  const countText = textTokenCounter(counter);
  const framing = FRAMING[format];
  let total = framing.once;
  for (const tool of tools) {
    total += framing.perTool + countText(tool.name) + countText(tool.description ?? "");
    total += countText(JSON.stringify(tool.parameters ?? EMPTY_SCHEMA));
  }
  return total;
}
