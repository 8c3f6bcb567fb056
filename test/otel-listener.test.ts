/**
 * `context-ledger/otel` against the OpenTelemetry SDK's in-memory exporters: a real engine run (compaction with
 * inline summaries, a rehydrated artifact, a recall, recorded usage, a failed turn) gives the span trees and metrics
 * the module promises, with the GenAI attributes where the conventions have them.
 */
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { describe, expect, it } from "vitest";
import { requirePeer } from "../src/errors/optional-peer.js";
import { createContextEngine, createMemoryStores, extendPlan, MissingDependencyError } from "../src/index.js";
import { createOtelListener } from "../src/integrations/otel/index.js";
import { simpleCounter } from "./support/simple-counter.js";

/** A reader the test collects from when it wants. */
class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

function telemetry() {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({
    spanProcessors: [new SimpleSpanProcessor({ exporter: spans })],
  });
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const listener = createOtelListener({
    tracer: tracerProvider.getTracer("test"),
    meter: meterProvider.getMeter("test"),
  });
  const metric = async (name: string) => {
    const { resourceMetrics } = await reader.collect();
    return resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
  };
  return { spans, listener, metric };
}

const children = (all: ReadonlyArray<ReadableSpan>, parent: ReadableSpan) =>
  all.filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);

describe("createOtelListener", () => {
  it("writes a span tree per turn, background-free, with compaction, summaries, rehydration and recall", async () => {
    const { spans, listener, metric } = telemetry();
    const stores = createMemoryStores();
    const engine = createContextEngine({
      stores,
      counter: simpleCounter(),
      budget: { contextWindow: 1_200, reserveOutput: 0, safetyMargin: 0 },
      tenant: "acme",
      events: listener,
    });
    await engine.append("t", [{ id: "u0", role: "user", parts: [{ type: "text", text: "fix the parser" }] }]);
    for (let i = 0; i < 12; i++) {
      await engine.append("t", [
        {
          id: `a${i}`,
          role: "assistant",
          parts: [{ type: "tool_call", callId: `c${i}`, name: "bash", args: `{"cmd":"step ${i}"}` }],
        },
        {
          id: `r${i}`,
          role: "tool",
          parts: [{ type: "tool_result", callId: `c${i}`, content: `output ${i} `.repeat(40) }],
        },
      ]);
    }
    const first = await engine.prepareTurn("t", { format: "anthropic" });
    await engine.recordUsage(first.callId, { inputTokens: first.prompt.tokenCount + 12 });
    await engine.idle();

    const all = spans.getFinishedSpans();
    const turn = all.find((s) => s.name === "context_ledger.prepare_turn")!;
    expect(turn.attributes).toMatchObject({
      "gen_ai.conversation.id": "t",
      "gen_ai.provider.name": "anthropic",
      "context_ledger.call_number": 1,
      "context_ledger.call_id": first.callId,
      "context_ledger.tokens.sent": first.prompt.tokenCount,
      "context_ledger.compacted": true,
    });
    const compaction = children(all, turn).find((s) => s.name === "context_ledger.compaction")!;
    expect(compaction).toBeDefined();
    const steps = children(all, compaction).map((s) => s.name);
    expect(steps).toContain("context_ledger.strategy");
    expect(steps).toContain("context_ledger.summarize");
    // Children lie within their parents.
    const ms = (t: readonly [number, number]) => t[0] * 1_000 + t[1] / 1e6;
    expect(ms(compaction.startTime)).toBeGreaterThanOrEqual(ms(turn.startTime) - 1);
    expect(ms(compaction.endTime)).toBeLessThanOrEqual(ms(turn.endTime) + 1);
    expect(compaction.events.map((e) => e.name)).toContain("context_ledger.cleared");

    // An externalized group the model names comes back, and a recall is its own span.
    const artifact = await stores.artifacts.put({
      content: "the stack trace",
      tenant: "acme",
      threadId: "t",
    });
    const plan = await stores.forTenant!("acme").plans.latest("t");
    await stores.forTenant!("acme").plans.commit(
      extendPlan(
        plan!,
        [
          {
            kind: "externalize",
            span: ["a11", "r11"],
            record: {
              kind: "externalize",
              artifactId: artifact.artifactId,
              summary: "trace",
              tenant: "acme",
            },
            strategy: "test",
            reason: "moved out",
          },
        ],
        25,
      ),
      plan!.version,
    );
    await engine.append("t", [
      { id: "u1", role: "user", parts: [{ type: "text", text: `look at ${artifact.artifactId} again` }] },
    ]);
    await engine.prepareTurn("t", { format: "openai" });
    await engine.recall("t", { artifactId: artifact.artifactId });
    const later = spans.getFinishedSpans();
    const second = later.filter((s) => s.name === "context_ledger.prepare_turn").at(-1)!;
    expect(second.attributes["context_ledger.call_number"]).toBe(2);
    expect(second.attributes["gen_ai.provider.name"]).toBe("openai");
    const rehydration = children(later, second).find((s) => s.name === "context_ledger.rehydration")!;
    expect(rehydration.attributes["context_ledger.rehydrated"]).toBe(1);
    expect(rehydration.events[0]?.attributes?.["context_ledger.artifact_id"]).toBe(artifact.artifactId);
    const recall = later.find((s) => s.name === "context_ledger.recall")!;
    expect(recall.attributes["context_ledger.artifact_id"]).toBe(artifact.artifactId);

    // Metrics.
    const usage = await metric("gen_ai.client.token.usage");
    expect(usage?.dataPoints[0]?.attributes["gen_ai.token.type"]).toBe("input");
    const compactions = await metric("context_ledger.compactions");
    expect(compactions?.dataPoints.reduce((n, p) => n + (p.value as number), 0)).toBeGreaterThanOrEqual(1);
    const tokens = await metric("context_ledger.request.tokens");
    expect(new Set(tokens?.dataPoints.map((p) => p.attributes["context_ledger.stage"]))).toEqual(
      new Set(["before_compaction", "sent"]),
    );
    const rehydrations = await metric("context_ledger.rehydrations");
    expect(rehydrations?.dataPoints[0]?.attributes["context_ledger.outcome"]).toBe("rehydrated");
    expect(await metric("context_ledger.operation.duration")).toBeDefined();
    expect(await metric("context_ledger.strategy.duration")).toBeDefined();
  });

  it("counts conflict retries by operation (context_ledger.conflict_retries)", async () => {
    const { listener, metric } = telemetry();
    const stores = createMemoryStores();
    const other = createContextEngine({ stores, counter: simpleCounter(), budget: { contextWindow: 1_000 } });
    // Another writer appends right before each of this engine's first two appends: two lost races, then a win.
    let races = 2;
    const raced = {
      ...stores,
      log: {
        ...stores.log,
        append: async (...args: Parameters<typeof stores.log.append>) => {
          if (races-- > 0)
            await other.append("t", [{ role: "user", parts: [{ type: "text", text: `theirs ${races}` }] }]);
          return stores.log.append(...args);
        },
      },
    };
    const engine = createContextEngine({
      stores: raced,
      counter: simpleCounter(),
      budget: { contextWindow: 1_000 },
      events: listener,
    });
    await engine.append("t", [{ id: "mine", role: "user", parts: [{ type: "text", text: "hello" }] }]);
    const retries = await metric("context_ledger.conflict_retries");
    expect(retries?.descriptor.unit).toBe("{retry}");
    expect(retries?.dataPoints.map((p) => [p.attributes["context_ledger.operation"], p.value])).toEqual([
      ["append", 2],
    ]);
  });

  it("marks a failed turn as an error span", async () => {
    const { spans, listener } = telemetry();
    const engine = createContextEngine({
      stores: createMemoryStores(),
      counter: simpleCounter(),
      budget: { contextWindow: 30, reserveOutput: 0, safetyMargin: 0 },
      events: listener,
    });
    await engine.append("t", [{ id: "u0", role: "user", parts: [{ type: "text", text: "x".repeat(400) }] }]);
    await expect(engine.prepareTurn("t", { format: "openai" })).rejects.toThrow();
    const failed = spans.getFinishedSpans().find((s) => s.name === "context_ledger.prepare_turn")!;
    expect(failed.status.code).toBe(2);
    expect(failed.attributes["error.type"]).toBeDefined();
  });

  it("names the package to install when an optional dependency is missing", () => {
    const error = new MissingDependencyError("@opentelemetry/api", "context-ledger/otel");
    expect(error.code).toBe("MISSING_DEPENDENCY");
    expect(error.message).toContain("npm install @opentelemetry/api");
    expect(error.packageName).toBe("@opentelemetry/api");
    const missing = (() => {
      try {
        requirePeer("context-ledger-no-such-package", "context-ledger/test");
      } catch (e) {
        return e;
      }
    })();
    expect(missing).toBeInstanceOf(MissingDependencyError);
    expect((missing as Error).message).toContain("npm install context-ledger-no-such-package");
  });
});
