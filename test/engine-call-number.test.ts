/**
 * Events carry the number of the model call they belong to within the thread, and call records keep it: the
 * first turn of a thread is call 1, each turn after it one more, on a fresh engine too (counted from the stored
 * records); events outside a turn carry none.
 */
import { describe, expect, it } from "vitest";
import { createEventSink, inCall, outsideCall } from "../src/engine/engine-events.js";
import { createLoggingEmitter } from "../src/engine/logging-emitter.js";
import { createContextEngine, createMemoryStores, type EngineEvent } from "../src/index.js";
import { openSqliteStores } from "../src/stores/sqlite/index.js";
import { simpleCounter } from "./support/simple-counter.js";

const say = (id: string, text: string) => [
  { id, role: "user" as const, parts: [{ type: "text" as const, text }] },
];

describe("call numbers", () => {
  it("number a thread's calls on events and records, across engines and stores", async () => {
    for (const stores of [createMemoryStores(), openSqliteStores({ path: ":memory:" })]) {
      const events: EngineEvent[] = [];
      const options = { stores, counter: simpleCounter(), budget: { contextWindow: 10_000 } };
      const engine = createContextEngine({ ...options, events: (e) => events.push(e) });
      await engine.append("t", say("u0", "hello"));
      const first = await engine.prepareTurn("t", { format: "openai" });
      await engine.append("t", say("u1", "again"));
      // Another worker (no shared cache) counts on from the stored records.
      const other = createContextEngine({ ...options, cacheThreads: 0, events: (e) => events.push(e) });
      const second = await other.prepareTurn("t", { format: "anthropic" });
      const numbered = (callId: string) =>
        events.find((e) => e.type === "call_recorded" && e.callId === callId)?.callNumber;
      expect(numbered(first.callId)).toBe(1);
      expect(numbered(second.callId)).toBe(2);
      expect((await stores.calls.get(first.callId))?.callNumber).toBe(1);
      expect((await stores.calls.get(second.callId))?.callNumber).toBe(2);
      // Every event of a turn carries it; appends are outside any turn.
      const turnEvents = events.filter((e) => e.type === "rendered" || e.type === "completed");
      expect(turnEvents.map((e) => e.callNumber)).toEqual([1, 1, 2, 2]);
      expect(events.filter((e) => e.type === "appended").every((e) => e.callNumber === undefined)).toBe(true);
      await engine.idle();
    }
  });

  it("work a turn starts that outlives it is outside the call, and the log line names the call", () => {
    const lines: string[] = [];
    const seen: EngineEvent[] = [];
    const sink = createEventSink([(e) => seen.push(e), createLoggingEmitter((l) => lines.push(l))], () => 0);
    inCall(7, () => {
      sink.emit("background_scheduled", "t", { basedOnVersion: 1, replacesVersion: 2 });
      outsideCall(() => sink.emit("background_discarded", "t", { reason: "superseded" }));
    });
    expect(seen.map((e) => e.callNumber)).toEqual([7, undefined]);
    expect(lines[0]).toContain('thread="t" call=7 ');
    expect(lines[1]).not.toContain("call=");
  });
});
