/**
 * The harness's answer to the model's `recall` calls: `engine.recall` with the call's arguments, sent back as the
 * call's result like any tool's output. An error the engine raises for the request (a mistyped id, bad arguments)
 * goes back as an error result the model can read, as a real harness would send it.
 */
import { type ContextEngine, LedgerError, type RecallRequest, type RecallResult } from "../src/index.js";
import type { FakeToolOutput } from "./fake-tools.js";
import { parseObject } from "./json-object.js";

/** A `recall` call as the harness answered it. */
export interface RecallAnswer {
  /** What goes into the log as the call's result. */
  readonly output: FakeToolOutput;
  /** The parsed arguments, when they were a JSON object. */
  readonly request?: Readonly<Record<string, unknown>>;
  readonly result?: RecallResult;
  /** What the engine refused the request with. */
  readonly error?: LedgerError;
}

/** Answers one `recall` call of the model on `threadId`; errors other than the engine's own are thrown. */
export async function answerRecall(
  engine: ContextEngine,
  threadId: string,
  args: string,
): Promise<RecallAnswer> {
  const request = parseObject(args);
  if (request === undefined) {
    return { output: { content: `error: arguments are not a JSON object: ${args}`, isError: true } };
  }
  try {
    // engine.recall checks the arguments itself (exactly one of artifactId and query, limit's range).
    const result = await engine.recall(threadId, request as RecallRequest);
    return { output: { content: result.content, isError: false }, request, result };
  } catch (error) {
    if (!(error instanceof LedgerError)) throw error;
    return { output: { content: `error: ${error.message}`, isError: true }, request, error };
  }
}
