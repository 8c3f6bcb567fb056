import { AsyncLocalStorage } from "node:async_hooks";
import type { StepOutcome } from "../compaction/pipeline-report.js";
import type { JobRunnerKind } from "../jobs/job-runner.js";
import type { ActionKind } from "../plan/compaction-plan.js";
import type { StrategyCost } from "../strategies/strategy.js";

/** The engine operations that report completion, errors and durations. */
export type EngineOperation =
  | "append"
  | "checkpoint"
  | "index"
  | "prepareTurn"
  | "background"
  | "compact"
  | "recordUsage"
  | "replay"
  | "render"
  | "explain"
  | "diff"
  | "recall";

/** Payload of each engine event by its `type`; every event also carries `type`, `threadId` and `at`. */
export interface EngineEventMap {
  /** Messages were written to the log. */
  readonly appended: { readonly messages: number; readonly logSeq: number; readonly durationMs: number };
  /**
   * The thread's log and plan are in hand: from the in-process cache (`warm`), from a checkpoint and the rows that
   * render (`checkpoint`), or from the whole stored log (`cold`).
   */
  readonly loaded: {
    readonly source: "warm" | "cold" | "checkpoint";
    /**
     * Set when the operation ran before on a checkpoint and needed what it did not hold (the checkpoint's tail,
     * or a message): what it was. The source then says what was loaded instead.
     */
    readonly fallback?: string;
    readonly messages: number;
    readonly planVersion: number;
    readonly durationMs: number;
  };
  /** A compaction check begins (a turn, a background run or a maintenance compaction). */
  readonly check_started: {
    readonly operation: EngineOperation;
    readonly logSeq: number;
    readonly planVersion: number;
    readonly target: number;
    readonly calibrationRatio: number;
  };
  /** One strategy's turn in a pipeline run, whatever became of it. */
  readonly proposal: {
    readonly operation: EngineOperation;
    readonly strategy: string;
    readonly cost: StrategyCost;
    readonly outcome: StepOutcome;
    readonly actions: number;
    readonly tokensBefore: number;
    readonly tokensAfter: number;
    readonly durationMs: number;
    readonly detail?: string;
  };
  /** Tool results or arguments were replaced by placeholders. */
  readonly cleared: ActionEvent;
  /** A span became one summary message. */
  readonly summarized: ActionEvent;
  /** A span moved to the artifact store and became a pointer. */
  readonly externalized: ActionEvent;
  /** A span was left out of the request. */
  readonly dropped: ActionEvent;
  /**
   * An artifact was rendered at the end of the request: one the harness passed in, or one the model or the user
   * referred to since the previous call (`detected`; `truncated` when cut to the per-artifact cap).
   */
  readonly rehydrated: {
    readonly artifactId: string;
    readonly chars: number;
    readonly detected?: boolean;
    readonly truncated?: boolean;
  };
  /** An artifact referred to since the previous call was not brought back. */
  readonly rehydration_blocked: {
    readonly artifactId: string;
    readonly reason: "cooldown" | "sensitivity" | "tenant" | "budget" | "missing";
  };
  /**
   * `recall` answered: an artifact by its id, or the compacted messages matching a query (how many). `chars` is
   * the length of the answer's content; `truncated`: something was cut or left out to keep it within the cap.
   */
  readonly recalled: {
    readonly artifactId?: string;
    readonly callId?: string;
    readonly query?: string;
    readonly matches?: number;
    readonly chars: number;
    readonly truncated: boolean;
    readonly durationMs: number;
  };
  /** A new plan version was committed. */
  readonly committed: {
    readonly operation: EngineOperation;
    readonly planVersion: number;
    readonly basedOnSeq: number;
    readonly tokensBefore: number;
    readonly tokensAfter: number;
    readonly tokensFreed: number;
  };
  /** Another writer got there first; the engine reloads and retries. */
  readonly version_conflict: {
    readonly operation: EngineOperation;
    readonly store: "log" | "plan";
    readonly expected: number;
    readonly actual: number;
    readonly attempt: number;
  };
  /**
   * After a `version_conflict`, the engine pauses `delayMs` (full jitter under a doubling ceiling) and tries
   * `operation` again; `attempt` is the attempt that lost (1 for the first).
   */
  readonly conflict_retry: {
    readonly operation: EngineOperation;
    readonly attempt: number;
    readonly delayMs: number;
  };
  /** A background run with the model strategies was queued. */
  readonly background_scheduled: { readonly basedOnVersion: number; readonly replacesVersion: number };
  /** A background run ended without committing, and why. */
  readonly background_discarded: { readonly reason: string };
  /**
   * A background job was queued: in this process, or on the durable queue (`key`: thread and the plan version it
   * is computed for; queuing the same key again queues nothing and emits nothing).
   */
  readonly job_queued: JobEvent & { readonly basedOnVersion: number; readonly replacesVersion: number };
  /** A worker began an attempt at a job (`attempt` of `attempts`). */
  readonly job_started: JobEvent & { readonly attempt: number; readonly attempts: number };
  /** A job's result was committed as plan `planVersion`. */
  readonly job_committed: JobEvent & {
    readonly attempt: number;
    readonly planVersion: number;
    readonly durationMs: number;
  };
  /** A job ended without committing: its plan was superseded, or there was nothing to summarize. */
  readonly job_discarded: JobEvent & {
    readonly attempt: number;
    readonly reason: string;
    readonly durationMs: number;
  };
  /**
   * An attempt at a job failed; `final` when it was the last (the job is failed, the thread stays on its
   * deterministic plan), else it is retried.
   */
  readonly job_failed: JobEvent & {
    readonly attempt: number;
    readonly attempts: number;
    readonly final: boolean;
    readonly message: string;
    readonly durationMs: number;
  };
  /** How many jobs wait, run and have failed (of one thread, or of all with threadId ""), as last counted. */
  readonly job_queue_depth: {
    readonly runner: JobRunnerKind;
    readonly queued: number;
    readonly running: number;
    readonly failed: number;
  };
  /** A request was rendered to a provider format. */
  readonly rendered: {
    readonly format: string;
    readonly tokens: number;
    readonly messages: number;
    readonly hash: string;
  };
  /** A model-call audit record was written. */
  readonly call_recorded: {
    readonly callId: string;
    readonly planVersion: number;
    readonly logSeq: number;
    readonly tokenEstimate: number;
  };
  /** An operation finished. */
  readonly completed: {
    readonly operation: EngineOperation;
    readonly durationMs: number;
    readonly callId?: string;
    readonly tokens?: number;
    readonly tokensBefore?: number;
    readonly compacted?: boolean;
  };
  /** The provider's usage was stored and the calibration updated. */
  readonly usage_recorded: {
    readonly callId: string;
    readonly model?: string;
    readonly inputTokens: number;
    readonly tokenEstimate: number;
    readonly ratio: number;
  };
  /** A past call was re-rendered and its hash checked. */
  readonly replayed: { readonly callId: string; readonly ok: boolean; readonly mismatch?: string };
  /** An operation failed (the error is also thrown or returned). */
  readonly error: { readonly operation: EngineOperation; readonly code: string; readonly message: string };
}

