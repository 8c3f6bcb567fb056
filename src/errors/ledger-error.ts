/**
 * The error families of context-ledger. Every error carries a stable `code`, an optional `cause`, and a message
 * that says what was wrong, where (thread, message id, line, field) and what to do about it.
 */

/** Stable machine-readable error codes, one per failure family. */
export type LedgerErrorCode =
  | "VALIDATION"
  | "PLAN_INVALID"
  | "PLAN_CONFLICT"
  | "VERSION_CONFLICT"
  | "BUDGET_INFEASIBLE"
  | "STORE_UNAVAILABLE"
  | "SUMMARIZER_FAILED"
  | "RENDER_INVALID"
  | "ACCESS_DENIED"
  | "NOT_FOUND"
  | "NOT_LOADED"
  | "MISSING_DEPENDENCY"
  | "CHAIN_BROKEN";

/** Where an error happened; every field is optional and only the known ones are filled in. */
export interface ErrorLocation {
  readonly threadId?: string;
  readonly messageId?: string;
  /** 0-based index of the message inside the batch being appended. */
  readonly index?: number;
  /** 1-based line number in an imported file. */
  readonly line?: number;
  /** Dotted path of the offending field, e.g. `parts[1].callId`. */
  readonly field?: string;
}

function describeLocation(where: ErrorLocation): string {
  const bits: string[] = [];
  if (where.threadId !== undefined) bits.push(`thread ${JSON.stringify(where.threadId)}`);
  if (where.line !== undefined) bits.push(`line ${where.line}`);
  if (where.index !== undefined) bits.push(`batch index ${where.index}`);
  if (where.messageId !== undefined) bits.push(`message ${JSON.stringify(where.messageId)}`);
  if (where.field !== undefined) bits.push(`field ${where.field}`);
  return bits.join(", ");
}

/** Base class of every error thrown by context-ledger. */
export class LedgerError extends Error {
  readonly code: LedgerErrorCode;
  readonly where: ErrorLocation;

  constructor(
    code: LedgerErrorCode,
    problem: string,
    where: ErrorLocation = {},
    options?: { cause?: unknown },
  ) {
    const location = describeLocation(where);
    super(location ? `${problem} (at ${location})` : problem, options);
    this.name = new.target.name;
    this.code = code;
    this.where = where;
  }
}

/** Input from outside (appended messages, plan JSON, transcript lines, config) is malformed. */
export class ValidationError extends LedgerError {
  constructor(problem: string, where: ErrorLocation = {}, options?: { cause?: unknown }) {
    super("VALIDATION", problem, where, options);
  }
}

/** A compaction plan is inconsistent with the log it is applied to (unknown ids, orphaning spans, ...). */
export class PlanValidationError extends LedgerError {
  /** Every problem found, not only the first. */
  readonly problems: ReadonlyArray<string>;
  /** The version of the refused plan, when the check knew it (a store's commit names it). */
  readonly planVersion: number | undefined;
  constructor(problems: ReadonlyArray<string>, where: ErrorLocation = {}, planVersion?: number) {
    super(
      "PLAN_INVALID",
      `invalid compaction plan${planVersion === undefined ? "" : ` version ${planVersion}`}: ${problems.slice(0, 5).join("; ")}${problems.length > 5 ? ` (+${problems.length - 5} more)` : ""}`,
      where,
    );
    this.problems = problems;
    this.planVersion = planVersion;
  }
}

