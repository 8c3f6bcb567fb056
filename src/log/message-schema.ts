import * as z from "zod";
import type { MessageInput } from "./message.js";

// The composite schemas are built on their first parse (`z.lazy`): messages that pass the quick checks
// (message-quick-check.ts) never reach them, and a short CLI command then never pays for building them.

/** The longest id accepted (message, artifact, tenant…), in UTF-16 code units. */
export const MAX_ID_LENGTH = 512;

/**
 * Why `id` is not an id every backend can store, or undefined: an id is a non-empty string of at most
 * {@link MAX_ID_LENGTH} characters without NUL (PostgreSQL text refuses it, so memory and SQLite refuse it too).
 * Thread, message, tool-call, model-call, tenant and artifact ids all follow this rule.
 */
export function idProblem(id: unknown): string | undefined {
  if (typeof id !== "string" || id.length === 0) return "must be a non-empty string";
  if (id.length > MAX_ID_LENGTH) return `must be at most ${MAX_ID_LENGTH} characters (got ${id.length})`;
  if (id.includes("\u0000")) return "must not contain a NUL character";
  return undefined;
}

/** zod schema of an id (see {@link idProblem}). */
export const idSchema = z.string().superRefine((id, ctx) => {
  const problem = idProblem(id);
  if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
});

/** zod schema of one part, guarding everything appended to a log. */
export const partSchema = z.lazy(() =>
  z.discriminatedUnion("type", [
    z.object({ type: z.literal("text"), text: z.string() }).strict(),
    z
      .object({
        type: z.literal("tool_call"),
        callId: idSchema,
        name: z.string().min(1, "must be a non-empty string"),
        args: z.string(),
      })
      .strict(),
    z
      .object({
        type: z.literal("tool_result"),
        callId: idSchema,
        content: z.string(),
        isError: z.boolean().optional(),
      })
      .strict(),
    z
      .object({
        type: z.literal("reasoning"),
        text: z.string(),
        signature: z.string().optional(),
        redacted: z.string().optional(),
      })
      .strict(),
    z
      .object({
        type: z.literal("media"),
        mediaType: z.string().min(1),
        uri: z.string().min(1),
        sizeBytes: z.number().int().nonnegative().optional(),
        alt: z.string().optional(),
      })
      .strict(),
  ]),
);

/** How deep caller-supplied metadata may nest (objects and arrays); deeper is refused, not walked. */
export const MAX_META_DEPTH = 32;

/**
 * Why `value` is not plain JSON within `maxDepth` levels, with the path to the offending value, or undefined.
 * Walked with an explicit stack: a value nested thousands deep is refused with its path, never a stack overflow.
 */
export function jsonProblem(
  value: unknown,
  maxDepth: number,
): { readonly path: PropertyKey[]; readonly message: string } | undefined {
  const stack: Array<{ value: unknown; path: PropertyKey[] }> = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: v, path } = stack.pop()!;
    if (v === null || typeof v === "string" || typeof v === "boolean") continue;
    if (typeof v === "number") {
      if (!Number.isFinite(v))
        return { path, message: "must be a finite number (JSON has no NaN or Infinity)" };
      continue;
    }
    const isArray = Array.isArray(v);
    if (!isArray && (typeof v !== "object" || Object.getPrototypeOf(v) !== Object.prototype)) {
      return {
        path,
        message: `must be JSON (string, number, boolean, null, array or plain object), got ${typeof v}`,
      };
    }
    if (path.length >= maxDepth) return { path, message: `nests deeper than ${maxDepth} levels` };
    const entries: Array<[PropertyKey, unknown]> = isArray
      ? // Array.from visits holes (as undefined, refused below); map skips them and left holes in `entries`.
        Array.from(v as unknown[], (item, i): [PropertyKey, unknown] => [i, item])
      : Object.entries(v as Record<string, unknown>);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, item] = entries[i]!;
      stack.push({ value: item, path: [...path, key] });
    }
  }
  return undefined;
}

/** How deep other JSON the API takes (tool parameter schemas, tool-call inputs) may nest. */
export const MAX_JSON_DEPTH = 64;

