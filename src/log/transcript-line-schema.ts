import * as z from "zod";

/** One tool call on an assistant transcript line; `arguments` is the JSON-encoded string, kept verbatim. */
export interface TranscriptToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** A `system` or `user` transcript line. */
export interface TranscriptTextLine {
  readonly role: "system" | "user";
  readonly content: string;
}

/** An `assistant` transcript line; `content` is `""` when the model only called tools. */
export interface TranscriptAssistantLine {
  readonly role: "assistant";
  readonly content: string;
  readonly tool_calls?: ReadonlyArray<TranscriptToolCall>;
  /** The model's reasoning summary (only some files have it). */
  readonly reasoning?: string;
}

/** A `tool` transcript line answering the call `tool_call_id`; `name` is the tool's name when known. */
export interface TranscriptToolLine {
  readonly role: "tool";
  readonly content: string;
  readonly tool_call_id: string;
  readonly name?: string;
}

/** One line of a JSONL transcript (the OpenAI-chat-like shape of `shared/data/trajectories`). */
export type TranscriptLine = TranscriptTextLine | TranscriptAssistantLine | TranscriptToolLine;

// exactOptional: a key is either absent or holds a value of its type (an explicit `undefined` is rejected).
const nonEmpty = z.string().min(1, "must be a non-empty string");

const toolCallSchema = z.strictObject({ id: nonEmpty, name: nonEmpty, arguments: z.string() });

/**
 * zod schema of one transcript line. Strict: every field has the type the format says, and keys the format
 * does not define for a role (e.g. `tool_calls` on a user line, or a typo) are rejected rather than dropped,
 * because silently ignoring them would make the import lossy.
 */
export const transcriptLineSchema = z.discriminatedUnion("role", [
  z.strictObject({ role: z.literal(["system", "user"]), content: z.string() }),
  z.strictObject({
    role: z.literal("assistant"),
    content: z.string(),
    tool_calls: z.array(toolCallSchema).exactOptional(),
    reasoning: z.string().exactOptional(),
  }),
  z.strictObject({
    role: z.literal("tool"),
    content: z.string(),
    tool_call_id: nonEmpty,
    name: z.string().exactOptional(),
  }),
]);

/** The keys each role may carry, for error messages. */
export const transcriptKeysByRole: Readonly<Record<TranscriptLine["role"], ReadonlyArray<string>>> = {
  system: ["role", "content"],
  user: ["role", "content"],
  assistant: ["role", "content", "tool_calls", "reasoning"],
  tool: ["role", "content", "tool_call_id", "name"],
};

// Keeps the schema and the hand-written type in step (checked with expectTypeOf in import-jsonl.test.ts).
export type TranscriptLineFromSchema = z.infer<typeof transcriptLineSchema>;
