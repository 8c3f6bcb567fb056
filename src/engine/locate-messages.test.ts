import { describe, expect, it } from "vitest";
import { simpleCounter } from "../../test/support/simple-counter.js";
import { createContextEngine } from "../context-engine.js";
import { ValidationError } from "../errors/ledger-error.js";
import { createMemoryStores } from "../stores/memory/memory-stores.js";

const text = (id: string) => ({ id, role: "user" as const, parts: [{ type: "text" as const, text: id }] });

describe("engine.locateMessages", () => {
  it("names the seqs of the ids the log holds, its length and its last id", async () => {
    const engine = createContextEngine({
      stores: createMemoryStores(),
      counter: simpleCounter(),
      budget: { contextWindow: 100_000 },
    });
    await engine.append("t", [text("a"), text("b"), text("c")]);
    const found = await engine.locateMessages("t", ["c", "x", "a"]);
    expect(found.length).toBe(3);
    expect(found.lastId).toBe("c");
    expect([...found.seqs]).toEqual([
      ["c", 2],
      ["a", 0],
    ]);
  });

  it("reads an unknown thread as an empty log, and refuses ids that are not strings", async () => {
    const engine = createContextEngine({
      stores: createMemoryStores(),
      counter: simpleCounter(),
      budget: { contextWindow: 100_000 },
    });
    const found = await engine.locateMessages("nobody", ["a"]);
    expect(found).toEqual({ length: 0, seqs: new Map() });
    await expect(engine.locateMessages("t", [1] as never)).rejects.toThrow(ValidationError);
  });

  it("sees what another engine on the same stores appended", async () => {
    const stores = createMemoryStores();
    const one = createContextEngine({ stores, counter: simpleCounter(), budget: { contextWindow: 100_000 } });
    const two = createContextEngine({ stores, counter: simpleCounter(), budget: { contextWindow: 100_000 } });
    await one.append("t", [text("a")]);
    expect((await two.locateMessages("t", ["a"])).seqs.get("a")).toBe(0);
    await two.append("t", [text("b")]);
    expect(await one.locateMessages("t", ["b"])).toMatchObject({ length: 2, lastId: "b" });
  });
});
