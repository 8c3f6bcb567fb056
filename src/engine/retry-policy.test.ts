import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { seeded } from "../../test/support/seeded.js";
import { ValidationError, VersionConflictError } from "../errors/ledger-error.js";
import {
  backoffCeiling,
  backoffDelay,
  type ConflictRetryPolicy,
  DEFAULT_CONFLICT_RETRY,
  type RetryEnvironment,
  type RetryNotice,
  retryOnConflict,
} from "./retry-policy.js";

/** A fake clock that only moves when the policy sleeps (plus `workMs` per attempt), recording the sleeps. */
function fakeEnvironment(random: () => number, workMs = 0) {
  let clock = 0;
  const sleeps: number[] = [];
  const env: RetryEnvironment = {
    now: () => clock,
    random,
    sleep: async (ms) => {
      sleeps.push(ms);
      clock += ms;
    },
  };
  return { env, sleeps, work: () => (clock += workMs), at: () => clock };
}

/**
 * How many attempts `retryOnConflict` makes against an attempt that always loses, worked out by hand: each takes
 * `workMs`, then the pause drawn for it; the one whose pause would end past the deadline is the last.
 */
function attemptsWithin(policy: ConflictRetryPolicy, random: () => number, workMs: number): number {
  let clock = 0;
  for (let n = 1; n <= policy.retries; n++) {
    clock += workMs;
    const pause = backoffDelay(policy, n, random);
    if (clock + pause > policy.deadlineMs) return n;
    clock += pause;
  }
  return policy.retries + 1;
}

const conflict = (n: number) => new VersionConflictError(`append to thread "t"`, n, n + 1, { threadId: "t" });

/** An attempt that loses `losses` times, then returns the attempt number. */
function losing(losses: number, onAttempt?: () => void) {
  let calls = 0;
  const attempt = async (n: number) => {
    calls++;
    onAttempt?.();
    if (n <= losses) throw conflict(n);
    return n;
  };
  return { attempt, calls: () => calls };
}

const policyArb = fc.record({
  retries: fc.integer({ min: 0, max: 200 }),
  initialMs: fc.double({ min: 0, max: 10_000, noNaN: true }),
  maxMs: fc.double({ min: 0, max: 60_000, noNaN: true }),
  deadlineMs: fc.double({ min: 0, max: 3_600_000, noNaN: true }),
});

