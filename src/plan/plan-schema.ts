import * as z from "zod";
import { ValidationError } from "../errors/ledger-error.js";
import { canonicalJson } from "../log/canonical-json.js";
import { formatIssuePath } from "../log/message-schema.js";
import { type CompactionPlan, createPlan } from "./compaction-plan.js";

/** The class a summary or pointer record carries (the strictest of its span). */
const sensitivityField = z.enum(["public", "internal", "confidential", "restricted"]).optional();

const stringList = z.array(z.string());

const structuredSummarySchema = z
  .object({
    goals: stringList.optional(),
    decisions: stringList.optional(),
    constraints: stringList.optional(),
    openItems: stringList.optional(),
    toolOutcomes: stringList.optional(),
    artifacts: stringList.optional(),
  })
  .strict();

const recordSchemas = {
  include: z.object({ kind: z.literal("include") }).strict(),
  clear: z
    .object({
      kind: z.literal("clear"),
      clearArgs: z.boolean().optional(),
      cleared: z
        .array(
          z
            .object({
              messageId: z.string(),
              callId: z.string(),
              toolName: z.string(),
              chars: z.number().int().nonnegative(),
            })
            .strict(),
        )
        .optional(),
      excerpts: z
        .array(
          z
            .object({
              messageId: z.string().min(1),
              partIndex: z.number().int().nonnegative().optional(),
              text: z.string(),
            })
            .strict(),
        )
        .optional(),
      onlyParts: z
        .array(
          z
            .object({
              messageId: z.string().min(1),
              partIndex: z.number().int().nonnegative(),
            })
            .strict(),
        )
        .min(1, "a clear of only some parts names at least one")
        .optional(),
    })
    .strict(),
  summarize: z
    .object({
      kind: z.literal("summarize"),
      summary: z.string().min(1, "a summary must not be empty"),
      structured: structuredSummarySchema.optional(),
      summarizerId: z.string().min(1),
      promptVersion: z.string().min(1),
      spanHash: z.string().optional(),
      sensitivity: sensitivityField,
    })
    .strict(),
  externalize: z
    .object({
      kind: z.literal("externalize"),
      artifactId: z.string().min(1),
      summary: z.string(),
      sizeChars: z.number().int().nonnegative().optional(),
      tenant: z.string().min(1).optional(),
      sensitivity: sensitivityField,
    })
    .strict(),
  drop: z
    .object({ kind: z.literal("drop"), reason: z.string().min(1), marker: z.boolean().optional() })
    .strict(),
} as const;

/**
 * A span: a non-empty array of non-empty message ids. One loop checks it (a span can name 100,000 ids, and a
 * schema per element costs ~10× as much); a bad entry is named by its index, as an element schema would.
 */
const spanSchema = z.unknown().superRefine((value, ctx) => {
  if (!Array.isArray(value)) {
    ctx.addIssue({ code: "custom", message: `expected an array of message ids, got ${typeName(value)}` });
  } else if (value.length === 0) {
    ctx.addIssue({ code: "custom", message: "a span must name at least one message id" });
  } else {
    for (let i = 0; i < value.length; i++) {
      const id: unknown = value[i];
      if (typeof id === "string" && id.length > 0) continue;
      const got = typeof id === "string" ? "an empty string" : typeName(id);
      ctx.addIssue({ code: "custom", path: [i], message: `expected a non-empty message id, got ${got}` });
      return;
    }
  }
}) as unknown as z.ZodType<string[]>;

function typeName(value: unknown): string {
  if (value === null) return "null";
  return Array.isArray(value) ? "an array" : typeof value;
}

function actionSchema<K extends keyof typeof recordSchemas>(kind: K) {
  return z
    .object({
      kind: z.literal(kind),
      span: spanSchema,
      record: recordSchemas[kind],
      strategy: z.string().min(1),
      reason: z.string(),
    })
    .strict();
}

const actionUnion = z.discriminatedUnion("kind", [
  actionSchema("include"),
  actionSchema("clear"),
  actionSchema("summarize"),
  actionSchema("externalize"),
  actionSchema("drop"),
]);

const headerShape = {
  threadId: z.string().min(1),
  version: z.number().int().nonnegative(),
  basedOnSeq: z.number().int().nonnegative(),
};

/** zod schema of a plan as JSON. */
export const planSchema = z
  .object({ ...headerShape, actions: z.array(actionUnion) })
  .strict()
  .superRefine((plan, ctx) => {
    plan.actions.forEach((action, i) => {
      if (action.record.kind !== action.kind) {
        ctx.addIssue({
          code: "custom",
          path: ["actions", i, "record", "kind"],
          message: `record kind ${action.record.kind} does not match action kind ${action.kind}`,
        });
      }
    });
  });

/**
 * zod schema of one plan action, with the same checks `planSchema` applies to each of its actions: a store that
 * writes only the actions a version adds validates just those.
 */
export const planActionSchema = actionUnion.superRefine((action, ctx) => {
  if (action.record.kind !== action.kind) {
    ctx.addIssue({
      code: "custom",
      path: ["record", "kind"],
      message: `record kind ${action.record.kind} does not match action kind ${action.kind}`,
    });
  }
});

/**
 * zod schema of a plan's header: `planSchema`'s checks on everything but the actions' contents (`actions` must
 * be an array; its items are left to `planActionSchema`).
 */
export const planHeaderSchema = z.object({ ...headerShape, actions: z.array(z.unknown()) }).strict();

/** Parses plan JSON (a string or an already parsed value) into a frozen plan, or throws `ValidationError`. */
export function parsePlan(input: unknown): CompactionPlan {
  let value = input;
  if (typeof input === "string") {
    try {
      value = JSON.parse(input);
    } catch (cause) {
      throw new ValidationError(`plan is not valid JSON: ${(cause as Error).message}`, {}, { cause });
    }
  }
  const parsed = planSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const threadId = (value as { threadId?: unknown } | null)?.threadId;
    throw new ValidationError(`invalid plan: ${issue.message}`, {
      ...(typeof threadId === "string" ? { threadId } : {}),
      field:
        formatIssuePath(issue.path, issue as { code?: string; keys?: ReadonlyArray<string> }) || "(plan)",
    });
  }
  return createPlan(parsed.data as CompactionPlan);
}

/**
 * Serializes a plan to JSON with keys in canonical (sorted) order, so the text is byte-stable across
 * parse/serialize round trips; `parsePlan(serializePlan(p))` deep-equals `p`.
 */
export function serializePlan(plan: CompactionPlan, indent?: number): string {
  const canonical = canonicalJson(plan);
  return indent === undefined ? canonical : JSON.stringify(JSON.parse(canonical), null, indent);
}

export type PlanFromSchema = z.infer<typeof planSchema>;
