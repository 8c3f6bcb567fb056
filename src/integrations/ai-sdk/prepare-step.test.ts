import { type ModelMessage, tool } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { simpleCounter } from "../../../test/support/simple-counter.js";
import {
  type ContextEngine,
  createContextEngine,
  createMemoryStores,
  type PreparedTurn,
  ValidationError,
} from "../../index.js";
import { contextLedgerMiddleware } from "./ledger-middleware.js";
import { formatForProvider } from "./ledger-options.js";
import { createPrepareStep } from "./prepare-step.js";
import type { LanguageModelCallOptions, WrappedLanguageModel } from "./sdk-types.js";

const newEngine = () =>
  createContextEngine({
    stores: createMemoryStores(),
    counter: simpleCounter(),
    budget: { contextWindow: 1_000_000 },
  });

const model = (provider: string, modelId = "m-1") =>
  ({ provider, modelId }) as unknown as WrappedLanguageModel;

async function recordOf(engine: ContextEngine, turn: PreparedTurn) {
  return (await engine.replay(turn.callId)).record;
}

describe("formatForProvider", () => {
  it.each([
    ["anthropic.messages", "anthropic"],
    ["vertex.anthropic.messages", "anthropic"],
    ["openai.responses", "responses"],
    ["azure.responses", "responses"],
    ["openai.chat", "openai"],
    ["google.generative-ai", "openai"],
    [undefined, "openai"],
  ] as const)("%s renders as %s", (provider, format) => {
    expect(formatForProvider(provider)).toBe(format);
  });
});

describe("createPrepareStep", () => {
  const tools = {
    weather: tool({
      description: "The weather in a city",
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => `sunny in ${city}`,
    }),
  };

  it("logs the system prompt once, returns it apart, and renders for the model's provider", async () => {
    const engine = newEngine();
    const turns: PreparedTurn[] = [];
    const prepareStep = createPrepareStep({
      engine,
      threadId: "t",
      system: "be brief",
      tools,
      onTurn: (turn) => {
        turns.push(turn);
      },
    });
    const messages: ModelMessage[] = [{ role: "user", content: "weather in Oslo?" }];
    const out = await prepareStep({ messages, model: model("anthropic.messages", "claude-x") });
    expect(out).toEqual({ system: [{ role: "system", content: "be brief" }], messages });
    const record = await recordOf(engine, turns[0]!);
    expect(record).toMatchObject({ format: "anthropic", model: "claude-x" });
    // The tools reached the turn: counted, and written into the engine's request as JSON Schema.
    expect(turns[0]!.stats.toolTokens).toBeGreaterThan(0);
    expect((turns[0]!.request as { tools?: unknown }).tools).toEqual([
      expect.objectContaining({
        name: "weather",
        description: "The weather in a city",
        input_schema: expect.objectContaining({ properties: { city: { type: "string" } } }),
      }),
    ]);
    await prepareStep({ messages, model: "openai/gpt-5" });
    expect((await engine.explain("t")).logSeq).toBe(2);
    expect(await recordOf(engine, turns[1]!)).toMatchObject({ format: "openai", model: "openai/gpt-5" });
  });

  it("an explicit format and model name win over the model's", async () => {
    const engine = newEngine();
    let turn: PreparedTurn | undefined;
    const prepareStep = createPrepareStep({
      engine,
      threadId: "t",
      format: "responses",
      model: "calibrated-name",
      onTurn: (t) => {
        turn = t;
      },
    });
    const out = await prepareStep({
      messages: [{ role: "user", content: "hi" }],
      model: model("anthropic.messages"),
    });
    expect(out).toEqual({ messages: [{ role: "user", content: "hi" }] });
    expect(await recordOf(engine, turn!)).toMatchObject({ format: "responses", model: "calibrated-name" });
  });

  it("a step's messages that are not model messages fail with the message index and field", async () => {
    const prepareStep = createPrepareStep({ engine: newEngine(), threadId: "t" });
    const messages = [
      { role: "user", content: "ok" },
      { role: "assistant", content: [{ type: "tool-call" }] },
    ];
    const error = await prepareStep({ messages: messages as ModelMessage[] }).catch((e) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.where).toEqual({ index: 1, field: "content[0].toolCallId" });
  });

  it.each([
    [{ engine: undefined, threadId: "t" }, "engine"],
    [{ engine: "x", threadId: "t" }, "engine"],
    [{ threadId: "" }, "threadId"],
    [{ threadId: "t", format: "gemini" }, "format"],
    [{ threadId: "t", budjet: 100 }, "budjet"],
    [{ threadId: "t", system: 42 }, "system"],
    [{ threadId: "t", onTurn: "log" }, "onTurn"],
  ] as const)("refuses bad options at once: %j names %s", (options, field) => {
    const withEngine = { engine: newEngine(), ...options };
    let error: unknown;
    try {
      createPrepareStep(withEngine as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).where.field).toBe(field);
  });
});

describe("contextLedgerMiddleware", () => {
  it("replaces the call's prompt by the thread's, counting the call's tools, in the provider's format", async () => {
    const engine = newEngine();
    const turns: PreparedTurn[] = [];
    const middleware = contextLedgerMiddleware({
      engine,
      threadId: "t",
      onTurn: (turn) => {
        turns.push(turn);
      },
    });
    const params: LanguageModelCallOptions = {
      prompt: [
        { role: "system", content: "be brief" },
        { role: "user", content: [{ type: "text", text: "hi" }] },
      ],
      tools: [
        {
          type: "function",
          name: "lookup",
          description: "Look a word up",
          inputSchema: { type: "object", properties: { word: { type: "string" } } },
        },
      ],
    };
    const out = await middleware.transformParams!({
      type: "generate",
      params,
      model: model("openai.responses", "gpt-5"),
    });
    expect(out).toEqual(params);
    expect(turns[0]!.stats.toolTokens).toBeGreaterThan(0);
    expect(await recordOf(engine, turns[0]!)).toMatchObject({ format: "responses", model: "gpt-5" });
    // The same prompt again (a retried call) appends nothing.
    await middleware.transformParams!({ type: "stream", params, model: model("openai.responses") });
    expect((await engine.explain("t")).logSeq).toBe(2);
  });

  it("refuses bad options at once", () => {
    expect(() =>
      contextLedgerMiddleware({ engine: newEngine(), threadId: "t", system: "x" } as never),
    ).toThrow(/system is not an option/);
  });
});
