/**
 * `contextLedgerMiddleware`: context-ledger as a middleware of LangChain's `createAgent`. Before every model
 * call it appends to the thread's log what the agent's state holds that the log does not (the new user message,
 * the last reply, the tool results), asks the engine for the turn, and sends the model the compacted messages.
 */
import type { AIMessage, BaseMessage, SystemMessage, UsageMetadata } from "@langchain/core/messages";
import type { AgentMiddleware } from "langchain";
import * as z from "zod";
import type { ContextEngine } from "../../engine/context-engine.js";
import type { BudgetInput, PreparedTurn } from "../../engine/turn-options.js";
import { ValidationError } from "../../errors/ledger-error.js";
import { sha256Hex } from "../../log/canonical-json.js";
import type { MessageInput } from "../../log/message.js";
import type { ProviderFormat } from "../../render/provider-rules.js";
import type { ToolDefinition } from "../../render/tool-definitions.js";
import { queueOnThread } from "../thread-queue.js";
import { checkWingOptions, nonEmptyString } from "../wing-options.js";
import { fromLangChainMessageAt } from "./from-langchain.js";
import { LoggedIds } from "./logged-ids.js";
import { lcAgents, lcFunctionCalling } from "./peer-modules.js";
import { toLangChainMessages } from "./to-langchain.js";

/** The part of LangChain's agent runtime a thread id may be read from. */
export interface AgentRuntimeLike {
  readonly configurable?: { readonly thread_id?: string; readonly [key: string]: unknown };
}

/** Options of {@link contextLedgerMiddleware}. */
export interface ContextLedgerMiddlewareOptions {
  /** The engine whose log and plans the agent's calls go through. */
  readonly engine: ContextEngine;
  /**
   * The thread: a fixed id, or read from each run (e.g. `(runtime) => runtime.configurable?.thread_id ?? "t"`,
   * the checkpointer's thread).
   */
  readonly threadId: string | ((runtime: AgentRuntimeLike) => string);
  /** The request format whose rules the turn keeps (default `openai`); pick the provider the model speaks. */
  readonly format?: ProviderFormat;
  /** The model the calls go to: recorded with each call and the key of the token calibration. */
  readonly model?: string;
  /** The budget of each call (default: the engine's). */
  readonly budget?: BudgetInput;
  /** Report the reply's `usage_metadata.input_tokens` to the engine (`recordUsage`) to calibrate (default true). */
  readonly recordUsage?: boolean;
  /** Called with each prepared turn before the model is called (its call id, figures, the rendered prompt). */
  readonly onTurn?: (turn: PreparedTurn) => void | Promise<void>;
  /**
   * About how many threads' logged message ids one middleware keeps in memory (default 1,000; 0 asks the log on
   * every call).
   */
  readonly cacheThreads?: number;
}

/** The middleware's name in the agent (names must be unique among an agent's middleware). */
export const CONTEXT_LEDGER_MIDDLEWARE_NAME = "ContextLedgerMiddleware";

/** Tool definitions as the engine counts them, per LangChain tool object (their JSON Schema is made once). */
const definitions = new WeakMap<object, ToolDefinition | null>();

function definitionOf(tool: unknown): ToolDefinition | undefined {
  if (typeof tool !== "object" || tool === null) return undefined;
  const cached = definitions.get(tool);
  if (cached !== undefined) return cached ?? undefined;
  let fn: { name?: unknown; description?: unknown; parameters?: unknown } | undefined;
  if (lcFunctionCalling.isLangChainTool(tool)) fn = lcFunctionCalling.convertToOpenAIFunction(tool);
  else if ((tool as { type?: unknown }).type === "function") fn = (tool as { function?: typeof fn }).function;
  // Anything else is a provider's own tool (web search, code execution): the provider defines and counts it.
  const definition =
    typeof fn?.name === "string"
      ? {
          name: fn.name,
          ...(typeof fn.description === "string" && fn.description !== ""
            ? { description: fn.description }
            : {}),
          ...(typeof fn.parameters === "object" && fn.parameters !== null
            ? { parameters: fn.parameters as Record<string, unknown> }
            : {}),
        }
      : null;
  definitions.set(tool, definition);
  return definition ?? undefined;
}

function toolDefinitions(tools: ReadonlyArray<unknown>): ToolDefinition[] {
  return tools.map(definitionOf).filter((d): d is ToolDefinition => d !== undefined);
}

/** The log id of the agent's system prompt: one per distinct text, so each prompt is logged once. */
function systemId(text: string): string {
  return `system-${sha256Hex(text).slice(0, 16)}`;
}

/** The log id of each message of the agent's state, which it must have to be told logged or not. */
function stateIds(messages: ReadonlyArray<BaseMessage>): string[] {
  return messages.map((message, index) => {
    if (typeof message.id !== "string" || message.id === "") {
      throw new ValidationError(
        "a message of the agent's state has no id, so it cannot be told whether it was logged already",
        { index, field: "id" },
      );
    }
    return message.id;
  });
}

/**
 * What the log lacks of the agent's state, in state order, with the agent's system prompt first when the log
 * does not hold that text yet. Messages are matched by id, as LangGraph's own state matches them.
 */
function unlogged(
  known: ReadonlySet<string>,
  messages: ReadonlyArray<BaseMessage>,
  ids: ReadonlyArray<string>,
  system: { readonly message: SystemMessage; readonly id: string } | undefined,
): MessageInput[] {
  const batch: MessageInput[] = [];
  if (system !== undefined && !known.has(system.id)) {
    batch.push({ ...fromLangChainMessageAt(system.message, 0), id: system.id });
  }
  messages.forEach((message, index) => {
    if (!known.has(ids[index]!)) batch.push(fromLangChainMessageAt(message, index));
  });
  return batch;
}

