/**
 * How the checkpoint wing notices that an operation needed more of a thread than a checkpoint loaded. A partial
 * log, a plan restored from a checkpoint and a checkpoint's tail report every such read here (`reportMiss`). The
 * report is kept for the operation that made it — each operation the loader runs is an `Attempt`, and the attempt
 * in force is found through the async context, so operations on one thread that overlap (a turn and a background
 * run) never see each other's misses. The report aborts the attempt's signal (a pipeline then stops at its next
 * step) and throws, which ends the operation unless code in between swallows it; either way the loader sees the
 * miss afterwards and runs the operation again on more of the thread. Nothing outside this folder catches it.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { MessageNotLoadedError } from "../errors/ledger-error.js";

/** What an attempt lacked first: a message, a group, or the checkpoint's tail (which `fetch` reads). */
export interface Miss {
  readonly message: string;
  /** Set when reading the checkpoint's tail answers it. */
  readonly fetch?: () => Promise<void>;
}

interface AttemptState {
  readonly controller: AbortController;
  missed?: Miss;
}

const current = new AsyncLocalStorage<AttemptState>();

/** How an attempt ended: its value or error, and the first miss it reported (its outcome then does not count). */
export type AttemptOutcome<T> =
  | { readonly ok: true; readonly value: T; readonly missed?: Miss }
  | { readonly ok: false; readonly error: unknown; readonly missed?: Miss };

/** Runs `work` as one attempt; `abandon` aborts at its first miss. Never throws: the outcome says how it ended. */
export async function runAttempt<T>(work: (abandon: AbortSignal) => Promise<T>): Promise<AttemptOutcome<T>> {
  const state: AttemptState = { controller: new AbortController() };
  try {
    const value = await current.run(state, () => work(state.controller.signal));
    return state.missed === undefined ? { ok: true, value } : { ok: true, value, missed: state.missed };
  } catch (error) {
    return state.missed === undefined ? { ok: false, error } : { ok: false, error, missed: state.missed };
  }
}

/** Reports a miss to the attempt in force (if any) and throws `error`. */
export function reportMiss(error: MessageNotLoadedError): never {
  const state = current.getStore();
  if (state !== undefined && state.missed === undefined) {
    state.missed =
      error.fetch === undefined ? { message: error.message } : { message: error.message, fetch: error.fetch };
    state.controller.abort(error);
  }
  throw error;
}

/** A `Projection.miss` for a partial log of `threadId`. */
export function missFor(threadId: string): (what: string, seq?: number) => never {
  return (what, seq) => reportMiss(new MessageNotLoadedError(what, { threadId }, seq));
}

/**
 * Runs `attempt`; when it missed only the checkpoint's tail, reads the tail and runs it once more (the tail read
 * answers the same question the second time). The outcome of the last run comes back, its miss included.
 */
export async function withTailRead<T>(
  attempt: (abandon: AbortSignal) => Promise<T>,
): Promise<AttemptOutcome<T>> {
  const outcome = await runAttempt(attempt);
  if (outcome.missed?.fetch === undefined) return outcome;
  await outcome.missed.fetch();
  return runAttempt(attempt);
}

/** The value of an attempt that did not miss, or its error. */
export function settle<T>(outcome: AttemptOutcome<T>): T {
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}
