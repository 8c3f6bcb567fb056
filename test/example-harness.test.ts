/**
 * The example agent harness end to end: 300+ turns through the engine and the official SDK against the local
 * server, without one rejected request. The negative controls prove the server really checks: an orphaned tool
 * message, an over-window request and the same run without calibration are all turned away.
 */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAgentHarness } from "../examples/agent-harness.js";
import { FAKE_TOOLS } from "../examples/fake-tools.js";
import type { HarnessSummary } from "../examples/harness-report.js";
import { type LocalOpenAIServer, startLocalOpenAIServer } from "../examples/local-openai-server.js";

type Chat = OpenAI.Chat.ChatCompletionMessageParam;

describe("example agent harness", () => {
  let summary: HarnessSummary;

  beforeAll(async () => {
    summary = await runAgentHarness({ turns: 310 });
  }, 120_000);

  it("drives 300+ turns without a single rejection", () => {
    expect(summary.rejections).toEqual([]);
    expect(summary.turns).toBeGreaterThanOrEqual(300);
    expect(summary.requests).toBe(summary.turns);
    expect(summary.maxRequestTokens).toBeLessThanOrEqual(summary.contextWindow);
  });

  it("compacts along the way and keeps the newest tool results", () => {
    expect(summary.compactedTurns).toBeGreaterThan(0);
    expect(summary.planVersion).toBeGreaterThan(0);
    expect(summary.toolCalls).toBeGreaterThan(summary.turns);
    expect(summary.latestResults.checked).toBeGreaterThan(0);
    expect(summary.latestResults.intact).toBe(summary.latestResults.checked);
  });

  it("learns the server's token count from usage", () => {
    expect(summary.calibration.samples).toBeGreaterThanOrEqual(3);
    // The server tokenizes the request JSON, so it counts more than the engine does, but not wildly more.
    expect(summary.calibration.ratio).toBeGreaterThan(1);
    expect(summary.calibration.ratio).toBeLessThan(1.5);
  });

  it("replays every call to the hash and the messages that were sent", () => {
    expect(summary.replays.checked).toBe(summary.turns);
    expect(summary.replays.ok).toBe(summary.replays.checked);
  });

  it("is rejected by the same server once calibration is off", async () => {
    const uncalibrated = await runAgentHarness({ turns: 60, calibration: { maxRatio: 1 }, replayEvery: 10 });
    expect(uncalibrated.rejections.length).toBe(1);
    expect(uncalibrated.rejections[0]).toContain("context_length_exceeded");
    expect(uncalibrated.turns).toBeLessThan(60);
  });
});

describe("local OpenAI server: negative controls", () => {
  let server: LocalOpenAIServer;
  let client: OpenAI;
  const ask = async (messages: Chat[], extra: { readonly max_completion_tokens?: number } = {}) => {
    try {
      return await client.chat.completions.create({
        model: "gpt-4o",
        messages,
        tools: [...FAKE_TOOLS],
        ...extra,
      });
    } catch (error) {
      return error as InstanceType<typeof OpenAI.APIError>;
    }
  };

  beforeAll(async () => {
    server = await startLocalOpenAIServer({ contextWindow: 2_000, apiKey: "sk-control" });
    client = new OpenAI({ apiKey: "sk-control", baseURL: server.baseURL, maxRetries: 0 });
  });
  afterAll(() => server.close());

  it("answers a valid request with tool calls and usage in its own count", async () => {
    const reply = await ask([{ role: "user", content: "Fix the failing test." }]);
    expect(reply).not.toBeInstanceOf(Error);
    const completion = reply as OpenAI.Chat.ChatCompletion;
    expect(completion.choices[0]?.message.tool_calls?.length).toBeGreaterThan(0);
    expect(completion.usage?.prompt_tokens).toBe(
      server.countTokens([{ role: "user", content: "Fix the failing test." }]) +
        server.countTokens(FAKE_TOOLS),
    );
  });

  it("rejects an orphaned tool message with 400", async () => {
    const error = await ask([
      { role: "user", content: "hi" },
      { role: "tool", tool_call_id: "call_lost", content: "a result without its call" },
    ]);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect((error as InstanceType<typeof OpenAI.APIError>).param).toBe("messages.[1].role");
  });

  it("rejects a call left without its result with 400", async () => {
    const error = await ask([
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_a", type: "function", function: { name: "search", arguments: "{}" } }],
      },
      { role: "user", content: "next" },
    ]);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toContain("Unanswered: call_a");
  });

  it("rejects a request over the context window with 400 context_length_exceeded", async () => {
    const error = await ask([{ role: "user", content: "word ".repeat(1_500) }], {
      max_completion_tokens: 600,
    });
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe("context_length_exceeded");
  });

  it("counts every turned-away request", () => {
    const stats = server.stats();
    expect(stats.rejected.map((r) => r.rejection.code)).toEqual([null, null, "context_length_exceeded"]);
    expect(stats.accepted).toBe(1);
  });
});
