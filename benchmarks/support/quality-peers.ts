/**
 * The peers of the retention benchmark, each fed the same messages call by call and turned into the OpenAI Chat
 * request it would send: LangChain.js `trimMessages`, Mastra's `TokenLimiterProcessor` (default settings, and at
 * 95 % of the budget), the AI SDK's `pruneMessages` (no budget at all) and a keep-newest window of our own.
 */
import { type BaseMessage, trimMessages } from "@langchain/core/messages";
import { TokenLimiterProcessor } from "@mastra/core/processors";
import { type ModelMessage, pruneMessages } from "ai";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { MessageInput } from "../../src/log/message.js";
import type { MessageCounter } from "../../src/tokens/tokenizer.js";
import {
  langChainToOpenAIChat,
  memoTokenCounter,
  modelMessagesToOpenAIChat,
  toLangChain,
  toModelMessages,
} from "./peer-adapters.js";
import { ChatCounter } from "./quality-judge.js";
import type { QualitySystem, SystemRun } from "./quality-systems.js";
import { keepNewest } from "./quality-window.js";

const noop = async (): Promise<void> => {};

/** A run that only appends and trims, with nothing to wait for. */
function stateless(call: SystemRun["call"]): SystemRun {
  return { call, settle: noop, close: noop };
}

/** `trimMessages`, strategy last, starting on a human or AI message, system kept, our counter (memoised by id). */
export function langChainSystem(): QualitySystem {
  return {
    key: "langchain",
    label: "LangChain.js trimMessages",
    family: "peer",
    setting: 'strategy "last", startOn ["human", "ai"], includeSystem, our counter as tokenCounter',
    start(budget, counter) {
      const messages: BaseMessage[] = [];
      const memo = new Map<string, number>();
      const tokenCounter = memoTokenCounter(counter, memo);
      let seen = 0;
      return stateless(async (fresh) => {
        messages.push(...toLangChain(fresh, seen));
        seen += fresh.length;
        const kept = await trimMessages(messages, {
          maxTokens: budget,
          tokenCounter,
          strategy: "last",
          startOn: ["human", "ai"],
          includeSystem: true,
        });
        // With includeSystem and startOn, when no human or AI message fits after the system prompt, trimMessages
        // returns [undefined] (its startOn pass strips the system prompt too): a failed call, not a request.
        if (kept.some((m) => m === undefined)) throw new Error("trimMessages returned an undefined message");
        return langChainToOpenAIChat(kept);
      });
    },
  };
}

/** Model messages in the prompt shape a provider call receives (user content as parts). */
function toPrompt(messages: ReadonlyArray<ModelMessage>): ModelMessage[] {
  return messages.map((m) =>
    m.role === "user" && typeof m.content === "string"
      ? { role: "user", content: [{ type: "text", text: m.content }] }
      : m,
  );
}

/**
 * Mastra's `TokenLimiterProcessor` at the prompt stage (`processLLMRequest`, where Mastra 1.x trims the request
 * it sends), counting with its own estimator: once with its defaults, once with the limit at `share` of the budget.
 */
export function mastraSystem(share: number): QualitySystem {
  return {
    key: share === 1 ? "mastra" : `mastra-${Math.round(share * 100)}`,
    label: share === 1 ? "Mastra TokenLimiterProcessor" : `Mastra TokenLimiterProcessor at ${share * 100} %`,
    family: "peer",
    setting:
      share === 1 ? "defaults (best-fit), limit = budget" : `defaults, limit = ${share * 100} % of budget`,
    start(budget) {
      const limiter = new TokenLimiterProcessor(Math.floor(budget * share));
      const names = new Map<string, string>();
      const prompt: ModelMessage[] = [];
      return stateless(async (fresh) => {
        prompt.push(...toPrompt(toModelMessages(fresh, names)));
        const args = { prompt } as unknown as Parameters<TokenLimiterProcessor["processLLMRequest"]>[0];
        const out = await limiter.processLLMRequest(args);
        const kept = (out?.prompt ?? prompt) as unknown as ModelMessage[];
        return modelMessagesToOpenAIChat(kept);
      });
    },
  };
}

/** `pruneMessages` with the settings of its documentation's example; it knows no budget. */
export function aiSdkSystem(): QualitySystem {
  return {
    key: "ai-prune",
    label: "AI SDK pruneMessages",
    family: "peer",
    setting:
      'reasoning "before-last-message", toolCalls "before-last-2-messages", emptyMessages "remove" (no budget)',
    start() {
      const names = new Map<string, string>();
      const messages: ModelMessage[] = [];
      return stateless(async (fresh) => {
        messages.push(...toModelMessages(fresh, names));
        const pruned = pruneMessages({
          messages,
          reasoning: "before-last-message",
          toolCalls: "before-last-2-messages",
          emptyMessages: "remove",
        });
        return modelMessagesToOpenAIChat(pruned);
      });
    },
  };
}

/** System messages plus the newest whole groups (a call with its results is one group) that fit. */
export function keepNewestSystem(): QualitySystem {
  return {
    key: "keep-newest",
    label: "keep-newest window",
    family: "peer",
    setting: "system messages + newest groups that fit, tool call and results atomic (our code)",
    start(budget, counter: MessageCounter) {
      const names = new Map<string, string>();
      const chat: ChatCompletionMessageParam[] = [];
      const counts = new ChatCounter(counter);
      return stateless(async (fresh: ReadonlyArray<MessageInput>) => {
        chat.push(...modelMessagesToOpenAIChat(toModelMessages(fresh, names)).messages);
        return keepNewest(chat, budget, counts);
      });
    },
  };
}