/** What every job event carries: the job's key and where it runs. */
export interface JobEvent {
  readonly key: string;
  readonly runner: JobRunnerKind;
}

/** What the cleared / summarized / externalized / dropped events report about one new plan action. */
export interface ActionEvent {
  readonly operation: EngineOperation;
  readonly strategy: string;
  readonly reason: string;
  readonly messages: number;
  readonly firstId: string;
}

/** The tag of an engine event. */
export type EngineEventType = keyof EngineEventMap;

/** One engine event, tagged by `type`. */
export type EngineEvent = {
  readonly [K in EngineEventType]: {
    readonly type: K;
    readonly threadId: string;
    /** Epoch milliseconds. */
    readonly at: number;
    /**
     * For an event of `prepareTurn`: the number of the model call it prepares within the thread (1 for the first;
     * counted from the thread's last recorded call, so two workers preparing the same thread at once may both
     * give the same number). Absent for events outside a turn, background runs included.
     */
    readonly callNumber?: number;
  } & EngineEventMap[K];
}[EngineEventType];

/** The call number of the turn in progress, for the events it emits (see `EngineEvent.callNumber`). */
const turnCall = new AsyncLocalStorage<number>();

/** Runs `fn` with its events carrying `callNumber`. */
export function inCall<T>(callNumber: number, fn: () => T): T {
  return turnCall.run(callNumber, fn);
}

/** Runs `fn` outside any turn's call (work a turn starts that outlives it, such as a background run). */
export function outsideCall<T>(fn: () => T): T {
  return turnCall.exit(fn);
}

/** Receives engine events; a listener that throws is ignored, so a broken logger never fails a turn. */
export type EngineListener = (event: EngineEvent) => void;

/** The event type announcing each kind of new plan action (`include` announces nothing). */
export const ACTION_EVENT: Readonly<Record<ActionKind, EngineEventType | undefined>> = Object.freeze({
  include: undefined,
  clear: "cleared",
  summarize: "summarized",
  externalize: "externalized",
  drop: "dropped",
});

/** Sends typed events to listeners, stamping the time. */
export interface EventSink {
  emit<K extends EngineEventType>(type: K, threadId: string, payload: EngineEventMap[K]): void;
}

/** An event sink over zero or more listeners. */
export function createEventSink(
  listeners: ReadonlyArray<EngineListener>,
  now: () => number = Date.now,
): EventSink {
  return {
    emit(type, threadId, payload) {
      if (listeners.length === 0) return;
      const callNumber = turnCall.getStore();
      const event = Object.freeze({
        type,
        threadId,
        at: now(),
        ...(callNumber === undefined ? {} : { callNumber }),
        ...payload,
      }) as EngineEvent;
      for (const listener of listeners) {
        try {
          listener(event);
        } catch {
          // A listener is an observer: its failure must not change what the engine does.
        }
      }
    },
  };
}
