/**
 * fast-check generators of valid provider-neutral conversations (`RenderedMessage[]`), for property tests of the
 * renderer and the provider adapters. A conversation is: an optional system prompt, then turns of user text,
 * assistant text, a mid-conversation system note, or a tool-call group (an assistant message with 1–3 calls,
 * optional text and reasoning, followed by results answering every call, in one or several tool messages and in
 * any order). Call ids come from a small pool, so ids are often reused once the earlier call was answered.
 */
import fc from "fast-check";
import { hashMessageContent } from "../../src/log/canonical-json.js";
import type {
  MediaPart,
  Part,
  ReasoningPart,
  Role,
  ToolCallPart,
  ToolResultPart,
} from "../../src/log/message.js";
import type { RenderedMessage } from "../../src/render/rendered-prompt.js";

/** A message before ids are assigned. */
export interface DraftMessage {
  readonly role: Role;
  readonly parts: ReadonlyArray<Part>;
}

/** Builds a rendered message copied unchanged from the log (provenance `original`, 0 tokens). */
export function neutralMessage(role: Role, parts: ReadonlyArray<Part>, sourceId = "m0"): RenderedMessage {
  return {
    role,
    parts,
    provenance: { kind: "original", sourceIds: [sourceId], synthetic: false },
    tokens: 0,
    contentHash: hashMessageContent(role, parts),
  };
}

/** Builds rendered messages from drafts, with source ids `m0`, `m1`, … */
export function neutralMessages(drafts: ReadonlyArray<DraftMessage>): RenderedMessage[] {
  return drafts.map((d, i) => neutralMessage(d.role, d.parts, `m${i}`));
}

/** Call ids the generator draws from; small on purpose so that ids get reused after being answered. */
export const CALL_ID_POOL: ReadonlyArray<string> = ["call_1", "call_2", "call_3", "toolu_01", "call.4"];

const text = (): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 6, arbitrary: fc.string({ maxLength: 40 }) },
    { weight: 1, arbitrary: fc.constant("") },
    { weight: 1, arbitrary: fc.constant(" \n\t") },
    { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 20 }) },
  );

const textPart = (): fc.Arbitrary<Part> => text().map((t) => ({ type: "text", text: t }));

const mediaPart = (): fc.Arbitrary<MediaPart> =>
  fc.constantFrom<MediaPart>(
    { type: "media", mediaType: "image/png", uri: "https://example.com/a.png", alt: "a chart" },
    { type: "media", mediaType: "image/jpeg", uri: "data:image/jpeg;base64,/9j/4AAQ" },
    { type: "media", mediaType: "application/pdf", uri: "s3://bucket/report.pdf", sizeBytes: 1024 },
  );

const args = (): fc.Arbitrary<string> =>
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }))
        .map((o) => JSON.stringify(o)),
    },
    { weight: 1, arbitrary: fc.constant("") },
    { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
    { weight: 1, arbitrary: fc.constant('{ "spaced" :  1.50 }') },
  );

const reasoning = (): fc.Arbitrary<ReasoningPart> =>
  fc.oneof(
    text().map((t): ReasoningPart => ({ type: "reasoning", text: t })),
    fc
      .tuple(text(), fc.base64String({ minLength: 4, maxLength: 24 }))
      .map(([t, sig]): ReasoningPart => ({ type: "reasoning", text: t, signature: sig })),
    fc
      .base64String({ minLength: 4, maxLength: 24 })
      .map((data): ReasoningPart => ({ type: "reasoning", text: "", redacted: data })),
    fc
      .tuple(text(), fc.base64String({ minLength: 4, maxLength: 24 }))
      .map(
        ([t, data]): ReasoningPart => ({ type: "reasoning", text: t, redacted: data, signature: "rs_0123" }),
      ),
  );

const userTurn = (): fc.Arbitrary<DraftMessage[]> =>
  fc
    .tuple(textPart(), fc.option(mediaPart(), { nil: undefined, freq: 5 }))
    .map(([t, media]) => [{ role: "user", parts: media === undefined ? [t] : [t, media] }]);

const assistantTextTurn = (): fc.Arbitrary<DraftMessage[]> =>
  fc
    .tuple(textPart(), fc.option(reasoning(), { nil: undefined, freq: 4 }))
    .map(([t, r]) => [{ role: "assistant", parts: r === undefined ? [t] : [r, t] }]);

const systemNoteTurn = (): fc.Arbitrary<DraftMessage[]> =>
  text().map((t) => [{ role: "system", parts: [{ type: "text", text: t }] }]);

const toolGroupTurn = (): fc.Arbitrary<DraftMessage[]> =>
  fc.integer({ min: 1, max: 3 }).chain((n) => {
    const exactly = { minLength: n, maxLength: n };
    return fc
      .record({
        ids: fc.uniqueArray(fc.constantFrom(...CALL_ID_POOL), exactly),
        names: fc.array(fc.constantFrom("bash", "search", "get_user_details"), exactly),
        args: fc.array(args(), exactly),
        outputs: fc.array(fc.oneof(text(), fc.constant("")), exactly),
        errors: fc.array(fc.boolean(), exactly),
        order: fc.shuffledSubarray([...Array(n).keys()], exactly),
        split: fc.boolean(),
        lead: fc.option(textPart(), { nil: undefined }),
        thought: fc.option(reasoning(), { nil: undefined }),
      })
      .map((g): DraftMessage[] => {
        const calls = g.ids.map(
          (id, k): ToolCallPart => ({
            type: "tool_call",
            callId: id,
            name: g.names[k] ?? "bash",
            args: g.args[k] ?? "{}",
          }),
        );
        const results = g.order.map((k): ToolResultPart => {
          const base = { type: "tool_result" as const, callId: g.ids[k] ?? "", content: g.outputs[k] ?? "" };
          return g.errors[k] === true ? { ...base, isError: true } : base;
        });
        const assistantParts: Part[] = [
          ...(g.thought === undefined ? [] : [g.thought]),
          ...(g.lead === undefined ? [] : [g.lead]),
          ...calls,
        ];
        const toolMessages: DraftMessage[] = g.split
          ? results.map((r) => ({ role: "tool", parts: [r] }))
          : [{ role: "tool", parts: results }];
        return [{ role: "assistant", parts: assistantParts }, ...toolMessages];
      });
  });

/** Options of `arbitraryConversation`. */
export interface ConversationOptions {
  /** Most turns after the system prompt (default 8). */
  readonly maxTurns?: number;
}

/** Generates a valid neutral conversation as rendered messages with `original` provenance. */
export function arbitraryConversation(options: ConversationOptions = {}): fc.Arbitrary<RenderedMessage[]> {
  const maxTurns = options.maxTurns ?? 8;
  const opening = fc.oneof(
    { weight: 3, arbitrary: userTurn() },
    { weight: 1, arbitrary: assistantTextTurn() },
    { weight: 2, arbitrary: toolGroupTurn() },
  );
  const later = fc.oneof(
    { weight: 3, arbitrary: userTurn() },
    { weight: 2, arbitrary: assistantTextTurn() },
    { weight: 3, arbitrary: toolGroupTurn() },
    { weight: 1, arbitrary: systemNoteTurn() },
  );
  const systemPrompt = fc.option(
    text().map((t): DraftMessage => ({ role: "system", parts: [{ type: "text", text: t }] })),
    { nil: undefined },
  );
  return fc
    .tuple(systemPrompt, opening, fc.array(later, { maxLength: Math.max(0, maxTurns - 1) }))
    .map(([system, first, rest]) =>
      neutralMessages([...(system === undefined ? [] : [system]), ...first, ...rest.flat()]),
    );
}
