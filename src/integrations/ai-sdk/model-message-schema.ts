/**
 * The shape of the AI SDK messages the converters accept — `ModelMessage`s and the provider-level prompt messages
 * a middleware sees — checked once, at the edge. Parts may carry fields this schema does not name (a newer SDK's
 * additions pass through unread); what the converters read is typed here.
 */
import * as z from "zod";
import { ValidationError } from "../../index.js";

const nonEmpty = z.string({ error: "must be a non-empty string" }).min(1, "must be a non-empty string");
const text = z.string({ error: "must be a string" });

/** Provider options: per provider name, an object (its values are checked as JSON where they are kept). */
const providerOptions = z
  .record(
    z.string(),
    z.record(z.string(), z.unknown(), { error: "must be an object (one provider's options)" }),
    {
      error: "must be an object of objects, one per provider",
    },
  )
  .optional();

/** Bytes, a base64 or URL string, or a URL. */
const dataContent = z.union(
  [z.string(), z.instanceof(Uint8Array), z.instanceof(ArrayBuffer), z.instanceof(URL)],
  { error: "must be a string (base64 or URL), a Uint8Array, an ArrayBuffer or a URL" },
);

const textPart = z.looseObject({ type: z.literal("text"), text, providerOptions });
const reasoningPart = z.looseObject({ type: z.literal("reasoning"), text, providerOptions });
const imagePart = z.looseObject({
  type: z.literal("image"),
  image: dataContent,
  mediaType: nonEmpty.optional(),
  providerOptions,
});
const filePart = z.looseObject({
  type: z.literal("file"),
  data: dataContent,
  mediaType: nonEmpty,
  filename: z.string().optional(),
  originalUrl: z.string().optional(),
  providerOptions,
});
const toolCallPart = z.looseObject({
  type: z.literal("tool-call"),
  toolCallId: nonEmpty,
  toolName: nonEmpty,
  input: z.unknown(),
  providerExecuted: z.boolean().optional(),
  providerOptions,
});

const outputBase = { providerOptions };
const toolOutput = z.discriminatedUnion(
  "type",
  [
    z.looseObject({ type: z.literal("text"), value: text, ...outputBase }),
    z.looseObject({ type: z.literal("json"), value: z.unknown(), ...outputBase }),
    z.looseObject({ type: z.literal("error-text"), value: text, ...outputBase }),
    z.looseObject({ type: z.literal("error-json"), value: z.unknown(), ...outputBase }),
    z.looseObject({ type: z.literal("execution-denied"), reason: z.string().optional(), ...outputBase }),
    z.looseObject({
      type: z.literal("content"),
      value: z.array(z.looseObject({ type: nonEmpty }), { error: "must be an array of content parts" }),
      ...outputBase,
    }),
  ],
  {
    error: "must have type text, json, error-text, error-json, execution-denied or content",
  },
);
const toolResultPart = z.looseObject({
  type: z.literal("tool-result"),
  toolCallId: nonEmpty,
  toolName: nonEmpty,
  output: toolOutput,
  providerOptions,
});
const approvalRequest = z.looseObject({
  type: z.literal("tool-approval-request"),
  approvalId: z.string(),
  toolCallId: z.string(),
});
const approvalResponse = z.looseObject({
  type: z.literal("tool-approval-response"),
  approvalId: z.string(),
  approved: z.boolean(),
});

function partsOf<T extends [z.core.$ZodTypeDiscriminable, ...z.core.$ZodTypeDiscriminable[]]>(
  allowed: string,
  options: T,
) {
  return z.array(
    z.discriminatedUnion("type", options, {
      error: (issue) =>
        issue.code === "invalid_union" ? `a part of this message must have type ${allowed}` : undefined,
    }),
    { error: "must be a string or an array of parts" },
  );
}

/** Content as a string or a list of parts; an input that is neither is named as such. */
function stringOr<T extends z.ZodType>(parts: T) {
  return z.union([text, parts], {
    error: (issue) =>
      typeof issue.input === "string" || Array.isArray(issue.input)
        ? undefined
        : "must be a string or an array of parts",
  });
}

const userParts = partsOf("text, image or file", [textPart, imagePart, filePart]);
const assistantParts = partsOf("text, file, reasoning, tool-call, tool-result or tool-approval-request", [
  textPart,
  filePart,
  reasoningPart,
  toolCallPart,
  toolResultPart,
  approvalRequest,
]);
const toolParts = partsOf("tool-result or tool-approval-response", [toolResultPart, approvalResponse]);

/** One AI SDK message, either level. */
export const sdkMessageSchema = z.discriminatedUnion(
  "role",
  [
    z.looseObject({ role: z.literal("system"), content: text, providerOptions }),
    z.looseObject({ role: z.literal("user"), content: stringOr(userParts), providerOptions }),
    z.looseObject({ role: z.literal("assistant"), content: stringOr(assistantParts), providerOptions }),
    z.looseObject({
      role: z.literal("tool"),
      content: z.array(toolParts.element, { error: "must be an array of parts" }),
      providerOptions,
    }),
  ],
  { error: "must be system, user, assistant or tool" },
);

/** Dotted path of a zod issue below the message, e.g. `content[1].toolCallId`. */
function pathOf(path: ReadonlyArray<PropertyKey>): string {
  let out = "";
  for (const key of path)
    out += typeof key === "number" ? `[${key}]` : out === "" ? String(key) : `.${String(key)}`;
  return out;
}

/**
 * The innermost issue of a failed parse: a union of strings and arrays reports, for an array, the issue inside the
 * element that failed, so the error names the part and field rather than "invalid input" on the whole content.
 */
function innermost(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== "invalid_union" || issue.errors.length === 0) return issue;
  // The branch that got furthest (the longest path) is the one the input meant.
  let best: z.core.$ZodIssue | undefined;
  for (const branch of issue.errors) {
    for (const inner of branch) {
      if (best === undefined || inner.path.length > best.path.length) best = inner;
    }
  }
  if (best === undefined || best.path.length === 0) return issue;
  return innermost({ ...best, path: [...issue.path, ...best.path] });
}

/**
 * Checks one SDK message, throwing a `ValidationError` that names the message's index, the part and the field
 * (e.g. `content[2].toolCallId`).
 */
export function checkSdkMessage(message: unknown, index: number, what = "model message"): void {
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    throw new ValidationError(
      `invalid ${what} at index ${index}: must be an object with a role and content`,
      {
        index,
        field: "(message)",
      },
    );
  }
  const parsed = sdkMessageSchema.safeParse(message);
  if (parsed.success) return;
  const issue = innermost(parsed.error.issues[0]!);
  const field = pathOf(issue.path);
  throw new ValidationError(
    `invalid ${what} at index ${index}: ${field === "" ? "" : `${field} `}${issue.message}`,
    {
      index,
      field: field === "" ? "(message)" : field,
    },
  );
}
