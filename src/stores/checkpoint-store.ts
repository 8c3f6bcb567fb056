import * as z from "zod";
import { ValidationError } from "../errors/ledger-error.js";
import { checkThreadId } from "./log-store.js";
import { checkValue, parseRow } from "./store-row-schemas.js";

/**
 * Thread checkpoints: what the engine derived from a thread's log and one committed plan version, written so
 * that a worker without a cache loads a few rows instead of the whole log (docs/decisions/0009). A checkpoint
 * is disposable: losing one, or finding it unreadable, costs a full load and never data. It is written only
 * after its plan version was committed, and a (thread, plan version, log length) names one value for good (the
 * log is append-only and committed versions never change), so a second write of the same key may be ignored.
 */

/** One stored checkpoint. */
export interface ThreadCheckpoint {
  readonly threadId: string;
  /** The committed plan version it was derived with (≥ 1). */
  readonly planVersion: number;
  /** The log length it describes (≥ 1). */
  readonly logLength: number;
  /** What `body` is encoded as (e.g. `cl-checkpoint/1`); a reader skips formats it does not know. */
  readonly format: string;
  /** The encoded checkpoint, or the part of it every reader needs (opaque to the store). */
  readonly body: string;
  /**
   * The part a reader needs only now and then (opaque to the store; may be megabytes), read with
   * `CheckpointStore.tail`. Absent means empty. `latest` never returns it: a worker restoring a thread reads
   * the body alone, and the tail only if an operation asks for what it holds.
   */
  readonly tail?: string;
}

/** What names a checkpoint within its thread. */
export interface CheckpointKey {
  readonly planVersion: number;
  readonly logLength: number;
}

/**
 * Where checkpoints are kept. Every backend keeps, per thread, only the newest `CHECKPOINTS_KEPT` (by plan
 * version, then log length): older ones are deleted in the transaction that writes a newer one, so a thread's
 * checkpoints never grow with its history.
 *
 * @example
 * await checkpoints.put({ threadId: "t1", planVersion: 4, logLength: 120, format: "cl-checkpoint/1", body });
 * const cp = await checkpoints.latest("t1", 4, await log.length("t1")); // logLength 120, or undefined
 * // then read only the messages after cp.logLength instead of the whole log
 */
export interface CheckpointStore {
  /**
   * Stores a checkpoint; true when it did. A checkpoint with the same thread, plan version and log length is
   * left as it is (the key names one value), and the answer is false. Throws `ValidationError` for a bad thread
   * id, version, length, format or body.
   */
  put(checkpoint: ThreadCheckpoint): Promise<boolean>;
  /**
   * Stores a checkpoint whose tail is the stored tail of the same thread's checkpoint `base` followed by
   * `checkpoint.tail` (joined as they are, nothing between), without the caller reading that tail: a writer
   * adds only what changed since `base`. Answers "stored"; "exists" when the key is stored already (left as it
   * is, as `put` does); "missing" when `base` is not stored (never written, or trimmed), and nothing is stored.
   * Validates like `put`, and the base's version and length like a key.
   */
  putExtending(checkpoint: ThreadCheckpoint, base: CheckpointKey): Promise<"stored" | "exists" | "missing">;
  /**
   * The checkpoint of exactly `planVersion` with the greatest log length ≤ `maxLogLength`, or undefined when
   * there is none. Throws `ValidationError` for a bad thread id, or a version or maximum that is not an
   * integer ≥ 1.
   */
  latest(threadId: string, planVersion: number, maxLogLength: number): Promise<ThreadCheckpoint | undefined>;
  /**
   * The tail of exactly this checkpoint ("" when it was put without one), or undefined when it is not stored
   * (never written, or trimmed since `latest` named it). Validates its arguments like `latest`, the length as
   * `logLength`.
   */
  tail(threadId: string, planVersion: number, logLength: number): Promise<string | undefined>;
}

/** How many checkpoints each backend keeps per thread. */
export const CHECKPOINTS_KEPT = 3;

/** Longest `format` a checkpoint may name: a short tag such as `cl-checkpoint/1`, never a payload. */
export const CHECKPOINT_FORMAT_MAX = 64;

/**
 * Validates a checkpoint before any backend writes it and returns a frozen copy of its five fields without the
 * tail (what `latest` hands out; a caller's object may carry more, and may change after the put) and the tail
 * ("" when absent). Throws `ValidationError` naming the field.
 */
