/**
 * Messages and parts of the thread log. Every value here is readonly, tagged and JSON-serializable.
 */

/** Who wrote a message. A `tool` message carries tool results. */
export type Role = "system" | "user" | "assistant" | "tool";

/** Plain text. */
export interface TextPart {
  readonly type: "text";
  readonly text: string;
}

/** A tool call made by the assistant. `args` is the raw JSON text exactly as the model produced it. */
export interface ToolCallPart {
  readonly type: "tool_call";
  readonly callId: string;
  readonly name: string;
  readonly args: string;
}

/** The result of a tool call; it answers the nearest earlier unanswered call with the same `callId`. */
export interface ToolResultPart {
  readonly type: "tool_result";
  readonly callId: string;
  readonly content: string;
  readonly isError?: boolean;
}

/**
 * Model reasoning attached to an assistant message. A provider `signature` (or a `redacted` payload) makes the
 * block opaque: it must be sent back byte-identical or dropped together with its whole group.
 */
export interface ReasoningPart {
  readonly type: "reasoning";
  readonly text: string;
  readonly signature?: string;
  readonly redacted?: string;
}

/** An opaque reference to media (image, audio, file) kept outside the log. */
export interface MediaPart {
  readonly type: "media";
  readonly mediaType: string;
  readonly uri: string;
  readonly sizeBytes?: number;
  readonly alt?: string;
}

/** Any part of a message, tagged by `type`. */
export type Part = TextPart | ToolCallPart | ToolResultPart | ReasoningPart | MediaPart;

/** The tag of a part. */
export type PartType = Part["type"];

/** How a tool's result may be treated by compaction (the tool-result retention strategy reads it). */
export type Durability = "ephemeral" | "anchoring" | "replayable" | "non-replayable";

/** Who may see a message or artifact. */
export type Sensitivity = "public" | "internal" | "confidential" | "restricted";

/** Metadata about a message. Callers may add their own JSON-serializable fields. */
export interface MessageMeta {
  readonly sourceId?: string;
  readonly toolName?: string;
  readonly durability?: Durability;
  readonly sensitivity?: Sensitivity;
  /** Pinned messages are never dropped by compaction. */
  readonly pinned?: boolean;
  readonly createdAt?: string;
  readonly [key: string]: unknown;
}

/** A message as stored in the log: immutable, with its position and content hash. */
export interface Message {
  /** Unique within the thread. */
  readonly id: string;
  /** 0-based, gap-free position in the thread, assigned on append. */
  readonly seq: number;
  readonly role: Role;
  readonly parts: ReadonlyArray<Part>;
  readonly meta: MessageMeta;
  /** sha256 (hex) of the canonical JSON of `{ role, parts }`. */
  readonly hash: string;
}

/** A message as given to `append`: id optional (generated when absent), no seq, no hash. */
export interface MessageInput {
  readonly id?: string;
  readonly role: Role;
  readonly parts: ReadonlyArray<Part>;
  readonly meta?: MessageMeta;
}

/** The tool calls of a message, in order. */
export function toolCallsOf(message: { readonly parts: ReadonlyArray<Part> }): ReadonlyArray<ToolCallPart> {
  return message.parts.filter((p): p is ToolCallPart => p.type === "tool_call");
}

/** The tool results of a message, in order. */
export function toolResultsOf(message: {
  readonly parts: ReadonlyArray<Part>;
}): ReadonlyArray<ToolResultPart> {
  return message.parts.filter((p): p is ToolResultPart => p.type === "tool_result");
}

/** The concatenated text parts of a message. */
export function textOf(message: { readonly parts: ReadonlyArray<Part> }): string {
  let out = "";
  for (const p of message.parts) if (p.type === "text") out += p.text;
  return out;
}
