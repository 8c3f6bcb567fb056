import { expect } from "vitest";
import { ValidationError } from "../../src/errors/ledger-error.js";
import type { Part } from "../../src/log/message.js";
import type { ActionKind, RecordByKind } from "../../src/plan/compaction-plan.js";

/** A text part. */
export const text = (t: string): Part => ({ type: "text", text: t });

/** A tool call part (`bash` with `{}` arguments unless told otherwise). */
export const call = (callId: string, args = "{}", name = "bash"): Part => ({
  type: "tool_call",
  callId,
  name,
  args,
});

/** A tool result part. */
export const result = (callId: string, content: string, isError?: boolean): Part =>
  isError === undefined
    ? { type: "tool_result", callId, content }
    : { type: "tool_result", callId, content, isError };

/** Runs `fn`, asserts it throws a `ValidationError` and returns it for further checks. */
export function validationError(fn: () => unknown): ValidationError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error("expected a ValidationError, nothing was thrown");
}

/** A well-formed record for each action kind. */
export const records: { readonly [K in ActionKind]: RecordByKind[K] } = {
  include: { kind: "include" },
  clear: { kind: "clear" },
  summarize: { kind: "summarize", summary: "s", summarizerId: "m", promptVersion: "v1" },
  externalize: { kind: "externalize", artifactId: "a", summary: "" },
  drop: { kind: "drop", reason: "old" },
};
