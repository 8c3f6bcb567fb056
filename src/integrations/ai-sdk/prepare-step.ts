/**
 * `createPrepareStep`: the engine as the AI SDK's `prepareStep` hook. Before each step of `generateText`,
 * `streamText` or a `ToolLoopAgent`, it appends to the thread what the conversation added since it last looked
 * (the prompt on the first step, then each step's reply and tool results), prepares the turn, and hands the SDK
 * the compacted messages to send instead of the whole history.
 */
import * as z from "zod";
import type { ToolDefinition } from "../../index.js";
import { ConversationSync, conversationOf } from "./conversation-sync.js";
import { checkOptions, type LedgerOptions, modelInfo, toolsOption, turnOptions } from "./ledger-options.js";
import type { LanguageModel, ModelMessage, ToolSet } from "./sdk-types.js";
import { toModelMessages } from "./to-model-messages.js";
import { definitionsOfToolSet } from "./tool-definitions.js";

type SystemModelMessage = Extract<ModelMessage, { role: "system" }>;

/** Options of {@link createPrepareStep}. */
export interface PrepareStepOptions extends LedgerOptions {
  /**
   * The run's tools (the `tools` given to `generateText` or the agent), or their neutral definitions: counted
   * against the budget each step. The SDK does not show `prepareStep` the tools, so without this option they are
   * not counted.
   */
  readonly tools?: ToolSet | ReadonlyArray<ToolDefinition>;
  /**
   * The system prompt given to the SDK as `system` (or an agent's `instructions`), which `prepareStep` does not
   * see either: it is logged as the thread's first message (counted, never compacted) and each step returns the
   * thread's system messages as `system`, in place of the SDK's. A system prompt written into `messages` needs
   * no option.
   */
  readonly system?: string;
}

/** What the step function reads of the SDK's step options. */
export interface StepInput {
  readonly messages: ReadonlyArray<ModelMessage>;
  readonly model?: LanguageModel;
}

/** What the step function returns: the compacted conversation, its system messages apart when it has any. */
export interface StepOverrides {
  messages: ModelMessage[];
  system?: SystemModelMessage[];
}

/** A `prepareStep` function backed by a context engine. */
export type LedgerPrepareStep = (step: StepInput) => Promise<StepOverrides>;

/** The leading system messages apart from the rest (the SDK prepends `system` to the messages it sends). */
function splitSystem(messages: ModelMessage[]): StepOverrides {
  let n = 0;
  while (n < messages.length && messages[n]!.role === "system") n++;
  if (n === 0) return { messages };
  return { system: messages.slice(0, n) as SystemModelMessage[], messages: messages.slice(n) };
}

/**
 * A `prepareStep` for `generateText`, `streamText` or `ToolLoopAgent` that keeps one thread of `engine` in step
 * with the conversation and sends the model the engine's compacted request. Each message is appended once: a
 * step appends only what the conversation gained since the last step, and a later run that resends the history
 * (or sends only its new messages) appends only those. Give it the run's `tools` and `system` prompt so the
 * budget counts them.
 *
 * @example
 * const prepareStep = createPrepareStep({ engine, threadId: "t1", budget: 30_000, tools, system });
 * const result = await generateText({ model, system, messages, tools, prepareStep, stopWhen: stepCountIs(50) });
 */
export function createPrepareStep(options: PrepareStepOptions): LedgerPrepareStep {
  checkOptions("createPrepareStep", options, {
    tools: toolsOption,
    system: z.string({ error: "must be a string" }).optional(),
  });
  const sync = new ConversationSync(options.engine, options.threadId);
  let definitions: Promise<ReadonlyArray<ToolDefinition>> | undefined;
  const toolDefinitions = () => {
    const tools = options.tools;
    definitions ??=
      tools === undefined
        ? Promise.resolve([])
        : Array.isArray(tools)
          ? Promise.resolve(tools as ReadonlyArray<ToolDefinition>)
          : definitionsOfToolSet(tools as ToolSet);
    return definitions;
  };
  return (step) =>
    sync.serialized(async () => {
      await sync.sync(conversationOf(options.system, step.messages));
      const tools = await toolDefinitions();
      const turn = await options.engine.prepareTurn(
        options.threadId,
        turnOptions(options, modelInfo(step.model), tools),
      );
      await options.onTurn?.(turn);
      return splitSystem(toModelMessages(turn.prompt));
    });
}
