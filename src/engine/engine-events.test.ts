import { describe, expect, it } from "vitest";
import { createEventSink, type EngineEvent } from "./engine-events.js";
import { createLoggingEmitter } from "./logging-emitter.js";
import { createMetricsCollector } from "./metrics-collector.js";

const action = { operation: "prepareTurn", strategy: "s", reason: "r", firstId: "m1" } as const;

describe("engine events", () => {
  it("stamps events and ignores a listener that throws", () => {
    const seen: EngineEvent[] = [];
    const sink = createEventSink(
      [
        () => {
          throw new Error("broken logger");
        },
        (e) => seen.push(e),
      ],
      () => 42,
    );
    sink.emit("dropped", "t1", { ...action, messages: 3 });
    expect(seen).toEqual([{ type: "dropped", threadId: "t1", at: 42, ...action, messages: 3 }]);
    expect(Object.isFrozen(seen[0])).toBe(true);
  });

  it("the logging emitter writes one readable or JSON line per event and honours exclusions", () => {
    const lines: string[] = [];
    const sink = createEventSink(
      [createLoggingEmitter((l) => lines.push(l), { exclude: ["loaded"] })],
      () => 0,
    );
    sink.emit("loaded", "t1", { source: "cold", messages: 1, planVersion: 0, durationMs: 1 });
    sink.emit("committed", "t1", {
      operation: "prepareTurn",
      planVersion: 2,
      basedOnSeq: 10,
      tokensBefore: 900,
      tokensAfter: 400,
      tokensFreed: 500,
    });
    expect(lines).toEqual([
      '[context-ledger] 1970-01-01T00:00:00.000Z thread="t1" prepareTurn: committed plan v2 at log 10, 900 → 400 tokens (freed 500)',
    ]);
    const json: string[] = [];
    createLoggingEmitter((l) => json.push(l), { format: "json" })({
      type: "background_discarded",
      threadId: "t1",
      at: 0,
      reason: "superseded",
    });
    expect(JSON.parse(json[0]!)).toEqual({
      type: "background_discarded",
      threadId: "t1",
      at: 0,
      reason: "superseded",
    });
  });

  it("the logging emitter says what recall brought back", () => {
    const lines: string[] = [];
    const sink = createEventSink([createLoggingEmitter((l) => lines.push(l))], () => 0);
    sink.emit("recalled", "t1", { artifactId: "art_1", chars: 120, truncated: false, durationMs: 1.25 });
    sink.emit("recalled", "t1", {
      query: "parser error",
      matches: 3,
      chars: 4000,
      truncated: true,
      durationMs: 2,
    });
    expect(lines.map((l) => l.slice(l.indexOf('"t1" ') + 5))).toEqual([
      "recalled artifact art_1 (120 chars, 1.3ms)",
      'recalled 3 message(s) for query "parser error" (4000 chars, truncated, 2.0ms)',
    ]);
  });

  it("the metrics collector counts events, messages, tokens freed and durations", () => {
    const metrics = createMetricsCollector();
    const sink = createEventSink([metrics.listener]);
    sink.emit("dropped", "t", { ...action, messages: 4 });
    sink.emit("summarized", "t", { ...action, messages: 6 });
    sink.emit("committed", "t", {
      operation: "prepareTurn",
      planVersion: 1,
      basedOnSeq: 9,
      tokensBefore: 1_000,
      tokensAfter: 300,
      tokensFreed: 700,
    });
    sink.emit("version_conflict", "t", {
      operation: "append",
      store: "log",
      expected: 1,
      actual: 2,
      attempt: 1,
    });
    sink.emit("conflict_retry", "t", { operation: "append", attempt: 1, delayMs: 1.5 });
    sink.emit("conflict_retry", "t", { operation: "append", attempt: 2, delayMs: 3 });
    sink.emit("completed", "t", { operation: "prepareTurn", durationMs: 4, tokens: 300 });
    sink.emit("completed", "t", { operation: "prepareTurn", durationMs: 2, tokens: 310 });
    const s = metrics.snapshot();
    expect(s.messages).toEqual({ cleared: 0, summarized: 6, externalized: 0, dropped: 4 });
    expect(s.tokensFreed).toBe(700);
    expect(s.commits).toBe(1);
    expect(s.versionConflicts).toBe(1);
    expect(s.conflictRetries).toBe(2);
    expect(s.conflictRetryDelayMs).toBe(4.5);
    expect(s.requestTokens).toBe(610);
    expect(s.durations.prepareTurn).toEqual({ count: 2, totalMs: 6, maxMs: 4, meanMs: 3 });
    expect(s.events.completed).toBe(2);
    metrics.reset();
    expect(metrics.snapshot().events).toEqual({});
  });

  it("the metrics collector keeps totals per thread, forgetting the least recently active", () => {
    const metrics = createMetricsCollector({ maxThreads: 2 });
    const sink = createEventSink([metrics.listener]);
    sink.emit("dropped", "a", { ...action, messages: 4 });
    sink.emit("dropped", "b", { ...action, messages: 1 });
    sink.emit("completed", "a", { operation: "prepareTurn", durationMs: 5, tokens: 100 });
    expect(metrics.snapshot("a").messages.dropped).toBe(4);
    expect(metrics.snapshot("a").requestTokens).toBe(100);
    expect(metrics.snapshot("b").messages.dropped).toBe(1);
    expect(metrics.snapshot().messages.dropped).toBe(5);
    expect(metrics.threads()).toEqual(["b", "a"]);
    sink.emit("dropped", "c", { ...action, messages: 2 });
    expect(metrics.threads()).toEqual(["a", "c"]);
    expect(metrics.snapshot("b").events).toEqual({});
    expect(metrics.snapshot().messages.dropped).toBe(7);
  });
});