export function checkCheckpoint(checkpoint: ThreadCheckpoint): {
  readonly head: ThreadCheckpoint;
  readonly tail: string;
} {
  const threadId = checkpoint?.threadId;
  checkThreadId(threadId);
  const { planVersion, logLength, format, body } = checkpoint;
  checkCount(threadId, planVersion, "planVersion");
  checkCount(threadId, logLength, "logLength");
  if (typeof format !== "string" || format.length === 0 || format.length > CHECKPOINT_FORMAT_MAX) {
    throw new ValidationError(
      `checkpoint format must be a non-empty string of at most ${CHECKPOINT_FORMAT_MAX} characters`,
      { threadId, field: "format" },
    );
  }
  const tail = checkpoint.tail === undefined ? "" : checkpoint.tail;
  for (const [field, value] of [
    ["body", body],
    ["tail", tail],
  ] as const) {
    if (typeof value !== "string") {
      throw new ValidationError(`checkpoint ${field} must be a string, got ${shown(value)}`, {
        threadId,
        field,
      });
    }
  }
  return { head: Object.freeze({ threadId, planVersion, logLength, format, body }), tail };
}

/** Validates the base key of `putExtending` (named `base.planVersion`, `base.logLength` in errors). */
export function checkBaseKey(threadId: string, base: CheckpointKey): void {
  checkCount(threadId, base?.planVersion, "base.planVersion");
  checkCount(threadId, base?.logLength, "base.logLength");
}

/**
 * A tail's continuation as the database column holds it: the column holds a JSON string (see
 * `checkpointFromRow`), and JSON escapes each character on its own, so the stored column less its closing
 * quote, followed by this, is the column of the joined text.
 */
export function continuationColumn(tail: string): string {
  return JSON.stringify(tail).slice(1);
}

/**
 * Validates the arguments of `latest` (`length` is "maxLogLength") or `tail` ("logLength") the way `put`
 * validates a key.
 */
export function checkLatestArguments(
  threadId: string,
  planVersion: number,
  length: number,
  lengthField: "maxLogLength" | "logLength" = "maxLogLength",
): void {
  checkThreadId(threadId);
  checkCount(threadId, planVersion, "planVersion");
  checkCount(threadId, length, lengthField);
}

/**
 * Validates a checkpoint row read back from a database (rows come from outside: another library version, a
 * manual edit) and returns it frozen. The body column holds the body as a JSON string, which keeps NUL
 * characters and lone surrogates intact in SQLite and PostgreSQL text alike.
 */
export function checkpointFromRow(
  threadId: string,
  planVersion: number,
  logLength: number,
  format: unknown,
  bodyJson: unknown,
): ThreadCheckpoint {
  const what = `checkpoint (plan version ${planVersion}, log length ${logLength})`;
  const body = parseRow(z.string(), bodyJson, { what: `body of ${what}`, threadId });
  const checked = checkValue(formatSchema, format, {
    what: `format of ${what}`,
    threadId,
    fieldPrefix: "format",
  });
  return Object.freeze({ threadId, planVersion, logLength, format: checked, body });
}

/** A body or tail as its database column holds it (see `checkpointFromRow`). */
export function checkpointTextColumn(text: string): string {
  return JSON.stringify(text);
}

/** Validates a tail column read back from a database (a JSON string, like the body). */
export function checkpointTailFromColumn(
  threadId: string,
  planVersion: number,
  logLength: number,
  tailJson: unknown,
): string {
  const what = `tail of checkpoint (plan version ${planVersion}, log length ${logLength})`;
  return parseRow(z.string(), tailJson, { what, threadId });
}

/**
 * Orders checkpoints newest first: by plan version, then log length. Retention keeps the first
 * `CHECKPOINTS_KEPT` of a thread in this order; the database backends say the same in SQL.
 */
export function newestFirst(a: ThreadCheckpoint, b: ThreadCheckpoint): number {
  return b.planVersion - a.planVersion || b.logLength - a.logLength;
}

const formatSchema = z.string().min(1).max(CHECKPOINT_FORMAT_MAX);

/** Throws `ValidationError` unless `value` is an integer ≥ 1 (a plan version or log length a checkpoint names). */
function checkCount(threadId: string, value: unknown, field: string): void {
  if (!Number.isSafeInteger(value) || (value as number) < 1) {
    throw new ValidationError(`${field} must be an integer ≥ 1, got ${shown(value)}`, { threadId, field });
  }
}

/** How a bad value is shown in a message: numbers as written, anything else by type (bodies may be huge). */
function shown(value: unknown): string {
  if (typeof value === "number") return String(value);
  return value === null ? "null" : typeof value;
}
