/**
 * The model summarizers against real HTTP servers that speak the OpenAI and Anthropic protocols, through the
 * official SDKs: every failure mode must come back as a SummarizerError with the right reason, never a result.
 */
import OpenAI from "openai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SummarizerFailure } from "../src/errors/ledger-error.js";
import { SummarizerError } from "../src/errors/ledger-error.js";
import { ThreadLog } from "../src/log/thread-log.js";
import type { Summarizer, SummaryRequest } from "../src/strategies/summarizer.js";
import { createAnthropicSummarizer } from "../src/strategies/summarizers/anthropic-summarizer.js";
import { createOpenAISummarizer } from "../src/strategies/summarizers/openai-summarizer.js";
import { SUMMARY_PROMPT_VERSION } from "../src/strategies/summarizers/summary-prompt.js";
import { startFakeAnthropicServer } from "./support/fake-anthropic-server.js";
import {
  chatRequestValidator,
  type FakeServer,
  type FakeStep,
  failWith,
  type RecordedRequest,
  replyWith,
  startFakeOpenAIServer,
} from "./support/fake-openai-server.js";

const KEY = "sk-test-123";
const TIMEOUT_MS = 300;

interface Provider {
  readonly name: string;
  readonly id: string;
  start(): Promise<FakeServer>;
  summarizer(
    server: FakeServer,
    extra?: { readonly maxRetries?: number; readonly apiKey?: string; readonly timeoutMs?: number },
  ): Summarizer;
  /** The prompt text the server received (system + user). */
  promptOf(request: RecordedRequest): string;
  authorized(request: RecordedRequest): boolean;
  checkShape(body: Record<string, unknown>): void;
}

const providers: ReadonlyArray<Provider> = [
  {
    name: "OpenAI",
    id: "openai:gpt-test",
    start: () => startFakeOpenAIServer({ apiKey: KEY }),
    summarizer: (server, extra = {}) =>
      createOpenAISummarizer({
        model: "gpt-test",
        baseURL: server.baseURL,
        apiKey: KEY,
        timeoutMs: TIMEOUT_MS,
        ...extra,
      }),
    promptOf: (request) =>
      ((request.body as { messages: { content: string }[] }).messages ?? []).map((m) => m.content).join("\n"),
    authorized: (request) => request.headers.authorization === `Bearer ${KEY}`,
    checkShape: (body) => {
      expect(body.response_format).toEqual({ type: "json_object" });
      expect(body.max_completion_tokens).toBeGreaterThan(500);
      expect(body).not.toHaveProperty("temperature");
      expect((body.messages as { role: string }[]).map((m) => m.role)).toEqual(["system", "user"]);
    },
  },
  {
    name: "Anthropic",
    id: "anthropic:claude-test",
    start: () => startFakeAnthropicServer({ apiKey: KEY }),
    summarizer: (server, extra = {}) =>
      createAnthropicSummarizer({
        model: "claude-test",
        baseURL: server.baseURL,
        apiKey: KEY,
        timeoutMs: TIMEOUT_MS,
        ...extra,
      }),
    promptOf: (request) => {
      const body = request.body as { system: string; messages: { content: string }[] };
      return [body.system, ...body.messages.map((m) => m.content)].join("\n");
    },
    authorized: (request) =>
      (request.headers["x-api-key"] === KEY || request.headers.authorization === `Bearer ${KEY}`) &&
      request.headers["anthropic-version"] !== undefined,
    checkShape: (body) => {
      expect(typeof body.system).toBe("string");
      expect(body.max_tokens).toBeGreaterThan(500);
      expect((body.messages as { role: string }[]).map((m) => m.role)).toEqual(["user"]);
    },
  },
];