/** The options' shapes beyond the ones every wing shares. */
const middlewareShapes = {
  threadId: z.union(
    [nonEmptyString, z.custom<(runtime: AgentRuntimeLike) => string>((v) => typeof v === "function")],
    { error: "must be a non-empty string or a function of the run" },
  ),
  recordUsage: z.boolean({ error: "must be a boolean" }).optional(),
  cacheThreads: z
    .number({ error: "must be a whole number of threads, 0 or more" })
    .int("must be a whole number of threads, 0 or more")
    .min(0, "must be a whole number of threads, 0 or more")
    .optional(),
};

/**
 * An agent middleware for LangChain's `createAgent` (langchain v1) that runs every model call through
 * context-ledger: it appends to the thread's log what happened since the previous call (each message once,
 * matched by id; the agent's system prompt once per distinct text), prepares the turn with the agent's tools
 * counted against the budget, and calls the model with the compacted messages of the turn's rendered prompt.
 * When the run ends it appends the final reply. The agent's state keeps the whole conversation; only the model
 * sees the compacted one, and `engine.replay(callId)` reproduces any call.
 *
 * @example
 * const agent = createAgent({
 *   model, tools, systemPrompt,
 *   middleware: [contextLedgerMiddleware({ engine, threadId: "t1", budget: 32_000 })],
 * });
 * await agent.invoke({ messages: [new HumanMessage("Fix the flaky test")] });
 */
export function contextLedgerMiddleware(options: ContextLedgerMiddlewareOptions): AgentMiddleware {
  checkWingOptions("contextLedgerMiddleware", options, middlewareShapes);
  const { engine, format = "openai" } = options;
  const logged = new LoggedIds(engine, options.cacheThreads);
  const threadOf = (runtime: AgentRuntimeLike): string => {
    if (typeof options.threadId === "string") return options.threadId;
    const threadId: unknown = options.threadId(runtime);
    if (typeof threadId !== "string" || threadId === "") {
      throw new ValidationError(
        `contextLedgerMiddleware option threadId returned ${JSON.stringify(threadId)} for this run, not a non-empty string`,
        { field: "threadId" },
      );
    }
    return threadId;
  };

  // Reading what the log holds and appending the rest is one step per thread at a time (with every other wing of
  // this process on the engine): two model calls at once would otherwise both append the same new messages.
  const append = (
    threadId: string,
    messages: ReadonlyArray<BaseMessage>,
    systemMessage?: SystemMessage,
  ): Promise<void> => {
    const ids = stateIds(messages);
    const text = systemMessage?.text ?? "";
    const system =
      systemMessage === undefined || text === "" ? undefined : { message: systemMessage, id: systemId(text) };
    return queueOnThread(engine, threadId, async () => {
      const known = await logged.held(threadId, system === undefined ? ids : [system.id, ...ids]);
      const batch = unlogged(known, messages, ids, system);
      if (batch.length === 0) return;
      const result = await engine.append(threadId, batch);
      logged.add(threadId, result.ids);
    });
  };

  const recordUsage = async (callId: string, reply: AIMessage): Promise<void> => {
    const usage = (reply as unknown as { readonly usage_metadata?: UsageMetadata }).usage_metadata;
    if (options.recordUsage === false || usage === undefined || !(usage.input_tokens > 0)) return;
    const cached = usage.input_token_details?.cache_read;
    await engine.recordUsage(callId, {
      inputTokens: usage.input_tokens,
      ...(usage.output_tokens >= 0 ? { outputTokens: usage.output_tokens } : {}),
      ...(typeof cached === "number" ? { cachedInputTokens: cached } : {}),
    });
  };

  // The compacted messages replace the request's messages in `wrapModelCall`, not the agent's state: a
  // `beforeModel` hook would have to rewrite the state (RemoveMessage(REMOVE_ALL_MESSAGES) and the compacted
  // list), after which the state would hold summaries and placeholders instead of what happened, the turn's
  // injected and rehydrated content would stay in it and come back as new messages on the next call, and the
  // result of `agent.invoke` would be the compacted view. Kept whole, the state mirrors the log, so "what is
  // new" is simply what the log lacks, and every other middleware and the caller see the real conversation.
  return lcAgents.createMiddleware({
    name: CONTEXT_LEDGER_MIDDLEWARE_NAME,
    wrapModelCall: async (request, handler) => {
      const threadId = threadOf(request.runtime);
      await append(threadId, request.state.messages, request.systemMessage);
      const tools = toolDefinitions(request.tools);
      const turn = await engine.prepareTurn(threadId, {
        format,
        ...(options.model === undefined ? {} : { model: options.model }),
        ...(options.budget === undefined ? {} : { budget: options.budget }),
        ...(tools.length === 0 ? {} : { tools }),
      });
      await options.onTurn?.(turn);
      const messages = toLangChainMessages(turn.prompt);
      // The prompt's leading system message is the agent's system prompt as logged: it goes where the agent
      // puts its system message, so that it is not sent twice.
      const first = messages[0];
      const system = first !== undefined && first.type === "system" ? (first as SystemMessage) : undefined;
      const reply = await handler({
        ...request,
        messages: system === undefined ? messages : messages.slice(1),
        ...(system === undefined ? {} : { systemMessage: system }),
      });
      await recordUsage(turn.callId, reply);
      return reply;
    },
    afterAgent: async (state, runtime) => {
      await append(threadOf(runtime), state.messages);
      return undefined;
    },
  });
}
