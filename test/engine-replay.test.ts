import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it, vi } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import { createMemoryStores } from "../src/stores/memory/memory-stores.js";
import { openSqliteStores } from "../src/stores/sqlite/index.js";
import type { Stores } from "../src/stores/stores.js";
import { simpleCounter } from "./support/simple-counter.js";
import { stepConversation } from "./support/tool-rounds.js";

const dir = mkdtempSync(join(tmpdir(), "context-ledger-replay-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function engineOn(stores: Stores) {
  return createContextEngine({ stores, counter: simpleCounter(), budget: { contextWindow: 100_000 } });
}

/** Runs a thread turn by turn under a small budget and returns the call ids. */
async function record(stores: Stores): Promise<string[]> {
  const engine = engineOn(stores);
  const messages = stepConversation(16);
  const ids: string[] = [];
  for (let i = 0; i < messages.length; i += 4) {
    await engine.append("t", messages.slice(i, i + 4));
    ids.push((await engine.prepareTurn("t", { format: "openai", budget: 1_500 })).callId);
    await engine.idle();
  }
  return ids;
}

describe("replay on SQLite", () => {
  it("verifies every call, then finds a message rewritten in the database", async () => {
    const path = join(dir, "tamper.db");
    const stores = openSqliteStores({ path });
    const ids = await record(stores);
    const replays = await Promise.all(ids.map((id) => engineOn(stores).replay(id)));
    expect(replays.every((r) => r.ok)).toBe(true);
    // What each call did with r7 (seq 31): not there yet, sent with its content, or compacted into a summary.
    const fate = replays.map((r) => {
      if (r.logSeq <= 31) return "absent";
      const m = r.prompt!.messages.find((x) => x.provenance.sourceIds.includes("r7"));
      if (m?.provenance.kind === "original") return "sent";
      return m?.provenance.kind === "cleared" ? "cleared" : "compacted";
    });
    expect(fate).toContain("absent");
    expect(fate).toContain("sent");
    expect(fate.some((f) => f === "compacted" || f === "cleared")).toBe(true);

    // Someone edits the stored tool result behind the ledger's back (its stored hash is left as it was).
    const db = new Database(path);
    db.prepare(
      "UPDATE messages SET body = json_set(body, '$.parts[0].content', 'forged') WHERE thread_id = 't' AND seq = 31",
    ).run();
    db.close();
    const auditor = engineOn(stores);
    for (const [i, id] of ids.entries()) {
      const replay = await auditor.replay(id);
      if (fate[i] === "absent") {
        expect(replay.ok).toBe(true);
        continue;
      }
      expect(replay.ok).toBe(false);
      expect(replay.problems).toEqual([
        expect.stringMatching(/^message "r7" \(seq 31\) no longer matches the content hash stored with it/),
      ]);
      if (fate[i] === "cleared") {
        // A stub shows the body's size, key lines are recorded in the plan: the request may or may not change,
        // and either way the forged message is named.
        expect(replay.mismatch).toMatch(/message "r7"/);
      } else if (fate[i] === "sent") {
        expect(replay.actualHash).not.toBe(replay.expectedHash);
        expect(replay.mismatch).toMatch(/^request hash differs: message "r7"/);
      } else {
        expect(replay.actualHash).toBe(replay.expectedHash);
        expect(replay.mismatch).toMatch(/^the request hash matches, but message "r7"/);
      }
    }
    await stores.close();
  });
});

describe("replay after a renderer change", () => {
  it("reports the mismatch and names the render format version now in use", async () => {
    const stores = createMemoryStores();
    const ids = await record(stores);
    expect((await engineOn(stores).replay(ids[0]!)).ok).toBe(true);
    vi.resetModules();
    vi.doMock("../src/texts/placeholders.js", async (importOriginal) => ({
      ...(await importOriginal<typeof import("../src/texts/placeholders.js")>()),
      RENDER_FORMAT_VERSION: "cl-render/999",
    }));
    const later = await import("../src/context-engine.js");
    const engine = later.createContextEngine({
      stores,
      counter: simpleCounter(),
      budget: { contextWindow: 100_000 },
    });
    const replay = await engine.replay(ids[0]!);
    expect(replay.ok).toBe(false);
    expect(replay.mismatch).toMatch(
      /every stored message matches its stored hash: the renderer \(format version now cl-render\/999\)/,
    );
    vi.doUnmock("../src/texts/placeholders.js");
  });
});
