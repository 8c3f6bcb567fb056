/**
 * Four engines, each with its own PostgreSQL pool, appending to one thread at once: at the default conflict retry
 * settings no append surfaces a `VersionConflictError`, and the log holds every message exactly once, each
 * writer's in the order it appended them. PostgreSQL runs on a throwaway cluster (as in the store conformance
 * suite); without server binaries the test is skipped locally and fails in CI.
 *
 * `CONFLICT_APPENDS` sets the appends per writer (default 250, which keeps the suite quick on a busy machine;
 * `CONFLICT_APPENDS=1000 npx vitest run test/engine-conflicts-postgres.test.ts` is the full figure).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ContextEngine,
  createContextEngine,
  type EngineEvent,
  VersionConflictError,
} from "../src/index.js";
import { STORE_BACKENDS, StoreOpener } from "./support/store-backends.js";

const WRITERS = 4;
const APPENDS = Number(process.env.CONFLICT_APPENDS ?? 250);
const budget = { contextWindow: 8_000, reserveOutput: 500 };
const backend = STORE_BACKENDS.find((b) => b.name === "postgres")!;
const reason = backend.unavailable();

const text = (m: { message: { parts: ReadonlyArray<unknown> } }) =>
  (m.message.parts[0] as { text: string }).text;

describe.skipIf(reason !== undefined && process.env.CI !== "true")(
  "concurrent engine writers on PostgreSQL",
  () => {
    const opener = new StoreOpener(backend);
    beforeAll(() => backend.start(), 120_000);
    afterAll(async () => {
      await opener.closeAll();
      await backend.stop();
    });

    it(`${WRITERS} engines × ${APPENDS} appends on one thread: none surfaces a conflict, each message lands once in its writer's order`, {
      timeout: 600_000,
    }, async () => {
      if (reason !== undefined) throw new Error(reason);
      const { target } = await opener.fresh();
      const conflicts: EngineEvent[] = [];
      const retries: EngineEvent[] = [];
      const engines: ContextEngine[] = [];
      for (let w = 0; w < WRITERS; w++) {
        // Each writer its own stores, so its own pool and connections, like separate processes.
        const stores = await opener.at(target);
        const events = (e: EngineEvent) => {
          if (e.type === "version_conflict") conflicts.push(e);
          if (e.type === "conflict_retry") retries.push(e);
        };
        engines.push(createContextEngine({ stores, budget, events }));
      }
      const failures: unknown[] = [];
      let slowest = 0;
      const t0 = performance.now();
      await Promise.all(
        engines.map(async (engine, w) => {
          for (let i = 0; i < APPENDS; i++) {
            const started = performance.now();
            await engine
              .append("shared", [{ role: "user", parts: [{ type: "text", text: `w${w} ${i}` }] }])
              .catch((error: unknown) => failures.push(error));
            slowest = Math.max(slowest, performance.now() - started);
          }
        }),
      );
      const seconds = (performance.now() - t0) / 1_000;
      const delays = retries.map((e) => (e.type === "conflict_retry" ? e.delayMs : 0));
      // How many appends needed more than k attempts (k = 1, 2, …): the tail the retry count must cover.
      const beyond = new Map<number, number>();
      for (const e of retries)
        if (e.type === "conflict_retry") beyond.set(e.attempt, (beyond.get(e.attempt) ?? 0) + 1);
      console.info(`appends that lost attempt k, by k: ${JSON.stringify(Object.fromEntries(beyond))}`);
      console.info(
        `${WRITERS} × ${APPENDS} PostgreSQL appends: ${seconds.toFixed(1)} s, ${conflicts.length} conflicts, ` +
          `${retries.length} retries (longest pause ${Math.max(0, ...delays).toFixed(1)} ms), ` +
          `slowest append ${slowest.toFixed(0)} ms, ${failures.length} surfaced`,
      );
      expect(failures.filter((f) => f instanceof VersionConflictError)).toEqual([]);
      expect(failures).toEqual([]);

      const reader = await opener.at(target);
      const log = await reader.log.read("shared");
      const texts = log.map(text);
      expect(texts.length).toBe(WRITERS * APPENDS);
      expect(new Set(texts).size).toBe(WRITERS * APPENDS);
      for (let w = 0; w < WRITERS; w++) {
        const mine = texts.filter((t) => t.startsWith(`w${w} `)).map((t) => Number(t.split(" ")[1]));
        expect(mine).toEqual(Array.from({ length: APPENDS }, (_, i) => i));
      }
      // The race was real: writers did collide, and the retries absorbed it.
      expect(conflicts.length).toBeGreaterThan(0);
      expect(retries.length).toBe(conflicts.length);
    });
  },
);
