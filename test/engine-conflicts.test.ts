/**
 * Several engines appending to one thread at once: each append that loses a race reloads and tries again after a
 * jittered, growing pause, so with the default settings none of them surfaces a `VersionConflictError`.
 */
import { describe, expect, it } from "vitest";
import {
  type ContextEngine,
  createContextEngine,
  createMemoryStores,
  type EngineEvent,
  type Stores,
} from "../src/index.js";

const budget = { contextWindow: 8_000, reserveOutput: 500 };

/** `writers` engines over `stores` (each its own cache), each appending `appends` one-message batches. */
async function race(storesFor: () => Promise<Stores>, writers: number, appends: number) {
  const conflicts: EngineEvent[] = [];
  const engines: ContextEngine[] = [];
  for (let w = 0; w < writers; w++) {
    const events = (e: EngineEvent) => {
      if (e.type === "version_conflict") conflicts.push(e);
    };
    engines.push(createContextEngine({ stores: await storesFor(), budget, events }));
  }
  const failures: unknown[] = [];
  await Promise.all(
    engines.map(async (engine, w) => {
      for (let i = 0; i < appends; i++) {
        await engine
          .append("shared", [{ role: "user", parts: [{ type: "text", text: `writer ${w} message ${i}` }] }])
          .catch((error: unknown) => failures.push(error));
      }
    }),
  );
  return { engines, conflicts, failures };
}

describe("concurrent writers on one thread", () => {
  it("4 engines × 250 appends on shared memory stores: every append lands, none surfaces a conflict", async () => {
    const stores = createMemoryStores();
    const { conflicts, failures } = await race(async () => stores, 4, 250);
    expect(failures).toEqual([]);
    const log = await stores.log.read("shared");
    expect(log.length).toBe(1_000);
    // Races did happen (the retries are what absorbed them).
    expect(conflicts.length).toBeGreaterThan(0);
    const texts = new Set(log.map((m) => (m.message.parts[0] as { text: string }).text));
    expect(texts.size).toBe(1_000);
  });

  it("without pauses or retries the same race surfaces conflicts (the test can fail)", async () => {
    const stores = createMemoryStores();
    const engines = Array.from({ length: 4 }, () =>
      createContextEngine({ stores, budget, maxConflictRetries: 0, conflictBackoff: { initialMs: 0 } }),
    );
    const outcomes = await Promise.allSettled(
      engines.flatMap((engine, w) =>
        Array.from({ length: 20 }, (_, i) =>
          engine.append("shared", [{ role: "user", parts: [{ type: "text", text: `w${w} ${i}` }] }]),
        ),
      ),
    );
    expect(outcomes.some((o) => o.status === "rejected")).toBe(true);
  });
});
