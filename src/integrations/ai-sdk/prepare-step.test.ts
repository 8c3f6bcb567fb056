import { type ModelMessage, stepCountIs, streamText, tool } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import * as z from "zod";
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

type StreamResult = Awaited<ReturnType<MockLanguageModelV3["doStream"]>>;
type StreamPart = StreamResult["stream"] extends ReadableStream<infer P> ? P : never;

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

  it("works for streamText: each streamed step goes out compacted, and the thread logs the run once", async () => {
    const engine = newEngine();
    const prompts: number[] = [];
    const usage = {
      inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: 1, text: 1, reasoning: undefined },
    };
    const streamed = new MockLanguageModelV3({
      doStream: async ({ prompt }) => {
        prompts.push(prompt.length);
        const step = prompts.length;
        const chunks: StreamPart[] =
          step < 4
            ? [
                {
                  type: "tool-call",
                  toolCallId: `c${step}`,
                  toolName: "weather",
                  input: `{"city":"c${step}"}`,
                },
                {
                  type: "finish",
                  finishReason: { unified: "tool-calls", raw: undefined },
                  usage,
                },
              ]
            : [
                { type: "text-start", id: "t" },
                { type: "text-delta", id: "t", delta: "all sunny" },
                { type: "text-end", id: "t" },
                {
                  type: "finish",
                  finishReason: { unified: "stop", raw: undefined },
                  usage,
                },
              ];
        return { stream: convertArrayToReadableStream(chunks) };
      },
    });
    const turns: PreparedTurn[] = [];
    const prepareStep = createPrepareStep({
      engine,
      threadId: "s",
      tools,
      budget: 1_000,
      onTurn: (turn) => {
        turns.push(turn);
      },
    });
    const result = streamText({
      model: streamed,
      prompt: "weather in three cities?",
      tools,
      prepareStep,
      stopWhen: stepCountIs(10),
    });
    expect(await result.text).toBe("all sunny");
    // The prompts grew by one call and one result per step; the thread holds the task and three rounds.
    expect(prompts).toEqual([1, 3, 5, 7]);
    expect(turns.map((t) => t.stats.logSeq)).toEqual([1, 3, 5, 7]);
    for (const turn of turns) expect((await engine.replay(turn.callId)).ok).toBe(true);
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
    [{ threadId: "t", budget: "lots" }, "budget"],
    [{ threadId: "t", budget: -5 }, "budget"],
    [{ threadId: "t", model: "" }, "model"],
    [{ threadId: "t", cacheControl: "yes" }, "cacheControl"],
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
