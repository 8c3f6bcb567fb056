import { describe, expect, it } from "vitest";
import { createContextEngine, createMemoryStores, ValidationError } from "../src/index.js";

async function engineWithThread() {
  const stores = createMemoryStores();
  const engine = createContextEngine({ stores, budget: { contextWindow: 8_000, reserveOutput: 500 } });
  await engine.append("t", [
    { role: "system", parts: [{ type: "text", text: "Be brief." }] },
    { role: "user", parts: [{ type: "text", text: "Hello" }] },
  ]);
  return { engine, stores };
}

const cases: ReadonlyArray<[string, Record<string, unknown>, string]> = [
  ["an injection that is a number", { injected: [5] }, "injected[0]"],
  ["an injection whose text is a number", { injected: [{ text: 5 }] }, "injected[0]"],
  [
    "an injection with a role the renderer cannot send",
    { injected: [{ text: "x", role: "tool" }] },
    "injected[0]",
  ],
  ["injected as a string", { injected: "xyz" }, "injected"],
  [
    "a rehydrated artifact whose content is a number",
    { rehydrated: [{ artifactId: "a", content: 5 }] },
    "rehydrated[0].content",
  ],
  [
    "a rehydrated artifact without an id",
    { rehydrated: [{ artifactId: "", content: "x" }] },
    "rehydrated[0].artifactId",
  ],
  ["a signal that is a string", { signal: "x" }, "signal"],
  ["a misspelt budget", { budjet: 1 }, "budjet"],
  ["a pipeline, which belongs to the engine", { pipeline: {} }, "pipeline"],
  ["a negative budget", { budget: -3 }, "budget"],
  ["an empty model", { model: "" }, "model"],
  ["an unknown format", { format: "gemini" }, "format"],
];

describe("prepareTurn options", () => {
  it.each(cases)("refuses %s, naming the field, and records no call", async (_, extra, field) => {
    const { engine, stores } = await engineWithThread();
    const attempt = engine.prepareTurn("t", { format: "openai", ...extra } as never);
    await expect(attempt).rejects.toBeInstanceOf(ValidationError);
    await expect(attempt).rejects.toMatchObject({ where: { field, threadId: "t" } });
    expect(await stores.calls.list("t")).toEqual([]);
  });

  it("refuses tool parameters nested 100,000 deep with a ValidationError naming the path, not a stack overflow", async () => {
    const { engine, stores } = await engineWithThread();
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 100_000; i++) deep = { d: deep };
    const attempt = engine.prepareTurn("t", {
      format: "openai",
      tools: [{ name: "x", parameters: { p: deep } }],
    });
    await expect(attempt).rejects.toBeInstanceOf(ValidationError);
    await expect(attempt).rejects.toThrow(/nests deeper than 64 levels/);
    await expect(attempt).rejects.toMatchObject({
      where: { field: expect.stringMatching(/^tools\[0\]\.parameters\.p\.d\./) },
    });
    expect(await stores.calls.list("t")).toEqual([]);
  });

  it("takes strings and { text, role } injections, rehydrated artifacts, a model, a budget and a signal", async () => {
    const { engine } = await engineWithThread();
    const turn = await engine.prepareTurn("t", {
      format: "openai",
      injected: ["note", { text: "rule", role: "system" }],
      rehydrated: [{ artifactId: "art_1", content: "the content" }],
      model: "gpt-4o",
      budget: 6_000,
      signal: new AbortController().signal,
    });
    const json = JSON.stringify(turn.request);
    expect(json).toContain("note");
    expect(json).toContain("the content");
  });
});
