/**
 * The `recall` tool: how the model asks for what compaction moved out of its context: the content behind a
 * pointer (by artifact id), a cleared tool result (by its call id) or earlier messages that match a query. The harness offers it like any tool and
 * answers a call with `engine.recall(threadId, args)`.
 */

import { deepFreeze } from "../log/deep-freeze.js";
import type { ProviderFormat } from "./provider-rules.js";
import { type ToolDefinition, toolsForFormat } from "./tool-definitions.js";

/** Most matches a query may ask for. */
export const RECALL_LIMIT_MAX = 50;
/** Matches a query returns unless it asks for a number. */
export const RECALL_LIMIT_DEFAULT = 5;

const DESCRIPTION =
  "Bring back earlier parts of this conversation that were moved out of your context to save room. " +
  "Pass `artifactId` to get the full content behind a pointer: a message saying content was stored as " +
  "artifact art_… names the id to pass. Pass `callId` to get a tool result back whose body was cleared: the " +
  'placeholder names it (recall callId "…"). Or pass `query` (a few words) to search earlier messages that were ' +
  "compacted away (cleared, summarized, externalized or dropped), best matches first; a matching tool call " +
  "comes with its result, so words of a command find its output. Give exactly one of " +
  "`artifactId`, `callId` and `query`. Long content comes back cut in the middle, with a marker saying what was " +
  "left out.";

const PARAMETERS = {
  type: "object",
  properties: {
    artifactId: {
      type: "string",
      description: "The artifact id a pointer message names, e.g. art_3f9c…. Not with callId or query.",
    },
    callId: {
      type: "string",
      description:
        "The id of a tool call whose result was cleared, as its placeholder names it. Not with artifactId or query.",
    },
    query: {
      type: "string",
      description:
        "Words to look for in earlier messages that are no longer in your context. Not with artifactId or callId.",
    },
    limit: {
      type: "integer",
      minimum: 1,
      maximum: RECALL_LIMIT_MAX,
      description: `With query: how many matching messages to return, best first (default ${RECALL_LIMIT_DEFAULT}).`,
    },
  },
  additionalProperties: false,
} as const;

/**
 * The `recall` tool in the provider-neutral shape: pass it in `prepareTurn`'s `tools`, so the request carries
 * it and the budget counts it.
 *
 * @example
 * const turn = await engine.prepareTurn("t1", { format: "anthropic", tools: [RECALL_TOOL, ...myTools] });
 */
export const RECALL_TOOL: ToolDefinition = deepFreeze({
  name: "recall",
  description: DESCRIPTION,
  parameters: PARAMETERS,
});

/** The JSON Schema of the tool's arguments. */
export type RecallToolParameters = typeof PARAMETERS;

/** The `recall` tool as each provider's request lists it. */
export interface RecallToolMap {
  readonly openai: {
    readonly type: "function";
    readonly function: {
      readonly name: "recall";
      readonly description: string;
      readonly parameters: RecallToolParameters;
    };
  };
  readonly responses: {
    readonly type: "function";
    readonly name: "recall";
    readonly description: string;
    readonly parameters: RecallToolParameters;
    readonly strict: false;
  };
  readonly anthropic: {
    readonly name: "recall";
    readonly description: string;
    readonly input_schema: RecallToolParameters;
  };
}

/**
 * The definition of the `recall` tool for a provider's `tools` list: OpenAI Chat Completions (`openai`), OpenAI
 * Responses (`responses`) or Anthropic Messages (`anthropic`). "Exactly one of `artifactId`, `callId` and `query`"
 * is said in the description, not in the schema: providers refuse `oneOf` at the top of a tool's schema, and
 * `engine.recall` checks it.
 *
 * @example
 * const tools = [recallTool("openai"), ...myTools];
 * const reply = await openai.chat.completions.create({ model, ...turn.request, tools });
 */
export function recallTool<F extends ProviderFormat>(format: F): RecallToolMap[F] {
  return toolsForFormat(format, [RECALL_TOOL])[0] as RecallToolMap[F];
}
