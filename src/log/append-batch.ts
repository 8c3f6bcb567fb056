import { ValidationError } from "../errors/ledger-error.js";
import { hashMessageContent } from "./canonical-json.js";
import { deepFreeze } from "./deep-freeze.js";
import type { CallRef } from "./groups.js";
import type { Message, MessageInput, MessageMeta, Part } from "./message.js";
import { copyMeta, copyPart, isMessageInput } from "./message-quick-check.js";
import { formatIssuePath, messageInputSchema } from "./message-schema.js";

// Messages this module built from validated input (frozen, so they cannot have changed since).
const checked = new WeakSet<Message>();

/**
 * Whether `message` is one a log built from input it validated (`ThreadLog.append`), so that a store appending it
 * need not check it again: a message is validated once on its way in.
 */
export function validatedOnAppend(message: unknown): message is Message {
  return typeof message === "object" && message !== null && checked.has(message as Message);
}

/** What batch preparation needs to know of the log being appended to. */
export interface BatchTarget {
  readonly threadId: string;
  readonly length: number;
  readonly pendingCalls: ReadonlyMap<string, CallRef>;
  /** The seq of a message id in the log (also one a projected log does not hold), or undefined. */
  seqOf(id: string): number | undefined;
  /** Whether the log holds a message with this id (a projected log: among the messages it holds). */
  holdsId(id: string): boolean;
}

/** One validated message of a batch and its pairing with earlier calls. */
export interface BatchEntry {
  readonly message: Message;
  /** Seqs of the assistant messages whose calls this message answers (sorted, unique). */
  readonly answers: ReadonlyArray<number>;
  /** Per part, the seq of the assistant message holding the call it answers. */
  readonly callSeqByPart: ReadonlyArray<number>;
}

/** Options of {@link prepareBatch}. */
export interface PrepareBatchOptions {
  /**
   * Whether a message the quick check (`isMessageInput`) vouches for skips the zod schema (default true). Both
   * ways give the same entries and errors; false is for the tests and benchmarks that hold them to that.
   */
  readonly quickCheck?: boolean;
}

/** A batch message after the schema check: detached copies of its parts and metadata. */
interface CheckedInput {
  readonly id: string | undefined;
  readonly role: Message["role"];
  readonly parts: ReadonlyArray<Part>;
  readonly meta: MessageMeta;
}

const allowedParts: Record<Message["role"], ReadonlySet<Part["type"]>> = {
  system: new Set(["text"]),
  user: new Set(["text", "media"]),
  assistant: new Set(["text", "reasoning", "tool_call"]),
  tool: new Set(["tool_result"]),
};

/**
 * Validates a whole batch against the log it is appended to and builds its frozen messages: schema, unique ids
 * (generated ones never take an id supplied later in the batch), parts allowed for the role, each result paired
 * with the pending call of the same id, no call id reused while pending. Throws `ValidationError` naming the
 * batch index, message id and field; the log itself is not touched, so a bad batch appends nothing.
 */
export function prepareBatch(
  log: BatchTarget,
  inputs: ReadonlyArray<MessageInput>,
  options: PrepareBatchOptions = {},
): { entries: ReadonlyArray<BatchEntry>; pending: ReadonlyMap<string, CallRef> } {
  const pending = new Map(log.pendingCalls);
  const batchIds = new Set<string>();
  // Ids the caller supplies anywhere in the batch are reserved first, so a generated id never takes one.
  const supplied = new Set<string>();
  for (const raw of inputs) {
    const id = (raw as { id?: unknown } | null)?.id;
    if (typeof id === "string") supplied.add(id);
  }
  const entries: BatchEntry[] = [];
  inputs.forEach((raw, index) => {
    const seq = log.length + index;
    const where = { threadId: log.threadId, index, ...idOf(raw) };
    const input =
      options.quickCheck !== false && isMessageInput(raw) ? copyInput(raw) : parseInput(raw, where);
    const id = input.id ?? generateId(log, seq, batchIds, supplied);
    if (log.seqOf(id) !== undefined || batchIds.has(id)) {
      throw new ValidationError(
        `duplicate message id ${JSON.stringify(id)}: ids must be unique in a thread`,
        {
          ...where,
          messageId: id,
          field: "id",
        },
      );
    }
    batchIds.add(id);
    const callSeqByPart = checkParts(input, seq, pending, { ...where, messageId: id });
    const answers = [...new Set(callSeqByPart)].sort((a, b) => a - b);
    const message: Message = deepFreeze({
      id,
      seq,
      role: input.role,
      parts: input.parts,
      meta: input.meta,
      hash: hashMessageContent(input.role, input.parts),
    });
    checked.add(message);
    entries.push({ message, answers, callSeqByPart });
  });
  return { entries, pending };
}

