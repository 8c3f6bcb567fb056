/** `context-ledger/otel`: OpenTelemetry spans and metrics from the engine's events. */
export { createOtelListener, type OtelListenerOptions } from "./otel-listener.js";
