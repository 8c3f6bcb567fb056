import type { EngineEventType, EngineListener, EngineOperation } from "./engine-events.js";

/** Durations of one operation, in milliseconds. */
export interface DurationStats {
  readonly count: number;
  readonly totalMs: number;
  readonly maxMs: number;
  readonly meanMs: number;
}

/** What a metrics collector has seen so far. */
export interface MetricsSnapshot {
  /** Events seen, by type. */
  readonly events: Readonly<Partial<Record<EngineEventType, number>>>;
  /** Messages newly cleared, summarized, externalized and dropped. */
  readonly messages: Readonly<{ cleared: number; summarized: number; externalized: number; dropped: number }>;
  /** Tokens freed by committed plans (history tokens before minus after). */
  readonly tokensFreed: number;
  readonly commits: number;
  readonly versionConflicts: number;
  /** Conflicts the engine retried (`conflict_retry` events), and the milliseconds it paused before them in all. */
  readonly conflictRetries: number;
  readonly conflictRetryDelayMs: number;
  readonly errors: number;
  /** Tokens of the requests returned by `prepareTurn`. */
  readonly requestTokens: number;
  /** Completed operations, with their durations. */
  readonly durations: Readonly<Partial<Record<EngineOperation, DurationStats>>>;
  /** Background jobs: queued, attempts started, and how they ended (`failed`: for good, `retried`: to be retried). */
  readonly jobs: Readonly<JobTotals>;
  /** The queue's depth as last counted (`job_queue_depth`, e.g. by `engine.pendingJobs()`), if ever. */
  readonly jobDepth?: Readonly<{ queued: number; running: number; failed: number }>;
}

/** Counts of `job_*` events. */
export interface JobTotals {
  queued: number;
  started: number;
  committed: number;
  discarded: number;
  failed: number;
  retried: number;
}

/** A listener that counts engine events, plus a snapshot of the totals (of all threads, or of one). */
export interface MetricsCollector {
  readonly listener: EngineListener;
  /** The totals of every thread, or of `threadId` (empty totals for a thread not seen). */
  snapshot(threadId?: string): MetricsSnapshot;
  /** The threads seen, most recently active last (at most `maxThreads`; the least recent are forgotten). */
  threads(): ReadonlyArray<string>;
  reset(): void;
}

interface Totals {
  events: Partial<Record<EngineEventType, number>>;
  messages: { cleared: number; summarized: number; externalized: number; dropped: number };
  tokensFreed: number;
  requestTokens: number;
  retryDelayMs: number;
  durations: Partial<Record<EngineOperation, { count: number; totalMs: number; maxMs: number }>>;
  jobs: JobTotals;
  jobDepth?: { queued: number; running: number; failed: number };
}

function emptyTotals(): Totals {
  return {
    events: {},
    messages: { cleared: 0, summarized: 0, externalized: 0, dropped: 0 },
    tokensFreed: 0,
    requestTokens: 0,
    retryDelayMs: 0,
    durations: {},
    jobs: { queued: 0, started: 0, committed: 0, discarded: 0, failed: 0, retried: 0 },
  };
}

/** Adds one event to a set of totals. */
function count(totals: Totals, event: Parameters<EngineListener>[0]): void {
  totals.events[event.type] = (totals.events[event.type] ?? 0) + 1;
  switch (event.type) {
    case "cleared":
    case "summarized":
    case "externalized":
    case "dropped":
      totals.messages[event.type] += event.messages;
      break;
    case "conflict_retry":
      totals.retryDelayMs += event.delayMs;
      break;
    case "committed":
      totals.tokensFreed += Math.max(0, event.tokensFreed);
      break;
    case "job_queued":
      totals.jobs.queued++;
      break;
    case "job_started":
      totals.jobs.started++;
      break;
    case "job_committed":
      totals.jobs.committed++;
      break;
    case "job_discarded":
      totals.jobs.discarded++;
      break;
    case "job_failed":
      if (event.final) totals.jobs.failed++;
      else totals.jobs.retried++;
      break;
    case "job_queue_depth":
      totals.jobDepth = { queued: event.queued, running: event.running, failed: event.failed };
      break;
    case "completed": {
      const d = totals.durations[event.operation] ?? { count: 0, totalMs: 0, maxMs: 0 };
      d.count++;
      d.totalMs += event.durationMs;
      d.maxMs = Math.max(d.maxMs, event.durationMs);
      totals.durations[event.operation] = d;
      if (event.operation === "prepareTurn") totals.requestTokens += event.tokens ?? 0;
      break;
    }
    default:
      break;
  }
}

/**
 * Collects metrics from engine events: counts per event type, messages per compaction kind, tokens freed,
 * conflicts, errors and per-operation durations, in all and per thread (the `maxThreads` most recently active,
 * default 10,000). Pass `collector.listener` in the engine's `events` option.
 */
export function createMetricsCollector(options: { readonly maxThreads?: number } = {}): MetricsCollector {
  const maxThreads = options.maxThreads ?? 10_000;
  let totals = emptyTotals();
  const perThread = new Map<string, Totals>();
  const listener: EngineListener = (event) => {
    count(totals, event);
    if (event.threadId === "") return;
    const mine = perThread.get(event.threadId) ?? emptyTotals();
    perThread.delete(event.threadId);
    perThread.set(event.threadId, mine);
    count(mine, event);
    if (perThread.size > maxThreads) perThread.delete(perThread.keys().next().value!);
  };
  return {
    listener,
    snapshot: (threadId?: string) =>
      snapshotOf(threadId === undefined ? totals : (perThread.get(threadId) ?? emptyTotals())),
    threads: () => Object.freeze([...perThread.keys()]),
    reset: () => {
      totals = emptyTotals();
      perThread.clear();
    },
  };
}

function snapshotOf(t: Totals): MetricsSnapshot {
  const durations: Partial<Record<EngineOperation, DurationStats>> = {};
  for (const [op, d] of Object.entries(t.durations) as [
    EngineOperation,
    Totals["durations"][EngineOperation],
  ][]) {
    if (d === undefined) continue;
    durations[op] = Object.freeze({ ...d, meanMs: d.count === 0 ? 0 : d.totalMs / d.count });
  }
  return Object.freeze({
    events: Object.freeze({ ...t.events }),
    messages: Object.freeze({ ...t.messages }),
    tokensFreed: t.tokensFreed,
    commits: t.events.committed ?? 0,
    versionConflicts: t.events.version_conflict ?? 0,
    conflictRetries: t.events.conflict_retry ?? 0,
    conflictRetryDelayMs: t.retryDelayMs,
    errors: t.events.error ?? 0,
    requestTokens: t.requestTokens,
    durations: Object.freeze(durations),
    jobs: Object.freeze({ ...t.jobs }),
    ...(t.jobDepth === undefined ? {} : { jobDepth: Object.freeze({ ...t.jobDepth }) }),
  });
}
