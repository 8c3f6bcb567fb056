import { LedgerError, NotFoundError, StoreUnavailableError } from "../errors/ledger-error.js";

/** The error raised when token counts name a seq the thread does not hold. */
export function unknownSeqError(threadId: string, seq: number): NotFoundError {
  return new NotFoundError(`thread ${JSON.stringify(threadId)} holds no message at seq ${seq}`, {
    threadId,
    field: "seq",
  });
}

/**
 * Runs a backend operation and turns driver failures into `StoreUnavailableError` (naming the backend, the
 * operation and the thread), while the library's own errors pass through unchanged.
 */
export async function guarded<T>(
  backend: string,
  operation: string,
  threadId: string | undefined,
  run: () => Promise<T> | T,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof LedgerError) throw error;
    const detail = error instanceof Error ? error.message : String(error);
    throw new StoreUnavailableError(
      `${backend} store failed during ${operation}: ${detail} (check that the database is reachable and retry)`,
      threadId === undefined ? {} : { threadId },
      { cause: error },
    );
  }
}
