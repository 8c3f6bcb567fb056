/**
 * `contextLedgerMiddleware`: the engine as a language-model middleware. Wrapped with `wrapLanguageModel`, every
 * call the model gets — from any SDK function, step after step — first appends to the thread what its prompt
 * added since the last call, then goes out with the engine's compacted prompt in place of the whole history.
 */
import { ConversationSync, conversationOf } from "./conversation-sync.js";
import { checkOptions, type LedgerOptions, turnOptions } from "./ledger-options.js";
import type { LanguageModelMiddleware } from "./sdk-types.js";
import { toLanguageModelPrompt } from "./to-model-messages.js";
import { definitionsOfCall } from "./tool-definitions.js";

/** Options of {@link contextLedgerMiddleware}: the call's prompt holds the system prompt and its tools. */
export type LedgerMiddlewareOptions = LedgerOptions;

/**
 * A language-model middleware that keeps one thread of `engine` in step with the prompts the model is called with
 * and replaces each prompt by the engine's compacted one (`transformParams`). The call's tools are counted against
 * the budget; each message is appended once, as with `createPrepareStep`.
 *
 * @example
 * const model = wrapLanguageModel({
 *   model: openai("gpt-5"),
 *   middleware: contextLedgerMiddleware({ engine, threadId: "t1", budget: 30_000 }),
 * });
 * await generateText({ model, messages, tools, stopWhen: stepCountIs(50) });
 */
export function contextLedgerMiddleware(options: LedgerMiddlewareOptions): LanguageModelMiddleware {
  checkOptions("contextLedgerMiddleware", options);
  const sync = new ConversationSync(options.engine, options.threadId);
  return {
    specificationVersion: "v3",
    transformParams: ({ params, model }) =>
      sync.serialized(async () => {
        await sync.sync(conversationOf(undefined, params.prompt));
        const turn = await options.engine.prepareTurn(
          options.threadId,
          turnOptions(
            options,
            { provider: model.provider, modelId: model.modelId },
            definitionsOfCall(params.tools),
          ),
        );
        await options.onTurn?.(turn);
        return { ...params, prompt: toLanguageModelPrompt(turn.prompt) };
      }),
  };
}