function checkParts(
  input: { readonly role: Message["role"]; readonly parts: ReadonlyArray<Part> },
  seq: number,
  pending: Map<string, CallRef>,
  where: { threadId: string; index: number; messageId: string },
): ReadonlyArray<number> {
  const allowed = allowedParts[input.role];
  const callSeqByPart: number[] = [];
  input.parts.forEach((part, partIndex) => {
    const field = `parts[${partIndex}]`;
    if (!allowed.has(part.type)) {
      throw new ValidationError(
        `a ${input.role} message cannot hold a ${part.type} part (allowed: ${[...allowed].join(", ")})`,
        { ...where, field: `${field}.type` },
      );
    }
    if (part.type === "tool_call") {
      if (pending.has(part.callId)) {
        throw new ValidationError(
          `tool call id ${JSON.stringify(part.callId)} is reused while the earlier call with that id is still unanswered`,
          { ...where, field: `${field}.callId` },
        );
      }
      pending.set(part.callId, { seq, partIndex, callId: part.callId, name: part.name });
    } else if (part.type === "tool_result") {
      const call = pending.get(part.callId);
      if (call === undefined) {
        throw new ValidationError(
          `tool result for call id ${JSON.stringify(part.callId)} answers no earlier unanswered call of this thread (orphaned result)`,
          { ...where, field: `${field}.callId` },
        );
      }
      pending.delete(part.callId);
      callSeqByPart.push(call.seq);
    }
  });
  if (input.role === "tool" && input.parts.length === 0) {
    throw new ValidationError("a tool message needs at least one tool_result part", {
      ...where,
      field: "parts",
    });
  }
  return callSeqByPart;
}

/**
 * The id an append gives a message without one at `seq`, unless the thread or batch has it already (then a
 * suffix is added): what a caller can look up in a store ahead of the append.
 */
export function generatedId(seq: number): string {
  return `msg-${seq}`;
}

function generateId(
  log: BatchTarget,
  seq: number,
  batchIds: ReadonlySet<string>,
  supplied: ReadonlySet<string>,
): string {
  let id = generatedId(seq);
  for (let n = 1; log.seqOf(id) !== undefined || batchIds.has(id) || supplied.has(id); n++)
    id = `msg-${seq}-${n}`;
  return id;
}

function idOf(raw: unknown): { messageId?: string } {
  const id = (raw as { id?: unknown } | null)?.id;
  return typeof id === "string" ? { messageId: id } : {};
}

/** Copies of what the quick check accepted: the same values `parseInput` gives for it (a property test holds it). */
function copyInput(raw: MessageInput): CheckedInput {
  return {
    id: raw.id,
    role: raw.role,
    parts: raw.parts.map(copyPart),
    meta: raw.meta === undefined ? {} : copyMeta(raw.meta),
  };
}

function clonePart(part: Part): Part {
  // Drop keys explicitly set to undefined so a stored message survives a JSON round trip unchanged.
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(part)) if (value !== undefined) copy[key] = value;
  return copy as unknown as Part;
}

/**
 * Checks a message against the schema, or throws `ValidationError` naming the first problem and its field. This is
 * the reference the quick path is held to: for what the quick check accepts, `copyInput` gives what this gives.
 */
function parseInput(
  raw: unknown,
  where: { threadId: string; index: number; messageId?: string },
): CheckedInput {
  const parsed = messageInputSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ValidationError(`invalid message: ${issue.message}`, {
      ...where,
      field:
        formatIssuePath(issue.path, issue as { code?: string; keys?: ReadonlyArray<string> }) || "(message)",
    });
  }
  const input = parsed.data as MessageInput;
  return {
    id: input.id,
    role: input.role,
    parts: input.parts.map(clonePart),
    // A JSON copy detaches the log from the caller's objects (later caller edits cannot leak in); the schema has
    // already checked that every value is JSON.
    meta: input.meta === undefined ? {} : (JSON.parse(JSON.stringify(input.meta)) as MessageMeta),
  };
}

/**
 * Pairs messages that were validated and hashed when first appended (rows read back from a store) with the log
 * they continue, without the schema check, copies or hashing of `prepareBatch`: only what the log derives from
 * them (seq order, unique ids, each result paired with the pending call of its id) is worked out, and a row that
 * breaks those throws `ValidationError`. Messages must be frozen already; replay re-hashes instead.
 */
export function trustedBatch(
  log: BatchTarget,
  messages: ReadonlyArray<Message>,
): { entries: ReadonlyArray<BatchEntry>; pending: ReadonlyMap<string, CallRef> } {
  const pending = new Map(log.pendingCalls);
  const batchIds = new Set<string>();
  const entries: BatchEntry[] = [];
  messages.forEach((message, index) => {
    const seq = log.length + index;
    const where = { threadId: log.threadId, index, messageId: message.id };
    if (message.seq !== seq) {
      throw new ValidationError(`stored message seq ${message.seq} does not continue the log at ${seq}`, {
        ...where,
        field: "seq",
      });
    }
    // A projected log checks only the ids it holds: every store refuses a duplicate id in a thread, and looking
    // up the others would decode every id of the thread for a check the store has made.
    if (log.holdsId(message.id) || batchIds.has(message.id)) {
      throw new ValidationError(`duplicate message id ${JSON.stringify(message.id)} in the stored log`, {
        ...where,
        field: "id",
      });
    }
    batchIds.add(message.id);
    // The same pairing rules as a checked append (reused ids, orphaned results, parts per role): rows from a
    // store are trusted to be well formed, not to come from this library.
    const callSeqByPart = checkParts(message, message.seq, pending, where);
    const answers =
      callSeqByPart.length === 1 ? callSeqByPart : [...new Set(callSeqByPart)].sort((a, b) => a - b);
    entries.push({
      message: Object.isFrozen(message) ? message : deepFreeze(message),
      answers,
      callSeqByPart,
    });
  });
  return { entries, pending };
}
