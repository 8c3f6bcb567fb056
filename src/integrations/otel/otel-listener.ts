/**
 * OpenTelemetry for the engine, from its events: an engine listener (pass it in `events`) that turns what the
 * engine reports into spans and metrics through `@opentelemetry/api` alone, so any SDK or exporter the application
 * set up receives them.
 *
 * Spans. The engine reports an operation as it goes, with timestamps and durations, so the listener gathers the
 * events of one operation and writes its span tree when the operation ends (each span with its own start and end
 * time):
 * - `context_ledger.prepare_turn` — one per model call prepared; children `context_ledger.compaction` (from the
 *   check to the commit, the strategies' steps under it: `context_ledger.strategy`, or `context_ledger.summarize`
 *   for a strategy that calls a model) and `context_ledger.rehydration` (what came back, what was blocked);
 * - `context_ledger.background_compaction` and `context_ledger.compact` — a background run, a maintenance run;
 * - `context_ledger.recall` — an answer to the model's recall tool.
 * Every span carries `gen_ai.conversation.id` (the thread); a turn's, the call's number and id, the provider the
 * request was rendered for (`gen_ai.provider.name`) and its token counts.
 *
 * Metrics (GenAI names where the conventions have one): `gen_ai.client.token.usage` (the provider's input tokens
 * the harness recorded, `gen_ai.token.type` `input`), `context_ledger.request.tokens` (per turn, before
 * compaction and as sent), `context_ledger.compactions` and `context_ledger.tokens.freed` (per plan committed),
 * `context_ledger.operation.duration` (seconds, per operation), `context_ledger.strategy.duration` (seconds, per
 * strategy step), `context_ledger.rehydrations` (brought back or blocked, with the reason),
 * `context_ledger.conflict_retries` (writes retried after losing a race to another writer, per operation),
 * `context_ledger.jobs` (background jobs by `context_ledger.job.event`: queued, started, committed, discarded, failed, retried) and
 * `context_ledger.jobs.depth` (queued / running / failed as last counted, by `context_ledger.job.state`).
 */
import type {
  Attributes,
  context as ContextApi,
  Counter,
  Histogram,
  Meter,
  metrics as MetricsApi,
  Span,
  trace as TraceApi,
  Tracer,
} from "@opentelemetry/api";
import type { EngineEvent, EngineListener } from "../../engine/engine-events.js";
import { requirePeer } from "../../errors/optional-peer.js";

/** Options of {@link createOtelListener}. */
export interface OtelListenerOptions {
  /** Default: the global tracer provider's tracer `context-ledger`. */
  readonly tracer?: Tracer;
  /** Default: the global meter provider's meter `context-ledger`. */
  readonly meter?: Meter;
  /**
   * Operations whose span is still open at most (a turn whose end the listener never hears of, because its
   * engine stopped, is given up past this); default 1,000.
   */
  readonly maxOpen?: number;
}

interface OtelApi {
  readonly trace: typeof TraceApi;
  readonly metrics: typeof MetricsApi;
  readonly context: typeof ContextApi;
  readonly SpanStatusCode: { readonly ERROR: number };
}

/** `@opentelemetry/api`, or `MissingDependencyError` saying to install it (an optional peer dependency). */
function loadApi(): OtelApi {
  return requirePeer<OtelApi>("@opentelemetry/api", "context-ledger/otel");
}

/** The GenAI provider a render format sends to. */
const PROVIDER: Readonly<Record<string, string>> = {
  openai: "openai",
  responses: "openai",
  anthropic: "anthropic",
};

/** An operation whose events are gathered until it ends. */
interface Open {
  readonly threadId: string;
  readonly events: EngineEvent[];
}

/** The milliseconds an event's operation started at, given its end and duration. */
const since = (at: number, durationMs: number) => at - Math.max(0, durationMs);

// Event times are wall-clock milliseconds and durations come from the monotonic clock, so a parent computed from
// its own duration may start a fraction of a millisecond after its first child: it is widened to enclose them.

