import { describe, expect, it } from "vitest";
import {
  createContextEngine,
  createDefaultPipeline,
  createMemoryStores,
  type Pipeline,
  type ProviderFormat,
} from "../src/index.js";
import { generateSampleSession } from "../src/sample/index.js";

const tools = [
  {
    name: "read_file",
    description: "Read a file of the repository.",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  },
  { name: "list_dir" },
];

async function engineWith(messages = 200) {
  const engine = createContextEngine({
    stores: createMemoryStores(),
    budget: { contextWindow: 200_000, reserveOutput: 0 },
  });
  await engine.append("t", generateSampleSession({ messages, seed: 11 }));
  return engine;
}

describe("prepareTurn with the turn's tools", () => {
  const shapes: ReadonlyArray<[ProviderFormat, unknown]> = [
    [
      "openai",
      {
        type: "function",
        function: { name: "read_file", description: tools[0]!.description, parameters: tools[0]!.parameters },
      },
    ],
    [
      "responses",
      {
        type: "function",
        name: "read_file",
        description: tools[0]!.description,
        parameters: tools[0]!.parameters,
        strict: false,
      },
    ],
    [
      "anthropic",
      { name: "read_file", description: tools[0]!.description, input_schema: tools[0]!.parameters },
    ],
  ];
  it.each(shapes)("%s: the request carries the tools in the format's shape", async (format, first) => {
    const engine = await engineWith(20);
    const turn = await engine.prepareTurn("t", { format, tools });
    const sent = (turn.request as unknown as { tools: unknown[] }).tools;
    expect(sent).toHaveLength(2);
    expect(sent[0]).toEqual(first);
    expect(turn.stats.toolTokens).toBeGreaterThan(20);
  });

  it("counts the tools against a plain token budget: history + tools stay within it", async () => {
    const many = Array.from({ length: 30 }, (_, i) => ({ ...tools[0]!, name: `tool_${i}` }));
    const without = await (await engineWith()).prepareTurn("t", { format: "openai", budget: 6_000 });
    const withTools = await (await engineWith()).prepareTurn("t", {
      format: "openai",
      budget: 6_000,
      tools: many,
    });
    expect(withTools.stats.toolTokens).toBeGreaterThan(500);
    expect(withTools.stats.tokens + withTools.stats.toolTokens).toBeLessThanOrEqual(6_000);
    expect(withTools.stats.tokens).toBeLessThan(without.stats.tokens);
  });

  it("Anthropic: cacheControl marks breakpoints; without it the request has none", async () => {
    const engine = await engineWith(40);
    const plain = JSON.stringify((await engine.prepareTurn("t", { format: "anthropic" })).request);
    expect(plain).not.toContain("cache_control");
    const cached = JSON.stringify(
      (await engine.prepareTurn("t", { format: "anthropic", cacheControl: true })).request,
    );
    expect(cached).toContain('"cache_control":{"type":"ephemeral"}');
  });

  it("a pipeline that returns no request body (one of the caller's own) gets the same request built", async () => {
    const inner = createDefaultPipeline();
    const bare: Pipeline = {
      strategies: inner.strategies,
      pendingCalls: inner.pendingCalls,
      run: async ({ request: _request, ...input }) => {
        const out = await inner.run(input);
        expect(out.ok && out.request).toBeUndefined();
        return out;
      },
    };
    const messages = generateSampleSession({ messages: 120, seed: 11 });
    const options = { format: "anthropic", tools, cacheControl: true, budget: 4_000 } as const;
    const requests: string[] = [];
    for (const pipeline of [createDefaultPipeline(), bare]) {
      const engine = createContextEngine({
        stores: createMemoryStores(),
        budget: { model: "gpt-4o" },
        pipeline,
      });
      await engine.append("t", messages);
      const turn = await engine.prepareTurn("t", options);
      expect(turn.stats.compacted).toBe(true);
      requests.push(JSON.stringify(turn.request));
    }
    expect(requests[1]).toBe(requests[0]);
  });
});
