// A fleet worker for the PostgreSQL fleet test and benchmark: `node --import tsx fleet-worker.ts '<json spec>'`.
// It serves `prepareTurn` calls read as JSON lines on stdin (several at once) and takes background jobs from the
// database's durable queue; it prints one JSON line per answer and per job event (stdout to a pipe is synchronous
// on Linux, so a printed line was written before any SIGKILL that follows it).

import { appendFileSync } from "node:fs";
import { createContextEngine } from "../../src/context-engine.js";
import type { EngineEvent } from "../../src/engine/engine-events.js";
import type { MessageInput } from "../../src/log/message.js";
import { type ProviderFormat, validateProviderRequest } from "../../src/render/provider-rules.js";
import { openPostgresStores } from "../../src/stores/postgres/index.js";
import type { Summarizer } from "../../src/strategies/summarizer.js";
import { simpleCounter } from "./simple-counter.js";

/** What the parent starts a worker with. */
export interface FleetWorkerSpec {
  readonly connectionString: string;
  readonly schema: string;
  /** Where every summarizer call appends one line (thread, first and last id of its span, messages). */
  readonly counterFile: string;
  /** Milliseconds a summary takes (a model call's latency, shortened). */
  readonly summaryMs: number;
  readonly visibilityTimeoutMs: number;
}

/** One call the parent asks for: append what the thread's log lacks of `messages`, then prepare a turn. */
export interface FleetCall {
  readonly id: number;
  readonly threadId: string;
  readonly messages: ReadonlyArray<MessageInput>;
  readonly budget: number;
  readonly format: ProviderFormat;
}

/** What a worker prints. */
export type FleetLine =
  | { readonly type: "ready"; readonly pid: number }
  | {
      readonly type: "answer";
      readonly id: number;
      readonly ok: true;
      readonly callId: string;
      readonly tokens: number;
      readonly planVersion: number;
      readonly problems: ReadonlyArray<string>;
      readonly scheduled: boolean;
      /** A summary job of the thread was queued or running when the call was prepared. */
      readonly pendingBefore: boolean;
    }
  | { readonly type: "answer"; readonly id: number; readonly ok: false; readonly error: string }
  | { readonly type: "event"; readonly event: EngineEvent };

const print = (line: FleetLine): void => {
  process.stdout.write(`${JSON.stringify(line)}\n`);
};

function countingSummarizer(spec: FleetWorkerSpec): Summarizer {
  return {
    id: "fleet-model",
    promptVersion: "1",
    summarize: async (input) => {
      await new Promise((resolve) => setTimeout(resolve, spec.summaryMs));
      const ids = input.messages.map((m) => m.id);
      // Written once the summary is made, right before it is handed back (and cached).
      appendFileSync(spec.counterFile, `${input.threadId}\t${ids[0]}\t${ids.at(-1)}\t${ids.length}\n`);
      const tools = input.messages.flatMap((m) =>
        m.parts.filter((p) => p.type === "tool_call").map((p) => p.name),
      );
      return {
        text: `Earlier: ${ids.length} messages (${ids[0]} … ${ids.at(-1)}); tools used: ${[...new Set(tools)].join(", ") || "none"}.`,
        structured: {},
      };
    },
  };
}

async function main(spec: FleetWorkerSpec): Promise<void> {
  const stores = await openPostgresStores({
    connectionString: spec.connectionString,
    schema: spec.schema,
    maxConnections: 6,
  });
  const engine = createContextEngine({
    stores,
    counter: simpleCounter(),
    budget: { contextWindow: 1_000_000 },
    summarizer: countingSummarizer(spec),
    summarization: "background",
    jobs: {
      runner: "queue",
      visibilityTimeoutMs: spec.visibilityTimeoutMs,
      maintenanceIntervalMs: 1_000,
      pollIntervalMs: 500,
      retryDelayMs: 0,
      attempts: 5,
      closeTimeoutMs: 5_000,
    },
    events: (event) => {
      if (event.type.startsWith("job_") && event.type !== "job_queue_depth") print({ type: "event", event });
    },
  });
  await engine.startJobs();

  const serve = async (call: FleetCall): Promise<void> => {
    try {
      // Another worker may have appended part of this batch before it died: append only what the log lacks.
      const where = await engine.locateMessages(
        call.threadId,
        call.messages.map((m) => m.id!),
      );
      const missing = call.messages.filter((m) => !where.seqs.has(m.id!));
      if (missing.length > 0) await engine.append(call.threadId, missing);
      const pending = await engine.pendingJobs(call.threadId);
      const turn = await engine.prepareTurn(call.threadId, { format: call.format, budget: call.budget });
      print({
        type: "answer",
        id: call.id,
        ok: true,
        callId: turn.callId,
        tokens: turn.prompt.tokenCount,
        planVersion: turn.stats.planVersion,
        problems: validateProviderRequest(call.format, turn.request),
        scheduled: turn.stats.backgroundScheduled,
        pendingBefore: pending.queued + pending.running > 0,
      });
    } catch (error) {
      print({
        type: "answer",
        id: call.id,
        ok: false,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      });
    }
  };

  let buffered = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk: string) => {
    buffered += chunk;
    for (let nl = buffered.indexOf("\n"); nl >= 0; nl = buffered.indexOf("\n")) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (line.trim() !== "") void serve(JSON.parse(line) as FleetCall);
    }
  });
  // A worker never outlives its parent.
  process.stdin.on("end", () => process.exit(3));
  process.stdin.resume();
  stopWith = () =>
    engine
      .close()
      .then(() => stores.close())
      .then(() => process.exit(0));
  print({ type: "ready", pid: process.pid });
}

/** A graceful stop: close the engine (running jobs finish, the rest stay queued), then the stores. */
let stopWith: (() => Promise<unknown>) | undefined;
let stopping = false;
process.once("SIGTERM", () => {
  if (stopping) return;
  stopping = true;
  // Asked to stop before the engine was up: nothing of ours is running yet.
  if (stopWith === undefined) process.exit(0);
  void stopWith();
});

main(JSON.parse(process.argv[2] ?? "{}") as FleetWorkerSpec).catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
