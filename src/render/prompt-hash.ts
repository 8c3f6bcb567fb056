import { canonicalJson, sha256Hex } from "../log/canonical-json.js";
import { deepFreeze } from "../log/deep-freeze.js";
import type { Part, Role } from "../log/message.js";
import type { ThreadLog } from "../log/thread-log.js";
import { hashMessageContent } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import type { MessageCounter } from "../tokens/tokenizer.js";
import { RENDER_FORMAT_VERSION } from "./placeholders.js";
import type { Provenance, RenderedMessage, RenderedPrompt } from "./rendered-prompt.js";

const digestByMessage = new WeakMap<RenderedMessage, string>();

/** Canonical JSON of what a rendered message sends and where it came from (tokens excluded). */
export function canonicalRendered(message: RenderedMessage): string {
  return canonicalJson({ role: message.role, parts: message.parts, provenance: message.provenance });
}

/** sha256 of a rendered message's canonical JSON; memoized, so a message reused across renders is hashed once. */
export function renderedDigest(message: RenderedMessage): string {
  let digest = digestByMessage.get(message);
  if (digest === undefined) {
    digest = sha256Hex(canonicalRendered(message));
    digestByMessage.set(message, digest);
  }
  return digest;
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
  return deepFreeze({ role, parts, provenance, tokens });
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
    if (a !== b && renderedDigest(a) !== renderedDigest(b)) break;
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

/**
 * sha256 over the render format version and the list of per-message digests: equal requests, equal hashes.
 * Hashing digests instead of the full text keeps a warm render from re-reading every reused message.
 */
export function hashRendered(messages: ReadonlyArray<RenderedMessage>): string {
  const body = messages.map(renderedDigest).join("\n");
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
