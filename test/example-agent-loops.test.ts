/**
 * The README's agent loops (examples/agent-openai.ts, examples/agent-anthropic.ts) run with the real SDKs against
 * local servers that speak the wire formats and turn away what the real APIs turn away: the scripted model calls
 * `read_file` twice in parallel (one file exists, one does not), then answers with what the results said. Each
 * loop must send valid requests carrying the tools, answer every call, record usage and leave a replayable log.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { main as anthropicMain, runAnthropicAgent } from "../examples/agent-anthropic.js";
import { main as openaiMain, runOpenAIAgent } from "../examples/agent-openai.js";
import { type LocalOpenAIServer, startLocalOpenAIServer } from "../examples/local-openai-server.js";
import type { ScriptedReply } from "../examples/scripted-agent-model.js";
import { createContextEngine, createMemoryStores, type Stores } from "../src/index.js";
import {
  checkMessagesRequest,
  type LocalAnthropicServer,
  startLocalAnthropicServer,
} from "./support/local-anthropic-server.js";

const dir = mkdtempSync(join(tmpdir(), "cl-agent-loops-"));
const NOTES = join(dir, "notes.txt");
const MISSING = join(dir, "missing.txt");
writeFileSync(NOTES, "The test command is `vitest run`.\n");

type Json = Record<string, unknown>;
const lastOf = (body: Readonly<Json>): Json => (body.messages as Json[]).at(-1) ?? {};

/** The scripted model's answer: what each result said, so the test sees the results reached the model. */
const answerFrom = (results: ReadonlyArray<string>) =>
  `From the files: ${results.map((r) => r.split("\n")[0]).join(" | ")}`;

async function checkThread(stores: Stores, threadId: string, engine: ReturnType<typeof createContextEngine>) {
  const calls = await stores.calls.list(threadId);
  expect(calls).toHaveLength(2);
  for (const call of calls) {
    expect(call.usage?.inputTokens).toBeGreaterThan(0);
    expect((await engine.replay(call.callId)).ok).toBe(true);
  }
  // system, user, the reply with two calls, two results, the final answer
  const stored = await stores.log.read(threadId);
  expect(stored.map((s) => s.message.role)).toEqual([
    "system",
    "user",
    "assistant",
    "tool",
    "tool",
    "assistant",
  ]);
}

describe("examples/agent-openai.ts", () => {
  let server: LocalOpenAIServer;
  const seen: Json[] = [];
  const model = (body: Readonly<Json>): ScriptedReply => {
    seen.push(body as Json);
    const messages = body.messages as Json[];
    if (lastOf(body).role !== "tool") {
      const toolCalls = [NOTES, MISSING].map((path, i) => ({
        id: `call_${seen.length}_${i}`,
        name: "read_file",
        arguments: JSON.stringify({ path }),
      }));
      return { content: null, toolCalls };
    }
    return {
      content: answerFrom(messages.filter((m) => m.role === "tool").map((m) => String(m.content))),
      toolCalls: [],
    };
  };

  beforeAll(async () => {
    server = await startLocalOpenAIServer({ apiKey: "sk-local", model });
  });
  afterAll(() => server.close());
  afterEach(() => vi.unstubAllEnvs());

  it("runs to the final answer with the official SDK: tools offered, every call answered, usage recorded", async () => {
    const stores = createMemoryStores();
    const engine = createContextEngine({ stores, budget: { model: "gpt-4o" } });
    const client = new OpenAI({ apiKey: "sk-local", baseURL: server.baseURL });
    const answer = await runOpenAIAgent(client, engine, "t-openai", "What is the test command?");
    expect(answer).toMatch(/^From the files: The test command is `vitest run`\. \| error: ENOENT/);
    expect(server.stats().rejected).toEqual([]);
    expect(server.stats().accepted).toBe(2);
    const [first, second] = seen.slice(-2) as [Json, Json];
    expect(first.tools).toEqual([
      expect.objectContaining({ type: "function", function: expect.objectContaining({ name: "read_file" }) }),
    ]);
    expect(second.tools).toEqual(first.tools);
    await checkThread(stores, "t-openai", engine);
  });

  it("main() runs the same loop with a client configured from the environment", async () => {
    vi.stubEnv("OPENAI_API_KEY", "sk-local");
    vi.stubEnv("OPENAI_BASE_URL", server.baseURL);
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    await openaiMain("What is the test command?");
    expect(log).toHaveBeenCalledWith(expect.stringMatching(/^From the files: The test command/));
    log.mockRestore();
  });
});