/** The earliest start among an operation's events and their steps, or `start` when earlier. */
function enclosingStart(events: ReadonlyArray<EngineEvent>, start: number): number {
  let first = start;
  for (const e of events) first = Math.min(first, e.type === "proposal" ? since(e.at, e.durationMs) : e.at);
  return first;
}

/** The latest event time of an operation, or `end` when later. */
function enclosingEnd(events: ReadonlyArray<EngineEvent>, end: number): number {
  let last = end;
  for (const e of events) last = Math.max(last, e.at);
  return last;
}

/**
 * An engine listener that reports to OpenTelemetry (see the module comment for the spans and metrics). Throws
 * `MissingDependencyError` when `@opentelemetry/api` is not installed.
 *
 * @example
 * const engine = createContextEngine({ stores, budget, events: createOtelListener() });
 */
export function createOtelListener(options: OtelListenerOptions = {}): EngineListener {
  const api = loadApi();
  const tracer = options.tracer ?? api.trace.getTracer("context-ledger");
  const meter = options.meter ?? api.metrics.getMeter("context-ledger");
  const maxOpen = options.maxOpen ?? 1_000;
  const instruments = createInstruments(meter);
  // Turns by thread and call number; background and maintenance runs by thread.
  const turns = new Map<string, Open>();
  const runs = new Map<string, Open>();

  const hold = (map: Map<string, Open>, key: string, threadId: string): Open => {
    let open = map.get(key);
    if (open === undefined) {
      open = { threadId, events: [] };
      map.set(key, open);
      // The oldest goes when too many are open: its end was never reported.
      if (map.size > maxOpen) map.delete(map.keys().next().value!);
    }
    return open;
  };

  const writer = spanWriter(api, tracer);
  return (event: EngineEvent) => {
    record(instruments, event);
    const thread = event.threadId;
    if (event.callNumber !== undefined) {
      const key = `${thread}\u0000${event.callNumber}`;
      const open = hold(turns, key, thread);
      open.events.push(event);
      if (event.type === "completed" && event.operation === "prepareTurn") {
        turns.delete(key);
        writer.turn(open, event);
      }
      return;
    }
    switch (event.type) {
      case "error":
        if (event.operation === "prepareTurn") {
          // A failed turn reports its error after leaving the call's scope: it ends the thread's open turn when
          // there is exactly one; with several (concurrent turns) it cannot tell which, and writes the error alone.
          const keys = [...turns.keys()].filter((k) => k.startsWith(`${thread}\u0000`));
          const key = keys.length === 1 ? keys[0] : undefined;
          const open = key === undefined ? { threadId: thread, events: [] } : turns.get(key)!;
          if (key !== undefined) turns.delete(key);
          writer.failedTurn(open, event);
        } else if (event.operation === "background" || event.operation === "compact") {
          const key = `${thread}\u0000${event.operation}`;
          const open = runs.get(key);
          runs.delete(key);
          writer.run(open ?? { threadId: thread, events: [] }, event.operation, event);
        }
        return;
      case "recalled":
        writer.recall(event);
        return;
      case "check_started":
      case "proposal":
      case "committed":
      case "cleared":
      case "summarized":
      case "externalized":
      case "dropped":
      case "background_discarded":
      case "version_conflict":
      case "completed": {
        const operation = "operation" in event ? event.operation : "background";
        if (operation !== "background" && operation !== "compact") return;
        const key = `${thread}\u0000${operation}`;
        const open = hold(runs, key, thread);
        open.events.push(event);
        const ended =
          (event.type === "completed" && event.operation === operation) ||
          (event.type === "background_discarded" && operation === "background");
        if (ended) {
          runs.delete(key);
          writer.run(open, operation, event);
        }
        return;
      }
      default:
        return;
    }
  };
}