/**
 * A zod refinement bounding a JSON value's nesting at `maxDepth` levels, walked without recursion (see
 * {@link jsonProblem}): a value nested thousands deep is a `ValidationError` naming its path, not a stack
 * overflow later when it is serialized.
 */
export function jsonDepthCheck(maxDepth: number = MAX_JSON_DEPTH) {
  return (value: unknown, ctx: z.RefinementCtx): void => {
    const problem = jsonProblem(value, maxDepth);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem.message, path: problem.path });
  };
}

/** A JSON value within the metadata depth bound (see {@link jsonProblem}). */
const metaValue = () =>
  z.unknown().superRefine((value, ctx) => {
    // One level is the meta object itself.
    const problem = jsonProblem(value, MAX_META_DEPTH - 1);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem.message, path: problem.path });
  });

/**
 * zod schema of message metadata: the known fields are typed, callers may add JSON-serializable fields. What a
 * store reads back is held to this; what is appended, to {@link metaInputSchema}.
 */
export const metaSchema = z.lazy(() =>
  z
    .object({
      sourceId: z.string().optional(),
      toolName: z.string().optional(),
      durability: z.enum(["ephemeral", "anchoring", "replayable", "non-replayable"]).optional(),
      sensitivity: z.enum(["public", "internal", "confidential", "restricted"]).optional(),
      pinned: z.boolean().optional(),
      createdAt: z.string().optional(),
    })
    .catchall(metaValue()),
);

/**
 * Where a NUL character is in a JSON value (a string, or an object key), with the path to it, or undefined.
 * PostgreSQL's text and JSON types cannot hold NUL, so the metadata every backend takes is held to this (as ids
 * are), and a thread stored on one backend can move to another. Walked with an explicit stack, at most
 * {@link MAX_META_DEPTH} levels (the depth rule refuses deeper values).
 */
export function nulProblem(
  value: unknown,
): { readonly path: PropertyKey[]; readonly message: string } | undefined {
  const stack: Array<{ value: unknown; path: PropertyKey[] }> = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: v, path } = stack.pop()!;
    if (typeof v === "string") {
      if (v.includes("\u0000")) return { path, message: "must not contain a NUL character" };
      continue;
    }
    if (typeof v !== "object" || v === null || path.length > MAX_META_DEPTH) continue;
    const entries: Array<[PropertyKey, unknown]> = Array.isArray(v)
      ? Array.from(v as unknown[], (item, i): [PropertyKey, unknown] => [i, item])
      : Object.entries(v as Record<string, unknown>);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, item] = entries[i]!;
      if (typeof key === "string" && key.includes("\u0000"))
        return { path: [...path, key], message: "is a key with a NUL character" };
      stack.push({ value: item, path: [...path, key] });
    }
  }
  return undefined;
}

/** zod schema of the metadata of an appended message: {@link metaSchema}, with no NUL in any string or key. */
export const metaInputSchema = metaSchema.superRefine((meta, ctx) => {
  const problem = nulProblem(meta);
  if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem.message, path: problem.path });
});

/** zod schema of a message given to `ThreadLog.append`. */
export const messageInputSchema = z.lazy(() =>
  z
    .object({
      id: idSchema.optional(),
      role: z.enum(["system", "user", "assistant", "tool"]),
      parts: z.array(partSchema),
      meta: metaInputSchema.optional(),
    })
    .strict(),
);

/** Converts a zod issue path to the dotted form used in error messages, e.g. `parts[1].callId`. */
export function formatIssuePath(
  path: ReadonlyArray<PropertyKey>,
  issue?: { code?: string; keys?: ReadonlyArray<string> },
): string {
  let out = "";
  // An unrecognized key is reported at its own path, not at the object holding it.
  const full =
    issue?.code === "unrecognized_keys" && issue.keys?.[0] !== undefined ? [...path, issue.keys[0]] : path;
  for (const key of full) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out === "" ? String(key) : `.${String(key)}`;
  }
  return out;
}

// Keeps the schema and the hand-written type in step (checked by message-schema.test.ts).
export type MessageInputFromSchema = z.infer<typeof messageInputSchema>;
export type _SchemaCoversInput = MessageInput extends MessageInputFromSchema ? true : never;
