import * as z from "zod";
import { ValidationError } from "../errors/ledger-error.js";
import { isCount, isMeta, isName, isPartList, isPlainRecord, onlyKeys } from "../log/message-quick-check.js";
import { formatIssuePath, idSchema, metaSchema, partSchema } from "../log/message-schema.js";

/**
 * zod schemas for what the stores persist and read back. Database rows come from outside the process (another
 * version of this library, a manual edit, a broken disk), so every row is checked before it becomes a typed,
 * frozen value.
 */

// Each schema is built on its first parse (`z.lazy`): rows that pass the quick checks below never reach most of
// them, and a short CLI command then never pays for building them.

/** zod schema of a stored message: a full log `Message`. */
export const storedMessageSchema = z.lazy(() =>
  z
    .object({
      id: z.string().min(1),
      seq: z.number().int().nonnegative(),
      role: z.enum(["system", "user", "assistant", "tool"]),
      parts: z.array(partSchema),
      meta: metaSchema,
      hash: z.string().regex(/^[0-9a-f]{64}$/, "must be a sha256 hex digest"),
    })
    .strict(),
);

/** zod schema of the token counts kept beside a message, keyed by counter id. */
export const tokenCountsSchema = z.lazy(() => z.record(z.string().min(1), z.number().int().nonnegative()));

// Quick checks of the two row shapes a worker reads most (every message it loads): plain loops that accept only
// values the schemas accept, several times faster than the schemas. A value they refuse goes to the schema,
// which says what is wrong with it; a property test holds them to the schemas. The part and metadata checks are
// the log's (`message-quick-check.ts`), which appends use too.

const ROLES: ReadonlySet<unknown> = new Set(["system", "user", "assistant", "tool"]);
const HASH = /^[0-9a-f]{64}$/;

/** A quick check that accepts only values `storedMessageSchema` accepts (not every one of them). */
export function isStoredMessage(value: unknown): boolean {
  return (
    isPlainRecord(value) &&
    onlyKeys(value, ["id", "seq", "role", "parts", "meta", "hash"]) &&
    isName(value.id) &&
    isCount(value.seq) &&
    ROLES.has(value.role) &&
    isPartList(value.parts) &&
    isMeta(value.meta, false) &&
    typeof value.hash === "string" &&
    HASH.test(value.hash)
  );
}

/** A quick check that accepts only values `tokenCountsSchema` accepts. */
export function isTokenCounts(value: unknown): boolean {
  // A record's schema reads symbol keys too (and refuses them); `for…in` does not see them. It leaves a
  // `__proto__` key out of what it returns, which the quick check (returning the value as decoded) would not.
  if (!isPlainRecord(value) || Object.getOwnPropertySymbols(value).length > 0) return false;
  for (const key in value) if (key.length === 0 || key === "__proto__" || !isCount(value[key])) return false;
  return true;
}

/** zod schema of a structured summary (goals, decisions, ...). */
export const structuredSummarySchema = z.lazy(() =>
  z
    .object({
      goals: z.array(z.string()).optional(),
      decisions: z.array(z.string()).optional(),
      constraints: z.array(z.string()).optional(),
      openItems: z.array(z.string()).optional(),
      toolOutcomes: z.array(z.string()).optional(),
      artifacts: z.array(z.string()).optional(),
    })
    .strict(),
);

/** zod schema of a cached summary. */
export const cachedSummarySchema = z.lazy(() =>
  z.object({ text: z.string(), structured: structuredSummarySchema }).strict(),
);

const sensitivitySchema = z.enum(["public", "internal", "confidential", "restricted"]);

/** zod schema of artifact metadata. */
export const artifactMetaSchema = z.lazy(() =>
  z
    .object({
      artifactId: z.string().min(1),
      tenant: z.string().min(1),
      sensitivity: sensitivitySchema,
      threadId: z.string().min(1).optional(),
      sourceIds: z.array(z.string()).optional(),
      sizeChars: z.number().int().nonnegative(),
      contentHash: z.string().regex(/^[0-9a-f]{64}$/),
      createdAt: z.iso.datetime(),
      expiresAt: z.iso.datetime().optional(),
    })
    .strict(),
);

