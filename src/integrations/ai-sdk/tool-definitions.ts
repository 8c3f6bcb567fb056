/**
 * The tools of a run in the engine's neutral shape (name, description, JSON Schema of the input), so a turn counts
 * them against the budget as the provider will see them.
 */
import type { ToolDefinition } from "../../index.js";
import { ai } from "./load-ai.js";
import type { LanguageModelCallOptions, ToolSet } from "./sdk-types.js";

/** The tool definitions of an SDK tool set (`generateText`'s `tools`); provider-defined tools by name only. */
export async function definitionsOfToolSet(tools: ToolSet): Promise<ToolDefinition[]> {
  const out: ToolDefinition[] = [];
  for (const [name, tool] of Object.entries(tools)) {
    if (tool.type === "provider") {
      out.push({ name });
      continue;
    }
    const parameters = (await ai.asSchema(tool.inputSchema).jsonSchema) as Record<string, unknown>;
    out.push({
      name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      parameters,
    });
  }
  return out;
}

/** The tool definitions of one language-model call (what a middleware sees); provider tools by name only. */
export function definitionsOfCall(tools: LanguageModelCallOptions["tools"]): ToolDefinition[] {
  return (tools ?? []).map((tool) =>
    tool.type === "function"
      ? {
          name: tool.name,
          ...(tool.description === undefined ? {} : { description: tool.description }),
          parameters: tool.inputSchema as Record<string, unknown>,
        }
      : { name: tool.name },
  );
}
