/**
 * The replay input of one planted run at one budget share, shared by the retention benchmark and the outcome
 * test: the budget (a share of the uncompacted final request, never below 4,000 tokens) and whether the system
 * prompt, the pinned constraint and the task alone fit it.
 */
import type { MessageInput } from "../../src/log/message.js";
import type { MessageCounter } from "../../src/tokens/tokenizer.js";
import { modelMessagesToOpenAIChat, toModelMessages } from "./peer-adapters.js";
import { originalTexts } from "./quality-calls.js";
import type { PlantedRun } from "./quality-facts.js";
import type { ChatCounter } from "./quality-judge.js";
import { callPoints, type ReplayInput } from "./quality-replay.js";

/** The smallest budget a run is replayed at. */
export const MIN_BUDGET = 4_000;

/** A stable seed per trajectory name (FNV-1a), so each run's facts are the same every time. */
export function seedOf(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export function chatTokens(chat: ChatCounter, messages: ReadonlyArray<MessageInput>): number {
  return chat.countRequest(modelMessagesToOpenAIChat(toModelMessages(messages)));
}

/** The replay input of one run at one share: the budget and what of the protected core could fit. */
export function inputAt(run: PlantedRun, share: number, counter: MessageCounter, chat: ChatCounter) {
  const points = callPoints(run.messages);
  const fullTokens = chatTokens(chat, run.messages.slice(0, points[points.length - 1]));
  const budget = Math.max(MIN_BUDGET, Math.floor(fullTokens * share));
  const system = run.messages[0]?.role === "system" ? [run.messages[0]] : [];
  const pinned = [...system, run.messages[run.pinnedIndex]!];
  const input: ReplayInput = {
    run,
    budget,
    pinnedFits: chatTokens(chat, pinned) <= budget,
    taskFits: chatTokens(chat, [...pinned, run.messages[run.taskIndex]!]) <= budget,
    counter,
    chat,
    originals: originalTexts(run.messages),
  };
  return { input, fullTokens };
}