/** zod schema of the provider usage reported for a model call. */
export const modelUsageSchema = z.lazy(() =>
  z
    .object({
      inputTokens: z.number().int().nonnegative(),
      outputTokens: z.number().int().nonnegative().optional(),
      cachedInputTokens: z.number().int().nonnegative().optional(),
    })
    .strict(),
);

/** zod schema of a model-call audit record. */
export const modelCallRecordSchema = z.lazy(() =>
  z
    .object({
      callId: idSchema,
      threadId: idSchema,
      logSeq: z.number().int().nonnegative(),
      callNumber: z.number().int().positive().optional(),
      planVersion: z.number().int().nonnegative(),
      format: z.string().min(1),
      model: z.string().min(1).optional(),
      requestHash: z.string().min(1),
      tokenEstimate: z.number().int().nonnegative(),
      budget: z
        .strictObject({
          contextWindow: z.number().int().positive(),
          available: z.number().int(),
          target: z.number().int(),
        })
        .optional(),
      summaries: z.array(z.string()),
      evictions: z.array(z.string()),
      createdAt: z.iso.datetime(),
      durationMs: z.number().nonnegative().optional(),
      usage: modelUsageSchema.optional(),
      summarizers: z
        .array(
          z.strictObject({
            summarizerId: z.string().min(1),
            promptVersion: z.string(),
            spanHash: z.string().exactOptional(),
            messages: z.number().int().nonnegative(),
          }),
        )
        .optional(),
      rehydrated: z
        .array(
          z.strictObject({
            artifactId: z.string().min(1),
            tokens: z.number().int().nonnegative(),
            truncated: z.boolean(),
          }),
        )
        .optional(),
      rehydrationBlocked: z
        .array(
          z.strictObject({
            artifactId: z.string().min(1),
            reason: z.enum(["cooldown", "sensitivity", "tenant", "budget", "missing"]),
          }),
        )
        .optional(),
      logHead: z
        .string()
        .regex(/^[0-9a-f]{64}$/)
        .optional(),
      planHead: z
        .string()
        .regex(/^[0-9a-f]{64}$/)
        .optional(),
      clearance: sensitivitySchema.optional(),
    })
    .strict(),
);

/** Where a row came from, for the error raised when it does not match its schema. */
export interface RowSource {
  readonly what: string;
  readonly threadId?: string;
  readonly messageId?: string;
  /** Position inside the batch being written. */
  readonly index?: number;
  /** Where the checked value sits in its parent, prefixed to the reported field (e.g. `tokens`). */
  readonly fieldPrefix?: string;
}

/**
 * Parses a JSON column (a string) or an already decoded value against a schema, or throws `ValidationError`
 * naming the row and the offending field. `accepts`, when given, is a quick check that accepts only values the
 * schema accepts: a value it accepts is returned as decoded, without the schema.
 */
export function parseRow<S extends z.ZodType>(
  schema: S,
  raw: unknown,
  source: RowSource,
  accepts?: (value: unknown) => boolean,
): z.output<S> {
  if (typeof raw !== "string") return accepts?.(raw) ? (raw as z.output<S>) : checkValue(schema, raw, source);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (cause) {
    throw new ValidationError(`${source.what} read back from the store is not valid JSON`, whereOf(source), {
      cause,
    });
  }
  return accepts?.(value) ? (value as z.output<S>) : checkValue(schema, value, source);
}

/** Checks a value against a schema, or throws `ValidationError` naming its source and the offending field. */
export function checkValue<S extends z.ZodType>(schema: S, value: unknown, source: RowSource): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const path = formatIssuePath(issue.path, issue as { code?: string; keys?: ReadonlyArray<string> });
  const prefix = source.fieldPrefix;
  const field = prefix === undefined ? path || "(value)" : path === "" ? prefix : `${prefix}.${path}`;
  throw new ValidationError(`${source.what} is invalid: ${issue.message}`, { ...whereOf(source), field });
}

function whereOf(source: RowSource): { threadId?: string; messageId?: string; index?: number } {
  return {
    ...(source.threadId === undefined ? {} : { threadId: source.threadId }),
    ...(source.index === undefined ? {} : { index: source.index }),
    ...(source.messageId === undefined ? {} : { messageId: source.messageId }),
  };
}
