import { VersionConflictError } from "../errors/ledger-error.js";

/**
 * How the engine retries a write that lost a race to another writer (a `VersionConflictError` from the log or the
 * plan store). One policy serves every retry site (appends, turns, maintenance compactions).
 *
 * The pause before retry `r` (1-based) is drawn uniformly from [0, min(maxMs, initialMs × 2^(r − 1))): AWS's
 * "full jitter". It was chosen over "equal jitter" (half the ceiling fixed) and "decorrelated jitter" (each pause
 * drawn from the previous one) because it spreads collided writers widest for the least total waiting, needs no
 * state between retries, and its bound is a plain function of `r` that a test can check exactly.
 */
export interface ConflictRetryPolicy {
  /** Retries after the first attempt (so at most `retries + 1` attempts). */
  readonly retries: number;
  /** Ceiling of the first pause, in milliseconds; 0 retries at once. */
  readonly initialMs: number;
  /** Largest ceiling of any pause, in milliseconds. */
  readonly maxMs: number;
  /** No retry starts later than this many milliseconds after the first attempt started. */
  readonly deadlineMs: number;
}

/**
 * The defaults, sized on four engines appending in tight loops to one PostgreSQL thread (the harshest case:
 * `test/engine-conflicts-postgres.test.ts`). There one writer tends to hold the floor: it reads the length right
 * after its own commit, so a writer that lost loses its next attempt too about 9 times in 10, however long it
 * paused (measured with 50 ms and 200 ms ceilings alike). Backoff cannot make that fair; many cheap retries
 * outlast it: chains of up to ~40 lost attempts were seen, and 10 retries (the old default) surfaced a few
 * conflicts per 4 × 1,000 appends. So: short pauses (a 50 ms ceiling, ~25 ms on average), up to 200 retries, and
 * the 10 s deadline as the bound a caller actually waits. At ~0.9 a loss, a chain of 150 lost attempts (about what
 * fits in 10 s) has a chance near 1e-7.
 */
export const DEFAULT_CONFLICT_RETRY: ConflictRetryPolicy = Object.freeze({
  retries: 200,
  initialMs: 2,
  maxMs: 50,
  deadlineMs: 10_000,
});

/** What the policy reads the time and chance from, and how it waits (injectable for tests). */
export interface RetryEnvironment {
  /** Milliseconds on any monotonic-enough clock. */
  now(): number;
  /** A number in [0, 1). */
  random(): number;
  sleep(ms: number): Promise<void>;
}

/** The real clock, `Math.random` and `setTimeout`. */
export const SYSTEM_RETRY_ENVIRONMENT: RetryEnvironment = Object.freeze({
  now: () => performance.now(),
  random: Math.random,
  sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
});

/** The ceiling of the pause before retry `retry` (1-based): `min(maxMs, initialMs × 2^(retry − 1))`. */
export function backoffCeiling(policy: ConflictRetryPolicy, retry: number): number {
  // Past 2^60 the product is beyond any maxMs the options allow; capping the exponent avoids Infinity × 0.
  return Math.min(policy.maxMs, policy.initialMs * 2 ** Math.min(retry - 1, 60));
}

/**
 * The pause before retry `retry`: uniform in [0, ceiling) given `random()` in [0, 1) (full jitter; float rounding
 * may give the ceiling itself).
 */
export function backoffDelay(policy: ConflictRetryPolicy, retry: number, random: () => number): number {
  return random() * backoffCeiling(policy, retry);
}

/** One retry about to happen. */
export interface RetryNotice {
  /** The attempt that lost (1 for the first). */
  readonly attempt: number;
  /** The pause before the next attempt, in milliseconds. */
  readonly delayMs: number;
  readonly error: VersionConflictError;
}

/**
 * Runs `attempt(n)` (n = 1, 2, …) until it does not throw a `VersionConflictError`. After a conflict it calls
 * `onRetry`, pauses, and tries again, unless the retries are spent or the pause would end past the deadline: then
 * the conflict surfaces as a `VersionConflictError` whose message and `attempts` say how many attempts lost.
 * Any other error is rethrown at once.
 */
export async function retryOnConflict<T>(
  policy: ConflictRetryPolicy,
  env: RetryEnvironment,
  attempt: (n: number) => Promise<T>,
  onRetry?: (notice: RetryNotice) => void,
): Promise<T> {
  const started = env.now();
  for (let n = 1; ; n++) {
    let conflict: VersionConflictError;
    try {
      return await attempt(n);
    } catch (error) {
      if (!(error instanceof VersionConflictError)) throw error;
      conflict = error;
    }
    const delayMs = n > policy.retries ? 0 : backoffDelay(policy, n, env.random);
    const elapsed = env.now() - started;
    if (n > policy.retries || elapsed + delayMs > policy.deadlineMs) {
      throw exhausted(conflict, n, elapsed, n > policy.retries ? "retries" : "deadline");
    }
    onRetry?.({ attempt: n, delayMs, error: conflict });
    if (delayMs > 0) await env.sleep(delayMs);
  }
}

function exhausted(
  last: VersionConflictError,
  attempts: number,
  elapsedMs: number,
  spent: "retries" | "deadline",
): VersionConflictError {
  const why = spent === "retries" ? "no retries left" : "the retry deadline would pass";
  return last.afterAttempts(attempts, `${why}, ${Math.round(elapsedMs)} ms after the first`);
}