describe("examples/agent-anthropic.ts", () => {
  let server: LocalAnthropicServer;
  beforeAll(async () => {
    server = await startLocalAnthropicServer((body, n) => {
      const last = lastOf(body);
      const results = Array.isArray(last.content)
        ? (last.content as Json[]).filter((b) => b.type === "tool_result")
        : [];
      if (results.length === 0) {
        return [
          { type: "text", text: "Reading both files.", citations: null },
          ...[NOTES, MISSING].map((path, i) => ({
            type: "tool_use",
            id: `toolu_${n}_${i}`,
            name: "read_file",
            input: { path },
          })),
        ];
      }
      const texts = results.map((r) =>
        typeof r.content === "string" ? r.content : JSON.stringify(r.content),
      );
      return [{ type: "text", text: answerFrom(texts), citations: null }];
    });
  });
  afterAll(() => server.close());
  afterEach(() => vi.unstubAllEnvs());

  it("runs to the final answer with the official SDK: tools, cache_control, every call answered, usage recorded", async () => {
    const stores = createMemoryStores();
    const engine = createContextEngine({ stores, budget: { model: "claude-sonnet-4" } });
    const client = new Anthropic({ apiKey: "sk-ant-local", baseURL: server.url });
    const answer = await runAnthropicAgent(client, engine, "t-anthropic", "What is the test command?");
    expect(answer).toMatch(/^From the files: The test command is `vitest run`\. \| error: ENOENT/);
    expect(server.rejections).toEqual([]);
    const [first, second] = server.requests.slice(-2) as [Json, Json];
    expect(first.tools).toEqual([
      expect.objectContaining({ name: "read_file", input_schema: expect.any(Object) }),
    ]);
    for (const body of [first, second])
      expect(JSON.stringify(body)).toContain('"cache_control":{"type":"ephemeral"}');
    await checkThread(stores, "t-anthropic", engine);
    // The calibration counts the whole prompt, the cached part included.
    const calls = await stores.calls.list("t-anthropic");
    expect(calls[1]?.usage?.cachedInputTokens).toBeGreaterThan(0);
    expect(calls[1]?.usage?.inputTokens).toBeGreaterThan(calls[1]?.usage?.cachedInputTokens ?? 0);
  });

  it("main() runs the same loop with a client configured from the environment", async () => {
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-ant-local");
    vi.stubEnv("ANTHROPIC_BASE_URL", server.url);
    const log = vi.spyOn(console, "log").mockImplementation(() => {});
    await anthropicMain("What is the test command?");
    expect(log).toHaveBeenCalledWith(expect.stringMatching(/^From the files: The test command/));
    log.mockRestore();
  });

  it("the local server refuses what the real API refuses, so a loop that skipped a result would fail", () => {
    const user = { role: "user", content: "hi" };
    const call = {
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_1", name: "read_file", input: {} }],
    };
    const result = {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "ok" }],
    };
    expect(checkMessagesRequest({ max_tokens: 10, messages: [user, call, result] })).toBeUndefined();
    expect(checkMessagesRequest({ messages: [user] })).toMatch(/max_tokens/);
    expect(checkMessagesRequest({ max_tokens: 10, messages: [user, call, user] })).toMatch(/tool_result/);
    expect(checkMessagesRequest({ max_tokens: 10, messages: [user, call] })).toMatch(/no tool_result/);
    expect(checkMessagesRequest({ max_tokens: 10, messages: [call] })).toMatch(/alternate/);
    const marked = { type: "text", text: "x", cache_control: { type: "ephemeral" } };
    const five = { role: "user", content: [marked, marked, marked, marked, marked] };
    expect(checkMessagesRequest({ max_tokens: 10, messages: [five] })).toMatch(/maximum of 4/);
  });
});
