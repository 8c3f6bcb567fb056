import { freeze } from "immer";
import { canonicalJson, sha256Hex } from "../log/canonical-json.js";
import type { Part, Role } from "../log/message.js";
import type { ThreadLog } from "../log/thread-log.js";
import { hashMessageContent } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import type { MessageCounter } from "../tokens/tokenizer.js";
import { RENDER_FORMAT_VERSION } from "./placeholders.js";
import type { Provenance, RenderedMessage, RenderedPrompt } from "./rendered-prompt.js";

const canonicalByMessage = new WeakMap<RenderedMessage, string>();

/** Canonical JSON of what a rendered message sends and where it came from (tokens excluded); memoized. */
export function canonicalRendered(message: RenderedMessage): string {
  let text = canonicalByMessage.get(message);
  if (text === undefined) {
    text = canonicalJson({ role: message.role, parts: message.parts, provenance: message.provenance });
    canonicalByMessage.set(message, text);
  }
  return text;
}

/** Builds a frozen rendered message and counts its tokens (cached by content hash in the counter). */
export function makeRendered(
  role: Role,
  parts: ReadonlyArray<Part>,
  provenance: Provenance,
  counter: MessageCounter,
  contentHash?: string,
): RenderedMessage {
  const tokens = counter.countMessage({ role, parts }, contentHash ?? hashMessageContent(role, parts));
  return freeze({ role, parts, provenance, tokens }, true);
}

/** Leading tokens of `current` that are identical, message for message, to `previous`. */
export function unchangedLeadingTokens(
  previous: ReadonlyArray<RenderedMessage>,
  current: ReadonlyArray<RenderedMessage>,
): number {
  let tokens = 0;
  const n = Math.min(previous.length, current.length);
  for (let i = 0; i < n; i++) {
    const a = previous[i]!;
    const b = current[i]!;
    if (a !== b && canonicalRendered(a) !== canonicalRendered(b)) break;
    tokens += b.tokens;
  }
  return tokens;
}

/** Index of the last message of the leading system + summary/pointer run (-1 when there is none). */
export function stablePrefixEnd(messages: ReadonlyArray<RenderedMessage>): number {
  let end = -1;
  for (const [i, m] of messages.entries()) {
    if (m.role === "system" || m.provenance.kind === "summary" || m.provenance.kind === "pointer") end = i;
    else break;
  }
  return end;
}

/** sha256 over the render format version and the canonical messages: equal requests, equal hashes. */
export function hashRendered(messages: ReadonlyArray<RenderedMessage>): string {
  const body = messages.map(canonicalRendered).join("\n");
  return sha256Hex(`${RENDER_FORMAT_VERSION}\n${body}`);
}

/** Assembles the final `RenderedPrompt` with totals, hash and cache-stability figures. */
export function finishPrompt(
  log: ThreadLog,
  plan: CompactionPlan,
  messages: ReadonlyArray<RenderedMessage>,
  options: { readonly counter: MessageCounter; readonly previous?: RenderedPrompt },
): RenderedPrompt {
  let tokenCount = options.counter.requestOverhead;
  for (const m of messages) tokenCount += m.tokens;
  const frozen = Object.freeze(messages.slice());
  return Object.freeze({
    threadId: log.threadId,
    messages: frozen,
    tokenCount,
    planVersion: plan.version,
    logSeq: log.length,
    hash: hashRendered(frozen),
    counterId: options.counter.id,
    unchangedLeadingTokens:
      options.previous !== undefined && options.previous.counterId === options.counter.id
        ? unchangedLeadingTokens(options.previous.messages, frozen)
        : 0,
    stablePrefixEnd: stablePrefixEnd(frozen),
  });
}