describe("backoff delays (full jitter)", () => {
  it("the ceiling doubles from initialMs, never passes maxMs and never falls", () => {
    fc.assert(
      fc.property(policyArb, fc.integer({ min: 1, max: 2_000 }), (policy, retry) => {
        const ceiling = backoffCeiling(policy, retry);
        expect(ceiling).toBeGreaterThanOrEqual(0);
        expect(ceiling).toBeLessThanOrEqual(policy.maxMs);
        expect(Number.isFinite(ceiling)).toBe(true);
        expect(backoffCeiling(policy, retry + 1)).toBeGreaterThanOrEqual(ceiling);
        if (retry <= 30) expect(ceiling).toBe(Math.min(policy.maxMs, policy.initialMs * 2 ** (retry - 1)));
      }),
    );
  });

  it("every delay lies in [0, ceiling): random 0 gives 0, random just below 1 gives just below the ceiling", () => {
    fc.assert(
      fc.property(
        policyArb,
        fc.integer({ min: 1, max: 200 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (policy, retry, r) => {
          const delay = backoffDelay(policy, retry, () => r);
          const ceiling = backoffCeiling(policy, retry);
          expect(delay).toBeGreaterThanOrEqual(0);
          // Below the ceiling but for float rounding (a ceiling times 0.99…9 may round to the ceiling).
          expect(delay).toBeLessThanOrEqual(ceiling);
          if (ceiling >= 1e-9 && r < 0.999) expect(delay).toBeLessThan(ceiling);
          if (ceiling === 0) expect(delay).toBe(0);
        },
      ),
    );
    const policy = { ...DEFAULT_CONFLICT_RETRY, initialMs: 10, maxMs: 1_000 };
    expect(backoffDelay(policy, 3, () => 0)).toBe(0);
    expect(backoffDelay(policy, 3, () => 0.5)).toBe(20);
    expect(backoffDelay(policy, 20, () => 0.999)).toBeCloseTo(999);
  });

  it("spreads delays over the whole range (jitter is not a constant)", () => {
    const random = seeded(7);
    const policy = { ...DEFAULT_CONFLICT_RETRY, initialMs: 100, maxMs: 100 };
    const delays = Array.from({ length: 1_000 }, () => backoffDelay(policy, 1, random));
    expect(Math.min(...delays)).toBeLessThan(10);
    expect(Math.max(...delays)).toBeGreaterThan(90);
    const mean = delays.reduce((a, b) => a + b, 0) / delays.length;
    expect(mean).toBeGreaterThan(45);
    expect(mean).toBeLessThan(55);
  });
});

describe("retryOnConflict", () => {
  const policy: ConflictRetryPolicy = { retries: 5, initialMs: 10, maxMs: 40, deadlineMs: 60_000 };

  it("retries a lost attempt after the jittered pause and returns the first attempt that wins", async () => {
    const { env, sleeps } = fakeEnvironment(() => 0.5);
    const notices: RetryNotice[] = [];
    const { attempt, calls } = losing(3);
    await expect(retryOnConflict(policy, env, attempt, (n) => notices.push(n))).resolves.toBe(4);
    expect(calls()).toBe(4);
    expect(sleeps).toEqual([5, 10, 20]);
    expect(notices.map((n) => [n.attempt, n.delayMs])).toEqual([
      [1, 5],
      [2, 10],
      [3, 20],
    ]);
    expect(notices[2]!.error.expected).toBe(3);
  });

  it("surfaces the last conflict after the retries, naming the attempts", async () => {
    const { env, sleeps } = fakeEnvironment(() => 0.25);
    const { attempt, calls } = losing(100);
    const error = await retryOnConflict(policy, env, attempt).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VersionConflictError);
    const surfaced = error as VersionConflictError;
    expect(calls()).toBe(6);
    expect(sleeps).toHaveLength(5);
    expect(surfaced.attempts).toBe(6);
    expect(surfaced.expected).toBe(6);
    expect(surfaced.where).toEqual({ threadId: "t" });
    expect(surfaced.message).toMatch(/gave up after 6 attempts \(no retries left/);
    expect(surfaced.cause).toBeInstanceOf(VersionConflictError);
  });

  it("with no retries allowed the first conflict surfaces at once", async () => {
    const { env, sleeps } = fakeEnvironment(() => 0.5);
    const error = await retryOnConflict({ ...policy, retries: 0 }, env, losing(1).attempt).catch((e) => e);
    expect((error as VersionConflictError).attempts).toBe(1);
    expect((error as VersionConflictError).message).toMatch(/gave up after 1 attempt \(/);
    expect(sleeps).toEqual([]);
  });

  it("rethrows any other error at once, without retrying", async () => {
    const { env } = fakeEnvironment(() => 0.5);
    let calls = 0;
    const bad = new ValidationError("bad batch");
    const attempt = async () => {
      calls++;
      throw bad;
    };
    await expect(retryOnConflict(policy, env, attempt)).rejects.toBe(bad);
    expect(calls).toBe(1);
  });

  it("starts no attempt past the deadline, whatever the retry count allows", () => {
    return fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 2 ** 31 }),
        fc.integer({ min: 0, max: 500 }),
        fc.integer({ min: 0, max: 30 }),
        async (seed, deadlineMs, workMs) => {
          const { env, work, at } = fakeEnvironment(seeded(seed), workMs);
          const starts: number[] = [];
          const { attempt } = losing(Number.MAX_SAFE_INTEGER, () => {
            starts.push(at());
            work();
          });
          const bounded = { retries: 1_000, initialMs: 4, maxMs: 64, deadlineMs };
          const error = await retryOnConflict(bounded, env, attempt).catch((e: unknown) => e);
          expect(error).toBeInstanceOf(VersionConflictError);
          expect(Math.max(...starts)).toBeLessThanOrEqual(deadlineMs);
          expect((error as VersionConflictError).attempts).toBe(starts.length);
          // The same seed replayed by hand: attempts go on while the next one would start by the deadline, and
          // stop at the first whose pause would end past it (long before the 1,001 attempts the count allows).
          expect(starts.length).toBe(attemptsWithin(bounded, seeded(seed), workMs));
          expect(starts.length).toBeLessThan(bounded.retries + 1);
          expect((error as VersionConflictError).message).toMatch(/the retry deadline would pass/);
        },
      ),
      { numRuns: 50 },
    );
  });

  it("stops at the deadline on a fixed schedule: pauses 2, 4, 8, 16, 32, 32 ms fit 100 ms, the next does not", async () => {
    const { env, sleeps } = fakeEnvironment(() => 0.5);
    const { attempt, calls } = losing(Number.MAX_SAFE_INTEGER);
    const policy = { retries: 1_000, initialMs: 4, maxMs: 64, deadlineMs: 100 };
    const error = await retryOnConflict(policy, env, attempt).catch((e: unknown) => e);
    expect(sleeps).toEqual([2, 4, 8, 16, 32, 32]);
    expect(calls()).toBe(7);
    expect((error as VersionConflictError).message).toMatch(
      /gave up after 7 attempts \(the retry deadline would pass, 94 ms/,
    );
  });

  it("is deterministic for a seeded random: the same seed, the same pauses", async () => {
    const run = async (seed: number) => {
      const { env, sleeps } = fakeEnvironment(seeded(seed));
      await retryOnConflict(DEFAULT_CONFLICT_RETRY, env, losing(20).attempt);
      return sleeps;
    };
    const a = await run(42);
    expect(a).toHaveLength(20);
    expect(await run(42)).toEqual(a);
    expect(await run(43)).not.toEqual(a);
    a.forEach((ms, i) => {
      expect(ms).toBeLessThan(backoffCeiling(DEFAULT_CONFLICT_RETRY, i + 1));
    });
  });
});
