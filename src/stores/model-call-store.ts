import { NotFoundError, ValidationError } from "../errors/ledger-error.js";
import { deepFreeze } from "../log/deep-freeze.js";
import type { Sensitivity } from "../log/message.js";
import { idProblem } from "../log/message-schema.js";
import { checkValue, modelCallRecordSchema, modelUsageSchema, parseRow } from "./store-row-schemas.js";

/** Token usage a provider reported for one call. */
export interface ModelUsage {
  readonly inputTokens: number;
  readonly outputTokens?: number;
  readonly cachedInputTokens?: number;
}

/** The audit record of one model call: enough to replay exactly what the model saw. */
export interface ModelCallRecord {
  readonly callId: string;
  readonly threadId: string;
  /** Log length the request was rendered from. */
  readonly logSeq: number;
  /**
   * The call's number within its thread (1 for the first), one more than the previous record's; absent in
   * records written before it was kept.
   */
  readonly callNumber?: number;
  readonly planVersion: number;
  /** Provider request format, e.g. `openai`, `responses`, `anthropic`. */
  readonly format: string;
  readonly model?: string;
  /** Hash of the rendered request, checked again on replay. */
  readonly requestHash: string;
  readonly tokenEstimate: number;
  /**
   * The budget the call was prepared against, in prompt tokens as `TurnStats.budget` gives them (tool
   * definitions and request framing already taken out); absent in records written before it was kept.
   */
  readonly budget?: {
    readonly contextWindow: number;
    /** Prompt tokens the request may use. */
    readonly available: number;
    /** What compaction aims for: `available` less the injection and rehydration reserves. */
    readonly target: number;
  };
  /** References to the summaries the request used (e.g. span hashes). */
  readonly summaries: ReadonlyArray<string>;
  /** References to what the plan evicted for this request (e.g. `drop:<first id>` per action). */
  readonly evictions: ReadonlyArray<string>;
  /** ISO time of the call. */
  readonly createdAt: string;
  readonly durationMs?: number;
  readonly usage?: ModelUsage;
  /** Per summary in force: summarizer id, prompt version, span hash and the messages it stands for. */
  readonly summarizers?: ReadonlyArray<{
    readonly summarizerId: string;
    readonly promptVersion: string;
    readonly spanHash?: string;
    readonly messages: number;
  }>;
  /**
   * The log chain's head after `logSeq` rows and the plan chain's head at `planVersion` when the call was
   * recorded (docs/decisions/0018): replay checks the stored chains still lead there. Absent in records written
   * before the ledger, or on a store without one.
   */
  readonly logHead?: string;
  readonly planHead?: string;
  /** Artifacts the engine brought back into this request (see `TurnStats.rehydrated`). */
  readonly rehydrated?: ReadonlyArray<{
    readonly artifactId: string;
    readonly tokens: number;
    readonly truncated: boolean;
  }>;
  /** Artifacts referred to but not brought back, and why (see `TurnStats.rehydrationBlocked`). */
  readonly rehydrationBlocked?: ReadonlyArray<{
    readonly artifactId: string;
    readonly reason: "cooldown" | "sensitivity" | "tenant" | "budget" | "missing";
  }>;
  /**
   * The clearance of the reader the request was rendered for: content above it was sent as stubs, and replay
   * renders it the same way. Absent in records written before clearances were kept (nothing was held back).
   */
  readonly clearance?: Sensitivity;
}

/**
 * Keeps one audit record per model call. `record` refuses a second record for the same call id; the provider's
 * usage arrives after the call and is attached with `setUsage`. `listWithUsage` returns the newest calls of a
 * model that carry usage, which is what per-model token calibration learns from.
 *
 * @example
 * await calls.record({ callId, threadId: "t1", logSeq: 42, planVersion: 3, format: "openai", requestHash,
 *   tokenEstimate: 9_800, summaries: [], evictions: [], createdAt: new Date().toISOString() });
 * await calls.setUsage(callId, { inputTokens: 9_950 });
 * await calls.listWithUsage("gpt-4o", 50); // newest first
 */
export interface ModelCallStore {
  /** Stores a new record; throws `ValidationError` when the call id is already recorded. */
  record(record: ModelCallRecord): Promise<void>;
  /** The record of a call, or `undefined`. */
  get(callId: string): Promise<ModelCallRecord | undefined>;
  /** Attaches (or replaces) the provider's usage; throws `NotFoundError` for an unknown call. */
  setUsage(callId: string, usage: ModelUsage): Promise<void>;
  /** The calls of a thread in the order they were recorded. */
  list(threadId: string): Promise<ReadonlyArray<ModelCallRecord>>;
  /**
   * The last `limit` calls of a thread, in the order they were recorded (what the engine reads before each turn:
   * where the previous call ended, and what it brought back). Optional: without it the engine reads `list`.
   */
  recent?(threadId: string, limit: number): Promise<ReadonlyArray<ModelCallRecord>>;
  /** Up to `limit` calls of `model` that have usage, newest first. */
  listWithUsage(model: string, limit: number): Promise<ReadonlyArray<ModelCallRecord>>;
}

/** Validates a record before it is stored and returns a frozen copy. */
export function checkCallRecord(record: ModelCallRecord): ModelCallRecord {
  const where =
    typeof record?.callId === "string" ? `model call ${JSON.stringify(record.callId)}` : "model call";
  const threadId = (record as { threadId?: unknown } | undefined)?.threadId;
  const source = { what: where, ...(typeof threadId === "string" ? { threadId } : {}) };
  return deepFreeze(checkValue(modelCallRecordSchema, record, source) as ModelCallRecord);
}

/** Validates usage before it is stored. */
export function checkUsage(callId: string, usage: ModelUsage): ModelUsage {
  const what = `usage of model call ${JSON.stringify(callId)}`;
  return deepFreeze(checkValue(modelUsageSchema, usage, { what }) as ModelUsage);
}

/** Validates a record row read back from a database and returns it frozen. */
export function callFromRow(body: unknown, usage: unknown): ModelCallRecord {
  const record = parseRow(modelCallRecordSchema, body, { what: "model call row" }) as ModelCallRecord;
  if (usage === null || usage === undefined) return deepFreeze(record);
  const what = `usage row of model call ${JSON.stringify(record.callId)}`;
  const parsed = parseRow(modelUsageSchema, usage, { what }) as ModelUsage;
  return deepFreeze({ ...record, usage: parsed });
}

/** The error raised when a call id is recorded twice. */
export function duplicateCallError(record: ModelCallRecord): ValidationError {
  return new ValidationError(`model call ${JSON.stringify(record.callId)} is already recorded`, {
    threadId: record.threadId,
    field: "callId",
  });
}

/**
 * Throws `ValidationError` unless `callId` is an id every backend can store (see `idProblem`): a NUL in it is a
 * clear error on every backend, not an outage on PostgreSQL.
 */
export function checkCallId(callId: string): void {
  const problem = idProblem(callId);
  if (problem !== undefined) throw new ValidationError(`model call id ${problem}`, { field: "callId" });
}

/** The error raised when usage is set for a call that was never recorded. */
export function callNotFound(callId: string): NotFoundError {
  return new NotFoundError(`model call ${JSON.stringify(callId)} was never recorded`, { field: "callId" });
}

/** Throws `ValidationError` unless `limit` is a positive integer. */
export function checkLimit(limit: number): void {
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new ValidationError(`limit must be a positive integer, got ${String(limit)}`, { field: "limit" });
  }
}
