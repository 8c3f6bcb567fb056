/**
 * What the framework wings check of the options they are made with: the options every wing shares (engine,
 * format, model, budget, onTurn) and one way to refuse bad ones — an unknown key (`budjet`) or a wrong type fails
 * when the helper is made, not at the first model call, with a `ValidationError` naming the field.
 */
import * as z from "zod";
import { type ContextEngine, type PreparedTurn, ValidationError } from "../index.js";

const FORMATS = ["openai", "responses", "anthropic"] as const;

/** The engine methods a wing calls. */
const ENGINE_METHODS = ["append", "prepareTurn", "locateMessages"] as const;

function isEngine(value: unknown): value is ContextEngine {
  const engine = value as Partial<Record<string, unknown>> | null;
  return (
    typeof engine === "object" &&
    engine !== null &&
    ENGINE_METHODS.every((m) => typeof engine[m] === "function")
  );
}

/** A non-empty string option. */
export const nonEmptyString = z
  .string({ error: "must be a non-empty string" })
  .min(1, "must be a non-empty string");

/** A budget as `prepareTurn` takes it: a token ceiling, or an object the engine checks field by field. */
const budget = z.union([z.number().int().positive(), z.looseObject({})], {
  error: "must be a positive whole number of tokens or a budget object",
});

/** The options every wing takes. */
export const sharedOptionShapes = {
  engine: z.custom<ContextEngine>(isEngine, {
    error: "must be a context engine (createContextEngine)",
  }),
  format: z.enum(FORMATS, { error: `must be one of ${FORMATS.join(", ")}` }).optional(),
  budget: budget.optional(),
  model: nonEmptyString.optional(),
  onTurn: z
    .custom<(turn: PreparedTurn) => void>((v) => typeof v === "function", "must be a function")
    .optional(),
};

/**
 * Checks a helper's options against the shared shapes and `extra` (unknown keys refused), naming the helper and
 * the field in the `ValidationError`; returns the options unchanged.
 */
export function checkWingOptions<T>(helper: string, options: T, extra: z.core.$ZodLooseShape): T {
  if (typeof options !== "object" || options === null) {
    throw new ValidationError(`${helper} takes an options object`, { field: "options" });
  }
  const parsed = z.strictObject({ ...sharedOptionShapes, ...extra }).safeParse(options);
  if (parsed.success) return options;
  const issue = parsed.error.issues[0]!;
  const key = issue.code === "unrecognized_keys" ? issue.keys[0] : undefined;
  const field = key ?? issue.path.map(String).join(".");
  const problem = key === undefined ? issue.message : "is not an option";
  throw new ValidationError(`${helper} option ${field === "" ? "" : `${field} `}${problem}`.trim(), {
    field: field === "" ? "options" : field,
  });
}
