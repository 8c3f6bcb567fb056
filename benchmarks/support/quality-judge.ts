/**
 * The one judge of the retention benchmark: every system's OpenAI Chat request is counted by the same counter
 * (o200k with OpenAI framing) and checked the same way: which planted facts it still holds, which tool calls it
 * still shows, whether the pinned constraint and the task are there verbatim, how many leading tokens it shares
 * with the previous request, and whether OpenAI would accept it.
 */
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { OpenAIChatRequest } from "../../src/render/openai-chat-adapter.js";
import { validateProviderRequest } from "../../src/render/provider-rules.js";
import type { MessageCounter } from "../../src/tokens/tokenizer.js";
import { neutralOf } from "./peer-adapters.js";
import { type CallSignature, visibleCalls } from "./quality-calls.js";
import type { FactKind, PlantedFact } from "./quality-facts.js";

/** Counts Chat messages with one counter, memoised by the message's JSON (shared by every system of a run). */
export class ChatCounter {
  readonly #memo = new Map<string, number>();
  constructor(readonly counter: MessageCounter) {}

  /** Tokens of one message, given its JSON text. */
  count(key: string, message: ChatCompletionMessageParam): number {
    let n = this.#memo.get(key);
    if (n === undefined) {
      n = this.counter.countMessage(neutralOf(message));
      this.#memo.set(key, n);
    }
    return n;
  }

  /** Tokens of a whole request: its messages plus the request's own framing. */
  countRequest(request: OpenAIChatRequest): number {
    let sum = this.counter.requestOverhead;
    for (const m of request.messages) sum += this.count(JSON.stringify(m), m);
    return sum;
  }
}

/** What one request shows, by the judge. */
export interface RequestVerdict {
  readonly tokens: number;
  readonly budget: number;
  readonly overBudget: boolean;
  readonly invalid: boolean;
  readonly problem?: string;
  /** Facts already planted (their message was appended) and how many of them the request holds, per kind. */
  readonly planted: Readonly<Record<FactKind, number>>;
  readonly kept: Readonly<Record<FactKind, number>>;
  readonly callsSoFar: number;
  readonly callsVisible: number;
  readonly pinnedVerbatim: boolean;
  readonly taskVerbatim: boolean;
  /** Message tokens of the leading messages identical to the previous request's (0 for the first). */
  readonly reusedTokens: number;
  /** Message tokens (request framing left out), the denominator of the next request's reuse. */
  readonly messageTokens: number;
}

/** What the judge needs to know about the run at one call. */
export interface CallContext {
  readonly budget: number;
  /** Messages appended so far (facts whose host index is below are planted). */
  readonly appended: number;
  readonly facts: ReadonlyArray<PlantedFact>;
  readonly calls: ReadonlyArray<CallSignature>;
  /** Texts of the run's own messages (a request text not among them is synthetic). */
  readonly originals: ReadonlySet<string>;
  readonly pinnedText: string;
  readonly taskText: string;
}

/** Judges the requests of one system on one run, remembering the previous request for the reuse figure. */
export class RequestJudge {
  #previous: ReadonlyArray<string> = [];
  constructor(readonly counter: ChatCounter) {}

  judge(request: OpenAIChatRequest, context: CallContext): RequestVerdict {
    const keys = request.messages.map((m) => JSON.stringify(m));
    const tokens = keys.map((k, i) => this.counter.count(k, request.messages[i]!));
    const messageTokens = tokens.reduce((a, b) => a + b, 0);
    let reusedTokens = 0;
    for (let i = 0; i < keys.length && keys[i] === this.#previous[i]; i++) reusedTokens += tokens[i]!;
    this.#previous = keys;
    const json = keys.join("\n");
    const planted = { identifier: 0, word: 0 };
    const kept = { identifier: 0, word: 0 };
    for (const fact of context.facts) {
      if (fact.messageIndex >= context.appended) continue;
      planted[fact.kind]++;
      if (json.includes(fact.key)) kept[fact.kind]++;
    }
    const total = messageTokens + this.counter.counter.requestOverhead;
    const problems = validateProviderRequest("openai", request);
    return {
      tokens: total,
      budget: context.budget,
      overBudget: total > context.budget,
      invalid: problems.length > 0,
      ...(problems[0] === undefined ? {} : { problem: problems[0] }),
      planted,
      kept,
      callsSoFar: context.calls.length,
      callsVisible: visibleCalls(request, context.calls, context.originals),
      pinnedVerbatim: json.includes(escaped(context.pinnedText)),
      taskVerbatim: json.includes(escaped(context.taskText)),
      reusedTokens,
      messageTokens,
    };
  }
}

/** A text as it appears inside a JSON string. */
function escaped(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}