const log = ThreadLog.from("t-http", [
  { role: "user", parts: [{ type: "text", text: "Please fix the flaky date parser in src/parse-date.ts." }] },
  {
    role: "assistant",
    parts: [{ type: "tool_call", callId: "c1", name: "bash", args: '{"command":"npm test"}' }],
  },
  { role: "tool", parts: [{ type: "tool_result", callId: "c1", content: "TypeError: year of undefined" }] },
]);

const request = (extra: Partial<SummaryRequest> = {}): SummaryRequest => ({
  threadId: "t-http",
  messages: log.messages,
  maxTokens: 500,
  ...extra,
});

const GOOD = JSON.stringify({
  goals: ["Fix the flaky date parser in src/parse-date.ts"],
  decisions: [],
  constraints: [],
  openItems: ["Find why year is undefined"],
  toolOutcomes: ["npm test failed with TypeError: year of undefined"],
  artifacts: ["src/parse-date.ts"],
});

async function reasonOf(promise: Promise<unknown>): Promise<SummarizerFailure> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if ("value" in outcome)
    throw new Error(`expected a SummarizerError, got a result: ${JSON.stringify(outcome.value)}`);
  expect(outcome.error).toBeInstanceOf(SummarizerError);
  return (outcome.error as SummarizerError).reason;
}