/** A writer committed against a stale version. Reload and retry. */
export class VersionConflictError extends LedgerError {
  /** What was being written (e.g. `append to thread "t"`). */
  readonly what: string;
  readonly expected: number;
  readonly actual: number;
  /** Set when the engine gave up retrying: how many attempts lost (the first included). */
  readonly attempts: number | undefined;
  constructor(
    what: string,
    expected: number,
    actual: number,
    where: ErrorLocation = {},
    options?: { attempts?: number; detail?: string; cause?: unknown },
  ) {
    const gaveUp =
      options?.attempts === undefined
        ? "reload and retry"
        : `gave up after ${options.attempts} attempt${options.attempts === 1 ? "" : "s"}` +
          (options.detail === undefined ? "" : ` (${options.detail})`);
    super(
      "VERSION_CONFLICT",
      `${what}: expected version ${expected} but the store holds ${actual}; ${gaveUp}`,
      where,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.what = what;
    this.expected = expected;
    this.actual = actual;
    this.attempts = options?.attempts;
  }

  /** This conflict as the last of `attempts` lost attempts (the one the engine surfaces when it stops retrying). */
  afterAttempts(attempts: number, detail?: string): VersionConflictError {
    return new VersionConflictError(this.what, this.expected, this.actual, this.where, {
      attempts,
      ...(detail === undefined ? {} : { detail }),
      cause: this,
    });
  }
}

/** Nothing can make the request fit: the pinned content alone exceeds the budget. */
export class BudgetInfeasibleError extends LedgerError {
  /** What could not fit, in words (the message adds the figures). */
  readonly problem: string;
  readonly required: number;
  readonly available: number;
  constructor(
    problem: string,
    required: number,
    available: number,
    where: ErrorLocation = {},
    options?: { cause?: unknown },
  ) {
    super(
      "BUDGET_INFEASIBLE",
      `${problem}: needs ${required} tokens but only ${available} are available (over by ${required - available})`,
      where,
      options,
    );
    this.problem = problem;
    this.required = required;
    this.available = available;
  }
}

/** A rendered request breaks a provider's rules; this is a bug in a plan or adapter, never sent. */
export class RenderValidationError extends LedgerError {
  readonly problems: ReadonlyArray<string>;
  constructor(provider: string, problems: ReadonlyArray<string>, where: ErrorLocation = {}) {
    super("RENDER_INVALID", `request invalid for ${provider}: ${problems.slice(0, 5).join("; ")}`, where);
    this.problems = problems;
  }
}

/** Why a summarizer produced nothing usable. */
export type SummarizerFailure =
  | "timeout"
  | "rate_limited"
  | "server_error"
  | "bad_request"
  | "empty"
  | "malformed"
  | "aborted"
  | "failed";

/** A summarizer failed or returned an empty or malformed summary; the plan stays as it was. */
export class SummarizerError extends LedgerError {
  readonly summarizerId: string;
  readonly reason: SummarizerFailure;
  constructor(
    summarizerId: string,
    reason: SummarizerFailure,
    problem: string,
    where: ErrorLocation = {},
    options?: { cause?: unknown },
  ) {
    super("SUMMARIZER_FAILED", `summarizer ${summarizerId} failed (${reason}): ${problem}`, where, options);
    this.summarizerId = summarizerId;
    this.reason = reason;
  }
}

/** A store could not be reached or answered with an error; nothing was written. */
export class StoreUnavailableError extends LedgerError {
  constructor(problem: string, where: ErrorLocation = {}, options?: { cause?: unknown }) {
    super("STORE_UNAVAILABLE", problem, where, options);
  }
}

/** The caller's security context may not read this content (another tenant, or too sensitive). */
export class AccessDeniedError extends LedgerError {
  constructor(problem: string, where: ErrorLocation = {}) {
    super("ACCESS_DENIED", problem, where);
  }
}

/**
 * The thread belongs to another tenant than the caller's (an engine, CLI or store acting for one tenant). The
 * message names the thread and never the tenant that owns it; nothing was read or written.
 */
export class ThreadAccessError extends AccessDeniedError {
  constructor(threadId: string, operation: string) {
    super(
      `${operation} refused: the thread belongs to another tenant than this caller's; use an engine or CLI (--tenant) of the thread's own tenant`,
      { threadId },
    );
  }
}

/**
 * Content above the reader's clearance was asked for where a placeholder will not do: an engine with
 * `aboveClearance: "refuse"`, or the replay of a call that carried content the reader may not see.
 */
export class ClearanceError extends AccessDeniedError {}

/** A thread, plan version, artifact or model call that does not exist (or has expired). */
export class NotFoundError extends LedgerError {
  constructor(problem: string, where: ErrorLocation = {}) {
    super("NOT_FOUND", problem, where);
  }
}

/**
 * A projected log (one restored from a thread checkpoint, holding only the messages its plan can render) was
 * asked for a message it does not hold, or for the checkpoint's tail before it was read. The engine answers it
 * by loading again (with the tail, or the whole thread); elsewhere it means the caller read more than the
 * projection was made for.
 */
export class MessageNotLoadedError extends LedgerError {
  /** The seq asked for, when the question named one. */
  readonly seq: number | undefined;
  /**
   * Set when what was missing is the checkpoint's tail and the store may still hold it: awaiting it reads the
   * tail into the projection that threw, so that the same question then has its answer.
   */
  readonly fetch: (() => Promise<void>) | undefined;

