import type * as z from "zod";
import { ValidationError } from "../errors/ledger-error.js";
import { formatIssuePath } from "../log/message-schema.js";

/**
 * Validates a strategy's JSON-shaped options with its zod schema. A bad value raises a `ValidationError` that
 * names the strategy and the field (an unknown key, such as a typo, is named itself), so a config file's
 * mistake is found without reading code.
 */
export function parseOptions<S extends z.ZodType>(
  schema: S,
  value: unknown,
  strategy: string,
  prefix = "",
): z.output<S> {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const path = formatIssuePath(issue.path, issue as { code?: string; keys?: ReadonlyArray<string> });
  const field = prefix === "" ? path : path === "" ? prefix : `${prefix}.${path}`;
  throw new ValidationError(
    `invalid ${strategy} option${field === "" ? "" : ` ${field}`}: ${issue.message}`,
    field === "" ? {} : { field },
    { cause: parsed.error },
  );
}
