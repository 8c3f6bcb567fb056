/**
 * A model's answer: validating its JSON, turning it into a summary within budget, and the deadline of the call.
 */
import * as z from "zod";
import { type ErrorLocation, SummarizerError } from "../../errors/ledger-error.js";
import { deepFreeze } from "../../log/deep-freeze.js";
import type { SummaryRequest, SummaryResult } from "../summarizer.js";
import {
  fitSummary,
  formatSummary,
  normalizeItem,
  SUMMARY_FIELDS,
  type SummaryField,
  shorten,
} from "./summary-format.js";

const itemsSchema = z
  .array(z.string())
  .nullish()
  .transform((items) => (items ?? []).map(normalizeItem).filter((item) => item !== ""));

// Unknown keys are ignored (models like to add a "summary" key); a null field counts as empty.
const outputSchema = z.object({
  goals: itemsSchema,
  decisions: itemsSchema,
  constraints: itemsSchema,
  openItems: itemsSchema,
  toolOutcomes: itemsSchema,
  artifacts: itemsSchema,
});

const FENCE = /^```[a-zA-Z]*[ \t]*\r?\n([\s\S]*?)\r?\n?```$/;

/**
 * Validates a model's answer: one JSON object with the six string-array fields, optionally inside a ```json
 * fence. Throws `SummarizerError` ("empty" or "malformed"); never turns other text into a summary.
 */
export function parseSummaryOutput(
  summarizerId: string,
  raw: string | null | undefined,
  where: ErrorLocation = {},
): SummaryResult {
  const trimmed = (raw ?? "").trim();
  if (trimmed === "")
    throw new SummarizerError(summarizerId, "empty", "the model answered with no text", where);
  const body = (FENCE.exec(trimmed)?.[1] ?? trimmed).trim();
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    throw new SummarizerError(summarizerId, "malformed", `the answer is not JSON: ${preview(body)}`, where, {
      cause: error,
    });
  }
  const parsed = outputSchema.safeParse(json);
  if (!parsed.success) {
    const issue = describeIssue(parsed.error.issues[0]);
    throw new SummarizerError(summarizerId, "malformed", `the answer has the wrong shape: ${issue}`, where);
  }
  const structured: { [F in SummaryField]?: string[] } = {};
  for (const field of SUMMARY_FIELDS)
    if (parsed.data[field].length > 0) structured[field] = parsed.data[field];
  if (Object.keys(structured).length === 0) {
    throw new SummarizerError(summarizerId, "malformed", "every summary field of the answer is empty", where);
  }
  return deepFreeze({ text: formatSummary(structured), structured });
}

function describeIssue(issue: z.core.$ZodIssue | undefined): string {
  if (issue === undefined) return "unknown problem";
  const path = issue.path.map(String).join(".");
  return path === "" ? issue.message : `${path}: ${issue.message}`;
}

function preview(text: string): string {
  return JSON.stringify(shorten(text, 80));
}

/**
 * Runs one model call under a total deadline (which also bounds an SDK's own retries) and the caller's signal;
 * an abort becomes reason "aborted", the deadline "timeout", and anything else goes through `classify`.
 */
export async function callWithDeadline<T>(
  summarizerId: string,
  request: { readonly threadId: string; readonly signal?: AbortSignal },
  timeoutMs: number,
  call: (signal: AbortSignal) => Promise<T>,
  classify: (error: unknown) => SummarizerError,
): Promise<T> {
  const where = { threadId: request.threadId };
  const aborted = (cause?: unknown) =>
    new SummarizerError(summarizerId, "aborted", "the caller aborted the request", where, { cause });
  // A function, not a narrowed property read: the signal can flip while the call is in flight.
  const callerAborted = () => request.signal?.aborted === true;
  if (callerAborted()) throw aborted(request.signal?.reason);
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const onAbort = () => controller.abort();
  request.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    return await call(controller.signal);
  } catch (error) {
    if (callerAborted()) throw aborted(error);
    if (timedOut) {
      const problem = `no answer within ${timeoutMs} ms (timeoutMs)`;
      throw new SummarizerError(summarizerId, "timeout", problem, where, { cause: error });
    }
    throw error instanceof SummarizerError ? error : classify(error);
  } finally {
    clearTimeout(timer);
    request.signal?.removeEventListener("abort", onAbort);
  }
}

/** How a model's answer came back. */
export interface AnswerContext {
  /** The answer stopped at the output token limit. */
  readonly cut: boolean;
  readonly request: SummaryRequest;
  readonly countTokens?: ((text: string) => number) | undefined;
}

/** A model's answer as a usable summary within `maxTokens`, or `SummarizerError`; never the answer's raw text. */
export function summaryFromAnswer(
  summarizerId: string,
  answer: string | null | undefined,
  context: AnswerContext,
): SummaryResult {
  const where = { threadId: context.request.threadId };
  let parsed: SummaryResult;
  try {
    parsed = parseSummaryOutput(summarizerId, answer, where);
  } catch (error) {
    if (!context.cut || !(error instanceof SummarizerError)) throw error;
    const problem = `the answer was cut at the output token limit and is unusable (${error.message})`;
    throw new SummarizerError(summarizerId, error.reason, problem, where, { cause: error });
  }
  const countTokens = context.countTokens;
  const fitted = fitSummary(parsed.structured, context.request.maxTokens, countTokens ? { countTokens } : {});
  if (fitted === undefined) {
    const problem = `not even one shortened item fits in maxTokens ${context.request.maxTokens}`;
    throw new SummarizerError(summarizerId, "failed", problem, where);
  }
  return deepFreeze({ text: formatSummary(fitted), structured: fitted });
}