  /** `subject` says what was asked for, e.g. "message at seq 12" or "group 7". */
  constructor(subject: string, where: ErrorLocation = {}, seq?: number, fetch?: () => Promise<void>) {
    super(
      "NOT_LOADED",
      `${subject} is not loaded: this log was projected from a checkpoint and holds only what its plan can render`,
      where,
    );
    this.seq = seq;
    this.fetch = fetch;
  }
}

/**
 * A part of a checkpoint read only when first asked for (its tail, a retired action, a deferred field) is
 * unreadable or does not fit the checkpoint. Nothing is read from it: like any `MessageNotLoadedError` without
 * `fetch`, the operation runs again on the whole log (a checkpoint only ever saves work).
 */
export class CheckpointUnfitError extends MessageNotLoadedError {
  constructor(problem: string, where: ErrorLocation = {}) {
    super("the checkpoint", where);
    const location = describeLocation(where);
    this.message = `checkpoint unusable: ${problem}${location ? ` (at ${location})` : ""}; the whole log is read instead`;
  }
}

/**
 * A write would extend a thread's ledger chain (docs/decisions/0018) from a row that has lost its chain hash: a
 * row without a hash after chained rows (or a missing row) is never written before the chain, so it was tampered
 * with, and chaining it now would hide that under hashes of its current content. Nothing was written.
 */
export class ChainBrokenError extends LedgerError {
  /** Which chain: the thread's log rows or its plan versions. */
  readonly chain: "log" | "plan";
  /** The first seq (log) or plan version that breaks the chain. */
  readonly position: number;
  constructor(threadId: string, chain: "log" | "plan", position: number, problem: string) {
    const row = chain === "log" ? `seq ${position}` : `plan version ${position}`;
    super(
      "CHAIN_BROKEN",
      `${chain === "log" ? "append" : "plan commit"} refused: the thread's ${chain} chain is broken at ${row}: ${problem}; nothing was written. Run \`context-ledger replay --verify\` (or \`engine.replay\`) to see what changed, and restore the rows from a backup`,
      { threadId },
    );
    this.chain = chain;
    this.position = position;
  }
}

/**
 * An optional part of the library needs a package that is not installed (an optional peer dependency, such as
 * `@opentelemetry/api` for `context-ledger/otel`). The message says what to install.
 */
export class MissingDependencyError extends LedgerError {
  /** The npm package to install. */
  readonly packageName: string;

  constructor(packageName: string, neededBy: string, options?: { cause?: unknown }) {
    super(
      "MISSING_DEPENDENCY",
      `${neededBy} needs the package ${packageName}, which is not installed, or too old to have what it needs (it is an optional peer dependency of context-ledger): npm install ${packageName}`,
      {},
      options,
    );
    this.packageName = packageName;
  }
}
