import type { MessageMeta, Part, Role } from "../log/message.js";

/** Why a rendered message exists. */
export type RenderedKind =
  | "original" // copied from the log unchanged
  | "cleared" // copied from the log with tool results / args replaced by placeholders
  | "summary" // synthetic: stands for a summarized span
  | "pointer" // synthetic: stands for an externalized span (artifact pointer + short summary)
  | "drop_marker" // synthetic: stands for a run of dropped messages (how many, and that recall finds them)
  | "pending_stub" // synthetic: a placeholder result for a call that has no result yet
  | "injection" // per-turn injected content, never part of the log
  | "rehydration"; // an artifact brought back for this turn, never part of the log

/** Where a rendered message came from. */
export interface Provenance {
  readonly kind: RenderedKind;
  /** Log message ids this message stands for (empty for injections and rehydrations). */
  readonly sourceIds: ReadonlyArray<string>;
  readonly synthetic: boolean;
}

/** One provider-neutral message of a rendered request. */
export interface RenderedMessage {
  readonly role: Role;
  readonly parts: ReadonlyArray<Part>;
  readonly provenance: Provenance;
  /** Tokens of this message including framing, by the render's message counter. */
  readonly tokens: number;
  /** sha256 of the canonical JSON of `{ role, parts }` (for an unchanged log message: the log's own hash). */
  readonly contentHash: string;
  /**
   * The log message's metadata, for a message copied from the log (`original` or `cleared`); absent on synthetic
   * messages. Not part of the hash: it is what the harness stored beside the content (e.g. an SDK's own fields,
   * which a converter back to that SDK's messages reads), and the log it comes from is hashed already.
   */
  readonly meta?: MessageMeta;
}

/** The provider-neutral request produced by `renderPrompt`. */
export interface RenderedPrompt {
  readonly threadId: string;
  readonly messages: ReadonlyArray<RenderedMessage>;
  /** Total tokens: the sum of message tokens plus the request overhead. */
  readonly tokenCount: number;
  readonly planVersion: number;
  /** Number of log messages the render saw (the log's length). */
  readonly logSeq: number;
  /** sha256 over the render format version and each message's role, content hash and provenance. */
  readonly hash: string;
  /** Id of the message counter used for `tokens`. */
  readonly counterId: string;
  /** Leading tokens identical to the previous render given in options (0 when none was given). */
  readonly unchangedLeadingTokens: number;
  /** Index of the last message of the stable prefix (system + summaries), -1 when there is none. */
  readonly stablePrefixEnd: number;
}