interface Instruments {
  readonly tokenUsage: Histogram;
  readonly requestTokens: Histogram;
  readonly compactions: Counter;
  readonly freed: Counter;
  readonly duration: Histogram;
  readonly strategyDuration: Histogram;
  readonly rehydrations: Counter;
  readonly conflictRetries: Counter;
  readonly jobs: Counter;
  readonly jobDepth: Histogram;
}

function createInstruments(meter: Meter): Instruments {
  return {
    tokenUsage: meter.createHistogram("gen_ai.client.token.usage", {
      unit: "{token}",
      description:
        "Tokens the provider counted for a request the engine prepared (recorded with recordUsage)",
    }),
    requestTokens: meter.createHistogram("context_ledger.request.tokens", {
      unit: "{token}",
      description: "Tokens of a turn's request by the engine's count, before compaction and as sent",
    }),
    compactions: meter.createCounter("context_ledger.compactions", {
      unit: "{plan}",
      description: "Plan versions committed",
    }),
    freed: meter.createCounter("context_ledger.tokens.freed", {
      unit: "{token}",
      description: "Tokens a committed plan took out of the request",
    }),
    duration: meter.createHistogram("context_ledger.operation.duration", {
      unit: "s",
      description: "Duration of an engine operation",
    }),
    strategyDuration: meter.createHistogram("context_ledger.strategy.duration", {
      unit: "s",
      description: "Duration of one strategy's step in a compaction",
    }),
    rehydrations: meter.createCounter("context_ledger.rehydrations", {
      unit: "{artifact}",
      description: "Artifacts brought back into a request, or blocked",
    }),
    conflictRetries: meter.createCounter("context_ledger.conflict_retries", {
      unit: "{retry}",
      description: "Writes retried after another writer changed the thread first (version conflicts)",
    }),
    jobs: meter.createCounter("context_ledger.jobs", {
      unit: "{job}",
      description: "Background jobs queued, started, committed, discarded, failed or retried",
    }),
    jobDepth: meter.createHistogram("context_ledger.jobs.depth", {
      unit: "{job}",
      description: "Background jobs queued, running and failed, as last counted",
    }),
  };
}

function record(m: Instruments, event: EngineEvent): void {
  // Metric attributes stay low in cardinality: no thread or call ids.
  switch (event.type) {
    case "usage_recorded":
      m.tokenUsage.record(event.inputTokens, {
        "gen_ai.token.type": "input",
        ...(event.model === undefined ? {} : { "gen_ai.request.model": event.model }),
      });
      return;
    case "completed":
      m.duration.record(event.durationMs / 1000, { "context_ledger.operation": event.operation });
      if (event.operation === "prepareTurn") {
        if (event.tokensBefore !== undefined) {
          m.requestTokens.record(event.tokensBefore, { "context_ledger.stage": "before_compaction" });
        }
        if (event.tokens !== undefined)
          m.requestTokens.record(event.tokens, { "context_ledger.stage": "sent" });
      }
      return;
    case "committed":
      m.compactions.add(1, { "context_ledger.operation": event.operation });
      m.freed.add(Math.max(0, event.tokensFreed), { "context_ledger.operation": event.operation });
      return;
    case "proposal":
      m.strategyDuration.record(event.durationMs / 1000, {
        "context_ledger.strategy": event.strategy,
        "context_ledger.strategy.cost": event.cost,
        "context_ledger.outcome": event.outcome,
      });
      return;
    case "rehydrated":
      m.rehydrations.add(1, { "context_ledger.outcome": "rehydrated" });
      return;
    case "rehydration_blocked":
      m.rehydrations.add(1, { "context_ledger.outcome": "blocked", "context_ledger.reason": event.reason });
      return;
    case "conflict_retry":
      m.conflictRetries.add(1, { "context_ledger.operation": event.operation });
      return;
    case "job_queued":
    case "job_started":
    case "job_committed":
    case "job_discarded":
    case "job_failed": {
      const kind = event.type === "job_failed" && !event.final ? "retried" : event.type.slice(4);
      m.jobs.add(1, { "context_ledger.job.event": kind, "context_ledger.job.runner": event.runner });
      return;
    }
    case "job_queue_depth":
      for (const state of ["queued", "running", "failed"] as const) {
        m.jobDepth.record(event[state], { "context_ledger.job.state": state });
      }
      return;
    default:
      return;
  }
}

