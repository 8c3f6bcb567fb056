import { z } from "zod";
import type { MessageInput } from "./message.js";

/** zod schema of one part, guarding everything appended to a log. */
export const partSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: z.string() }).strict(),
  z
    .object({
      type: z.literal("tool_call"),
      callId: z.string().min(1, "must be a non-empty string"),
      name: z.string().min(1, "must be a non-empty string"),
      args: z.string(),
    })
    .strict(),
  z
    .object({
      type: z.literal("tool_result"),
      callId: z.string().min(1, "must be a non-empty string"),
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
]);

/** zod schema of message metadata: the known fields are typed, callers may add JSON-serializable fields. */
export const metaSchema = z
  .object({
    sourceId: z.string().optional(),
    toolName: z.string().optional(),
    durability: z.enum(["ephemeral", "anchoring", "replayable", "non-replayable"]).optional(),
    sensitivity: z.enum(["public", "internal", "confidential", "restricted"]).optional(),
    pinned: z.boolean().optional(),
    createdAt: z.string().optional(),
  })
  .catchall(z.json());

/** zod schema of a message given to `ThreadLog.append`. */
export const messageInputSchema = z
  .object({
    id: z.string().min(1, "must be a non-empty string").optional(),
    role: z.enum(["system", "user", "assistant", "tool"]),
    parts: z.array(partSchema),
    meta: metaSchema.optional(),
  })
  .strict();

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