describe.each(providers)("$name summarizer over HTTP", (provider) => {
  let server: FakeServer;
  beforeEach(async () => {
    server = await provider.start();
  });
  afterEach(async () => {
    await server.close();
  });

  const failsWith = async (step: FakeStep, reason: SummarizerFailure) => {
    server.enqueue(step);
    expect(await reasonOf(provider.summarizer(server).summarize(request()))).toBe(reason);
    expect(server.requests).toHaveLength(1);
  };

  it("returns the summary and sends model, prompt and credentials", async () => {
    server.enqueue(replyWith(GOOD));
    const summarizer = provider.summarizer(server);
    expect(summarizer.id).toBe(provider.id);
    expect(summarizer.promptVersion).toBe(SUMMARY_PROMPT_VERSION);
    const previous = { text: "", structured: { goals: ["Ship release 2.0 on Friday"] } };
    const result = await summarizer.summarize(request({ previous }));
    expect(result.structured.goals).toEqual(["Fix the flaky date parser in src/parse-date.ts"]);
    expect(result.text).toContain("Tool outcomes:\n- npm test failed with TypeError: year of undefined");
    expect(server.requests).toHaveLength(1);
    const received = server.requests[0]!;
    const body = received.body as Record<string, unknown>;
    expect(body.model).toBe(provider.id.split(":")[1]);
    expect(provider.authorized(received)).toBe(true);
    const prompt = provider.promptOf(received);
    expect(prompt).toContain("Please fix the flaky date parser in src/parse-date.ts.");
    expect(prompt).toContain('→ call bash [c1] {"command":"npm test"}');
    expect(prompt).toContain("TypeError: year of undefined");
    expect(prompt).toContain("Ship release 2.0 on Friday");
    provider.checkShape(body);
  });

  it("accepts an answer inside a ```json fence", async () => {
    server.enqueue(replyWith(`\`\`\`json\n${GOOD}\n\`\`\``));
    const result = await provider.summarizer(server).summarize(request());
    expect(result.structured.artifacts).toEqual(["src/parse-date.ts"]);
  });

  it("times out on a slow answer", async () => {
    const started = Date.now();
    await failsWith(replyWith(GOOD, { delayMs: 2_000 }), "timeout");
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it("reports 429 as rate_limited, without retrying by default", async () => {
    server.enqueue(failWith(429, { retryAfterSeconds: 7, message: "slow down" }));
    const failure = provider.summarizer(server).summarize(request());
    await expect(failure).rejects.toThrow(/rate_limited.*retry after 7 s/);
    expect(server.requests).toHaveLength(1);
  });

  it("reports 500 as server_error", () => failsWith(failWith(500), "server_error"));

  it("reports 400 as bad_request", () => failsWith(failWith(400, { message: "bad model" }), "bad_request"));

  it("reports a wrong key (401) as bad_request", async () => {
    const summarizer = provider.summarizer(server, { apiKey: "wrong" });
    expect(await reasonOf(summarizer.summarize(request()))).toBe("bad_request");
  });

  it("reports empty output as empty", () => failsWith(replyWith(""), "empty"));

  it("reports missing content as empty", () => failsWith(replyWith(null), "empty"));

  it("reports an answer without choices or blocks as empty", () =>
    failsWith({ kind: "no_choices" }, "empty"));

  it("reports a cut answer with no text as empty", () =>
    failsWith(replyWith("", { finish: "length" }), "empty"));

  it("reports prose instead of JSON as malformed", () =>
    failsWith(replyWith("I'm sorry, something went wrong."), "malformed"));

  it("reports JSON of the wrong shape as malformed", () =>
    failsWith(replyWith('{"goals": "one string"}'), "malformed"));

  it("reports a cut JSON answer as malformed", () =>
    failsWith(replyWith('{"goals": ["Fix the', { finish: "length" }), "malformed"));

  it("never turns a broken response body into a summary", async () => {
    server.enqueue({ kind: "raw", status: 200, body: "{not json" });
    expect(await reasonOf(provider.summarizer(server).summarize(request()))).toBe("failed");
  });

  it("reports an HTML page served with HTTP 200 (a proxy's login page) as malformed", async () => {
    const page = "<!doctype html><html><body>Sign in to continue</body></html>";
    server.enqueue({ kind: "raw", status: 200, body: page, contentType: "text/html" });
    const attempt = provider.summarizer(server).summarize(request());
    expect(await reasonOf(attempt)).toBe("malformed");
    await expect(attempt).rejects.toThrow(/not a model answer: "<!doctype html>/);
  });

  it("reports a JSON body that is not a model answer as malformed", async () => {
    server.enqueue({ kind: "raw", status: 200, body: '{"status":"ok"}' });
    expect(await reasonOf(provider.summarizer(server).summarize(request()))).toBe("malformed");
  });

  it("stops when the caller aborts, before or during the call", async () => {
    const controller = new AbortController();
    server.enqueue(replyWith(GOOD, { delayMs: 2_000 }));
    const pending = provider.summarizer(server).summarize(request({ signal: controller.signal }));
    setTimeout(() => controller.abort(), 50);
    expect(await reasonOf(pending)).toBe("aborted");
    const early = provider.summarizer(server).summarize(request({ signal: AbortSignal.abort() }));
    expect(await reasonOf(early)).toBe("aborted");
    expect(server.requests).toHaveLength(1);
  });

  describe("a span too long for one request: chunk, then absorb", () => {
    // 600 messages of ~240 characters: about three times the default 48,000-character transcript.
    const long = ThreadLog.from(
      "t-http",
      Array.from({ length: 600 }, (_, i) => ({
        role: i % 2 === 0 ? ("user" as const) : ("assistant" as const),
        parts: [
          { type: "text" as const, text: `marker-${i}-end ${"lorem ipsum dolor sit amet ".repeat(8)}` },
        ],
      })),
    );
    const answerFor = (n: number) => JSON.stringify({ goals: [`Goal seen through chunk ${n}`] });
    const markersIn = (text: string) => new Set([...text.matchAll(/marker-(\d+)-end/g)].map((m) => m[1]));

    it("sends every message to some request, each next request absorbing the previous summary", async () => {
      for (let n = 1; n <= 10; n++) server.enqueue(replyWith(answerFor(n)));
      const previous = { text: "", structured: { goals: ["Ship release 2.0 on Friday"] } };
      const result = await provider
        .summarizer(server)
        .summarize({ threadId: "t-http", messages: long.messages, maxTokens: 500, previous });
      const prompts = server.requests.map((r) => provider.promptOf(r));
      expect(prompts.length).toBeGreaterThan(1);
      const seen = new Set(prompts.flatMap((p) => [...markersIn(p)]));
      expect(seen.size).toBe(600);
      for (const prompt of prompts) expect(prompt).not.toMatch(/omitted/);
      // The caller's previous summary goes into the first request; each next one absorbs the one before.
      expect(prompts[0]).toContain("Ship release 2.0 on Friday");
      prompts.slice(1).forEach((prompt, i) => {
        expect(prompt).toContain(`<earlier_summary>\n{"goals":["Goal seen through chunk ${i + 1}"]}`);
      });
      // Chunks are consecutive and disjoint: each request reads on where the previous one stopped.
      const firsts = prompts.map((p) => Math.min(...[...markersIn(p)].map(Number)));
      expect(firsts).toEqual([...firsts].sort((a, b) => a - b));
      expect(prompts.reduce((n, p) => n + markersIn(p).size, 0)).toBe(600);
      expect(result.structured.goals).toEqual([`Goal seen through chunk ${prompts.length}`]);
    });

    it("fails the whole summary when one chunk fails (no summary stands for unread messages)", async () => {
      server.enqueue(replyWith(answerFor(1)), failWith(500));
      const pending = provider.summarizer(server).summarize({
        threadId: "t-http",
        messages: long.messages,
        maxTokens: 500,
      });
      expect(await reasonOf(pending)).toBe("server_error");
      expect(server.requests).toHaveLength(2);
    });
  });

  it("retries through the SDK when maxRetries is set", async () => {
    server.enqueue(failWith(503), replyWith(GOOD));
    // The SDK waits about half a second before its retry; the deadline covers both attempts.
    const summarizer = provider.summarizer(server, { maxRetries: 1, timeoutMs: 3_000 });
    const result = await summarizer.summarize(request());
    expect(result.structured.goals).toHaveLength(1);
    expect(server.requests).toHaveLength(2);
  });
});

describe("fake OpenAI server: request validation hook", () => {
  type Chat = OpenAI.Chat.ChatCompletionMessageParam;
  const call = (id: string) => ({
    id,
    type: "function" as const,
    function: { name: "bash", arguments: "{}" },
  });
  const askWith = async (messages: Chat[], maxContextTokens = 10_000) => {
    const server = await startFakeOpenAIServer({ onRequest: chatRequestValidator({ maxContextTokens }) });
    server.enqueue(replyWith("ok"));
    const client = new OpenAI({ apiKey: KEY, baseURL: server.baseURL, maxRetries: 0 });
    try {
      const completion = await client.chat.completions.create({ model: "m", messages });
      return completion.choices[0]?.message.content;
    } catch (error) {
      return error as InstanceType<typeof OpenAI.APIError>;
    } finally {
      await server.close();
    }
  };

  it("passes a valid request on to the queue", async () => {
    const answer = await askWith([
      { role: "user", content: "hi" },
      { role: "assistant", content: null, tool_calls: [call("a"), call("b")] },
      { role: "tool", tool_call_id: "b", content: "2" },
      { role: "tool", tool_call_id: "a", content: "1" },
      { role: "user", content: "thanks" },
    ]);
    expect(answer).toBe("ok");
  });

  it("rejects an orphaned tool message with 400", async () => {
    const error = await askWith([
      { role: "user", content: "hi" },
      { role: "tool", tool_call_id: "x", content: "lost" },
    ]);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.APIError>).param).toBe("messages.[1].role");
  });

  it("rejects a call left unanswered before the next message", async () => {
    const error = await askWith([
      { role: "assistant", content: null, tool_calls: [call("a"), call("b")] },
      { role: "tool", tool_call_id: "a", content: "1" },
      { role: "user", content: "next" },
    ]);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toContain("Unanswered: b");
  });

  it("rejects a request over the context window", async () => {
    const error = await askWith([{ role: "user", content: "x".repeat(4_000) }], 500);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe("context_length_exceeded");
  });
});