/** Writes the span trees of finished operations. */
function spanWriter(api: OtelApi, tracer: Tracer) {
  const start = (name: string, startTime: number, attributes: Attributes, parent?: Span): Span => {
    const ctx = parent === undefined ? api.context.active() : api.trace.setSpan(api.context.active(), parent);
    return tracer.startSpan(name, { startTime, attributes }, ctx);
  };

  /** The compaction span of an operation's events (from its check to its last step or commit), with its steps. */
  const compaction = (events: ReadonlyArray<EngineEvent>, parent: Span, fallbackEnd: number): void => {
    const check = events.find((e) => e.type === "check_started");
    if (check === undefined) return;
    const committed = events.find((e) => e.type === "committed");
    const steps = events.filter((e) => e.type === "proposal");
    const end = Math.max(check.at, committed?.at ?? 0, ...steps.map((s) => s.at)) || fallbackEnd;
    const span = start(
      "context_ledger.compaction",
      check.at,
      {
        "gen_ai.conversation.id": check.threadId,
        "context_ledger.target": check.target,
        "context_ledger.calibration_ratio": check.calibrationRatio,
        "context_ledger.plan_version":
          committed?.type === "committed" ? committed.planVersion : check.planVersion,
        ...(committed?.type === "committed"
          ? {
              "context_ledger.tokens.before": committed.tokensBefore,
              "context_ledger.tokens.after": committed.tokensAfter,
            }
          : {}),
      },
      parent,
    );
    for (const step of steps) {
      if (step.type !== "proposal") continue;
      const name = step.cost === "model" ? "context_ledger.summarize" : "context_ledger.strategy";
      const child = start(
        name,
        since(step.at, step.durationMs),
        {
          "gen_ai.conversation.id": step.threadId,
          "context_ledger.strategy": step.strategy,
          "context_ledger.strategy.cost": step.cost,
          "context_ledger.outcome": step.outcome,
          "context_ledger.actions": step.actions,
          "context_ledger.tokens.before": step.tokensBefore,
          "context_ledger.tokens.after": step.tokensAfter,
          ...(step.detail === undefined ? {} : { "context_ledger.detail": step.detail }),
        },
        span,
      );
      if (step.outcome === "failed")
        child.setStatus({ code: api.SpanStatusCode.ERROR, message: step.detail ?? "" });
      child.end(step.at);
    }
    for (const e of events) {
      if (
        e.type === "cleared" ||
        e.type === "summarized" ||
        e.type === "externalized" ||
        e.type === "dropped"
      ) {
        span.addEvent(
          `context_ledger.${e.type}`,
          {
            "context_ledger.strategy": e.strategy,
            "context_ledger.messages": e.messages,
            "context_ledger.first_id": e.firstId,
          },
          e.at,
        );
      }
    }
    span.end(end);
  };

  return {
    turn(open: Open, done: Extract<EngineEvent, { type: "completed" }>): void {
      const events = open.events;
      const rendered = events.find((e) => e.type === "rendered");
      const recorded = events.find((e) => e.type === "call_recorded");
      const loaded = events.find((e) => e.type === "loaded");
      const format = rendered?.type === "rendered" ? rendered.format : undefined;
      const root = start(
        "context_ledger.prepare_turn",
        enclosingStart(events, since(done.at, done.durationMs)),
        {
          "gen_ai.conversation.id": open.threadId,
          ...(done.callNumber === undefined ? {} : { "context_ledger.call_number": done.callNumber }),
          ...(done.callId === undefined ? {} : { "context_ledger.call_id": done.callId }),
          ...(format === undefined ? {} : { "context_ledger.format": format }),
          ...(format !== undefined && PROVIDER[format] !== undefined
            ? { "gen_ai.provider.name": PROVIDER[format] }
            : {}),
          ...(done.tokens === undefined ? {} : { "context_ledger.tokens.sent": done.tokens }),
          ...(done.tokensBefore === undefined ? {} : { "context_ledger.tokens.before": done.tokensBefore }),
          ...(done.compacted === undefined ? {} : { "context_ledger.compacted": done.compacted }),
          ...(recorded?.type === "call_recorded"
            ? { "context_ledger.plan_version": recorded.planVersion }
            : {}),
          ...(loaded?.type === "loaded" ? { "context_ledger.loaded_from": loaded.source } : {}),
        },
      );
      for (const e of events) {
        if (e.type === "version_conflict") {
          root.addEvent("context_ledger.version_conflict", { "context_ledger.attempt": e.attempt }, e.at);
        }
      }
      compaction(events, root, done.at);
      const back = events.filter((e) => e.type === "rehydrated" || e.type === "rehydration_blocked");
      if (back.length > 0) {
        const at = back[0]!.at;
        const span = start(
          "context_ledger.rehydration",
          at,
          {
            "gen_ai.conversation.id": open.threadId,
            "context_ledger.rehydrated": back.filter((e) => e.type === "rehydrated").length,
            "context_ledger.blocked": back.filter((e) => e.type === "rehydration_blocked").length,
          },
          root,
        );
        for (const e of back) {
          if (e.type === "rehydrated") {
            span.addEvent(
              "context_ledger.rehydrated",
              {
                "context_ledger.artifact_id": e.artifactId,
                "context_ledger.chars": e.chars,
                "context_ledger.truncated": e.truncated === true,
                "context_ledger.detected": e.detected === true,
              },
              e.at,
            );
          } else if (e.type === "rehydration_blocked") {
            span.addEvent(
              "context_ledger.rehydration_blocked",
              { "context_ledger.artifact_id": e.artifactId, "context_ledger.reason": e.reason },
              e.at,
            );
          }
        }
        span.end(back.at(-1)!.at);
      }
      root.end(enclosingEnd(events, done.at));
    },

    failedTurn(open: Open, error: Extract<EngineEvent, { type: "error" }>): void {
      const first = open.events[0]?.at ?? error.at;
      const root = start("context_ledger.prepare_turn", first, {
        "gen_ai.conversation.id": open.threadId,
        "error.type": error.code,
      });
      compaction(open.events, root, error.at);
      root.setStatus({ code: api.SpanStatusCode.ERROR, message: error.message });
      root.end(error.at);
    },

    run(open: Open, operation: "background" | "compact", end: EngineEvent): void {
      const first = open.events[0]?.at ?? end.at;
      const started = end.type === "completed" ? since(end.at, end.durationMs) : first;
      const name =
        operation === "background" ? "context_ledger.background_compaction" : "context_ledger.compact";
      const root = start(name, enclosingStart(open.events, Math.min(first, started)), {
        "gen_ai.conversation.id": open.threadId,
      });
      compaction(open.events, root, end.at);
      if (end.type === "background_discarded") root.setAttribute("context_ledger.discarded", end.reason);
      if (end.type === "error") {
        root.setAttribute("error.type", end.code);
        root.setStatus({ code: api.SpanStatusCode.ERROR, message: end.message });
      }
      root.end(enclosingEnd(open.events, end.at));
    },

    recall(event: Extract<EngineEvent, { type: "recalled" }>): void {
      const span = start("context_ledger.recall", since(event.at, event.durationMs), {
        "gen_ai.conversation.id": event.threadId,
        ...(event.artifactId === undefined ? {} : { "context_ledger.artifact_id": event.artifactId }),
        ...(event.matches === undefined ? {} : { "context_ledger.matches": event.matches }),
        "context_ledger.chars": event.chars,
        "context_ledger.truncated": event.truncated,
      });
      span.end(event.at);
    },
  };
}
