/**
 * context-ledger/langchain end to end: LangChain's `createAgent` with a fake chat model, tools returning large
 * results and `contextLedgerMiddleware` at a budget far below the conversation's size. Every message list the
 * model receives is checked: valid (each call followed by its results), the very prompt the engine counted and
 * recorded (replay reproduces it), within the budget by the engine's counter, signed thinking untouched.
 */
import {
  AIMessage,
  type BaseMessage,
  HumanMessage,
  SystemMessage,
  type ToolMessage,
} from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { tool } from "@langchain/core/tools";
import { createAgent } from "langchain";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  type ContextEngine,
  createContextEngine,
  createMemoryStores,
  createMessageCounter,
  createTokenizer,
  type PreparedTurn,
  ValidationError,
  validateOpenAIChat,
} from "../src/index.js";
import {
  contextLedgerMiddleware,
  fromLangChainMessages,
  toLangChainMessages,
} from "../src/integrations/langchain/index.js";

const BUDGET = 6_000;
const SYSTEM = "You are a coding agent. Read before you edit; run the tests after every change.";
const counter = createMessageCounter(createTokenizer({ model: "gpt-4o" }), "openai");

/** Deterministic, varied file text of about `lines` lines (a realistic load for the tokenizer). */
function fileText(seed: number, lines: number): string {
  const out: string[] = [];
  for (let k = 0; k < lines; k++) {
    out.push(
      `src/module${seed % 7}/file${(seed * 31 + k) % 97}.ts:${k + 1}: const v${k} = compute(${seed}, ${k * 13});`,
    );
  }
  return out.join("\n");
}

const readFile = tool(async ({ path }) => `// ${path}\n${fileText(path.length * 17, 120)}`, {
  name: "read_file",
  description: "Read a file of the repository.",
  schema: z.object({ path: z.string().describe("Path from the repository root") }),
});
const search = tool(async ({ query }) => `matches for ${query}:\n${fileText(query.length, 80)}`, {
  name: "search",
  description: "Search the repository for a text.",
  schema: z.object({ query: z.string() }),
});

/** Thinking blocks the fake model signed, by the id of the reply that carried them. */
type Produced = Map<string, unknown>;

/**
 * A fake model for one run: `calls − 1` replies with signed thinking and one or two tool calls each (two on
 * every third), then a final answer. Ids are unique per run, as a provider's are.
 */
function scriptedModel(run: string, calls: number, produced: Produced, usage = false) {
  const model = fakeModel();
  for (let n = 0; n < calls; n++) {
    model.respond(() => {
      const id = `ai-${run}-${n}`;
      const usageMetadata = usage
        ? { usage_metadata: { input_tokens: 900 + n, output_tokens: 20, total_tokens: 920 + n } }
        : {};
      const reply = (fields: Record<string, unknown>) =>
        new AIMessage({ id, ...fields, ...usageMetadata } as ConstructorParameters<typeof AIMessage>[0]);
      if (n === calls - 1) return reply({ content: `Run ${run} is done.` });
      const thinking = {
        type: "thinking",
        thinking: ` Step ${n} of run ${run}:\n  next  I check ${n}…\n`,
        signature: `sig/${run}/${n}==`,
      };
      produced.set(id, thinking);
      const toolCalls: Array<{ id: string; name: string; args: Record<string, string> }> = [
        { id: `call-${run}-${n}-0`, name: "read_file", args: { path: `src/module${n}/index.ts` } },
      ];
      if (n % 3 === 2) {
        toolCalls.push({ id: `call-${run}-${n}-1`, name: "search", args: { query: `symbol${n}` } });
      }
      return reply({
        content: [thinking, { type: "text", text: `Looking at step ${n}.` }],
        tool_calls: toolCalls,
      });
    });
  }
  return model;
}

/** The OpenAI Chat Completions body of a LangChain message list, for the repo's own validator. */
function chatBody(messages: ReadonlyArray<BaseMessage>): Parameters<typeof validateOpenAIChat>[0] {
  return {
    messages: messages.map((m) => {
      if (m.type === "system") return { role: "system" as const, content: m.text };
      if (m.type === "human") return { role: "user" as const, content: m.text };
      if (m.type === "tool") {
        return { role: "tool" as const, tool_call_id: (m as ToolMessage).tool_call_id, content: m.text };
      }
      const calls = (m as AIMessage).tool_calls ?? [];
      return {
        role: "assistant" as const,
        content: m.text === "" ? null : m.text,
        ...(calls.length === 0
          ? {}
          : {
              tool_calls: calls.map((c) => ({
                id: c.id ?? "",
                type: "function" as const,
                function: { name: c.name, arguments: JSON.stringify(c.args) },
              })),
            }),
      };
    }),
  };
}

const neutral = (messages: ReadonlyArray<{ role: string; parts: unknown }>) =>
  messages.map(({ role, parts }) => ({ role, parts }));

/** Checks one model call against its prepared turn; returns the number of signed thinking blocks it carried. */
async function checkCall(
  engine: ContextEngine,
  received: ReadonlyArray<BaseMessage>,
  turn: PreparedTurn,
  produced: Produced,
): Promise<number> {
  expect(validateOpenAIChat(chatBody(received))).toEqual([]);
  // Exactly the prompt the engine rendered, counted, recorded, and re-renders from its stores.
  const replay = await engine.replay(turn.callId);
  expect(replay.ok, replay.mismatch).toBe(true);
  const asLog = fromLangChainMessages(received);
  expect(neutral(asLog)).toEqual(neutral(replay.prompt!.messages));
  expect(toLangChainMessages(replay.prompt!).map((m) => m.content)).toEqual(received.map((m) => m.content));
  // Within the budget by the engine's counter, recounted from what the model received.
  const tokens = asLog.reduce((sum, m) => sum + counter.countMessage(m), counter.requestOverhead);
  expect(tokens).toBe(turn.stats.tokens);
  expect(turn.stats.toolTokens).toBeGreaterThan(0);
  expect(tokens + turn.stats.toolTokens).toBeLessThanOrEqual(BUDGET);
  let signed = 0;
  for (const m of received) {
    const original = m.id === undefined ? undefined : produced.get(m.id);
    if (m.type !== "ai" || original === undefined) continue;
    expect((m.content as unknown[])[0]).toStrictEqual(original);
    signed++;
  }
  return signed;
}

function agentWith(engine: ContextEngine, model: ReturnType<typeof fakeModel>, turns: PreparedTurn[]) {
  return createAgent({
    model,
    tools: [readFile, search],
    systemPrompt: SYSTEM,
    middleware: [
      contextLedgerMiddleware({
        engine,
        threadId: "agent-1",
        model: "gpt-4o",
        budget: BUDGET,
        onTurn: (turn) => {
          turns.push(turn);
        },
      }),
    ],
  });
}

describe("contextLedgerMiddleware in createAgent", () => {
  it("55 model calls over two runs at a tight budget: every call valid, within budget and replayable", async () => {
    const engine = createContextEngine({
      stores: createMemoryStores(),
      counter,
      budget: { model: "gpt-4o" },
    });
    const produced: Produced = new Map();
    const turns: PreparedTurn[] = [];
    const first = scriptedModel("1", 30, produced);
    const run1 = await agentWith(engine, first, turns).invoke(
      { messages: [new HumanMessage("Find why the parser test is flaky and fix it.")] },
      { recursionLimit: 500 },
    );
    // No checkpointer: the caller hands the whole conversation back, and only the new message is appended.
    const second = scriptedModel("2", 25, produced);
    const run2 = await agentWith(engine, second, turns).invoke(
      { messages: [...run1.messages, new HumanMessage("Now make the lexer test faster.")] },
      { recursionLimit: 500 },
    );
    const calls = [...first.calls, ...second.calls].map((c) => c.messages);
    expect(calls).toHaveLength(55);
    expect(turns).toHaveLength(55);

    let signed = 0;
    for (const [i, received] of calls.entries())
      signed += await checkCall(engine, received, turns[i]!, produced);

    expect(signed).toBeGreaterThan(55);

    // Compaction was forced: the conversation is many budgets long, the model saw a small part of it.
    const explanation = await engine.explain("agent-1");
    const logged = Object.values(explanation.totals).reduce((sum, t) => sum + t.tokens, 0);
    expect(logged).toBeGreaterThan(10 * BUDGET);
    expect(turns.filter((t) => t.stats.compacted).length).toBeGreaterThan(0);
    expect(calls.at(-1)!.length).toBeLessThan(run2.messages.length / 3);

    // Each message of the agent's state is in the log exactly once, in order, after the system prompt.
    const stateIds = run2.messages.map((m) => m.id);
    expect(explanation.rows.map((r) => r.id)).toEqual([expect.stringMatching(/^system-/), ...stateIds]);
    expect(explanation.rows.filter((r) => r.role === "system")).toHaveLength(1);
    expect(run2.messages.at(-1)!.content).toBe("Run 2 is done.");
  });

  it("reads the thread from the run's configurable thread_id", async () => {
    const engine = createContextEngine({
      stores: createMemoryStores(),
      counter,
      budget: { model: "gpt-4o" },
    });
    const model = scriptedModel("t", 3, new Map());
    const agent = createAgent({
      model,
      tools: [readFile, search],
      middleware: [
        contextLedgerMiddleware({
          engine,
          threadId: (runtime) => String(runtime.configurable?.thread_id),
        }),
      ],
    });
    await agent.invoke(
      { messages: [new HumanMessage("hi")] },
      { configurable: { thread_id: "from-config" } },
    );
    const rows = (await engine.explain("from-config")).rows;
    // No system prompt in this agent: nothing is logged for it.
    expect(rows.map((r) => r.role)).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"]);
  });

  it("reports the reply's usage to calibrate the model's token estimate", async () => {
    const engine = createContextEngine({
      stores: createMemoryStores(),
      counter,
      budget: { model: "gpt-4o" },
    });
    const turns: PreparedTurn[] = [];
    await agentWith(engine, scriptedModel("u", 4, new Map(), true), turns).invoke({
      messages: [new HumanMessage("go")],
    });
    const calibration = await engine.calibration("gpt-4o");
    expect(calibration.samples).toBe(4);
    expect(calibration.ratio).not.toBe(1);
  });

  it("logs each distinct system prompt once, and a later run with the same prompt adds none", async () => {
    const engine = createContextEngine({
      stores: createMemoryStores(),
      counter,
      budget: { model: "gpt-4o" },
    });
    const run = (systemPrompt: string, messages: BaseMessage[]) =>
      createAgent({
        model: scriptedModel(systemPrompt, 2, new Map()),
        tools: [readFile],
        systemPrompt,
        middleware: [contextLedgerMiddleware({ engine, threadId: "sys" })],
      }).invoke({ messages });
    const a = await run("Prompt A", [new HumanMessage("one")]);
    const b = await run("Prompt A", [...a.messages, new HumanMessage("two")]);
    await run("Prompt B", [...b.messages, new HumanMessage("three")]);
    const systems = (await engine.explain("sys")).rows.filter((r) => r.role === "system");
    expect(systems.map((r) => r.preview)).toEqual(["Prompt A", "Prompt B"]);
  });
});

describe("contextLedgerMiddleware's appends and options", () => {
  const newEngine = () =>
    createContextEngine({ stores: createMemoryStores(), counter, budget: { model: "gpt-4o" } });

  /** Calls the middleware's model hook as the agent does, with `messages` as the state. */
  async function modelCall(
    middleware: ReturnType<typeof contextLedgerMiddleware>,
    messages: BaseMessage[],
    systemPrompt = SYSTEM,
  ) {
    const wrap = middleware.wrapModelCall!;
    const request = {
      model: fakeModel(),
      messages,
      systemMessage: new SystemMessage(systemPrompt),
      tools: [],
      state: { messages },
      runtime: {},
    };
    return wrap(request as never, async () => new AIMessage({ id: `reply-${Math.random()}`, content: "ok" }));
  }

  it("two model calls at once on one thread append each message once", async () => {
    const engine = newEngine();
    const middleware = contextLedgerMiddleware({ engine, threadId: "both" });
    const state = [
      new HumanMessage({ id: "h1", content: "go" }),
      new HumanMessage({ id: "h2", content: "on" }),
    ];
    await Promise.all([modelCall(middleware, state), modelCall(middleware, state)]);
    // Two middlewares on one engine and thread take turns too (two agents, or two requests of a server).
    const other = contextLedgerMiddleware({ engine, threadId: "both" });
    const more = [...state, new HumanMessage({ id: "h3", content: "and" })];
    await Promise.all([modelCall(middleware, more), modelCall(other, more)]);
    const rows = (await engine.explain("both")).rows;
    expect(rows.map((r) => r.id)).toEqual([expect.stringMatching(/^system-/), "h1", "h2", "h3"]);
  });

  it("asks the log only about messages new to it, never reading the whole log", async () => {
    const stores = createMemoryStores();
    const engine = createContextEngine({ stores, counter, budget: { model: "gpt-4o" } });
    const asked: string[][] = [];
    const watched: ContextEngine = {
      ...engine,
      explain: () => Promise.reject(new Error("the middleware read the whole log")),
      locateMessages: (threadId, ids) => {
        asked.push([...ids]);
        return engine.locateMessages(threadId, ids);
      },
    };
    const state = [new HumanMessage({ id: "h1", content: "go" })];
    // Another process logged h1 already: it is found and not appended again.
    await createContextEngine({ stores, counter, budget: { model: "gpt-4o" } }).append("t", [
      { id: "h1", role: "user", parts: [{ type: "text", text: "go" }] },
    ]);
    const middleware = contextLedgerMiddleware({ engine: watched, threadId: "t" });
    await modelCall(middleware, state);
    await modelCall(middleware, [...state, new HumanMessage({ id: "h2", content: "on" })]);
    expect(asked).toEqual([[expect.stringMatching(/^system-/), "h1"], ["h2"]]);
    expect((await engine.explain("t")).rows.map((r) => r.id)).toEqual([
      "h1",
      expect.stringMatching(/^system-/),
      "h2",
    ]);
  });

  it.each([
    [{ budjet: 100 }, "budjet", /budjet is not an option/],
    [{ threadId: 42 }, "threadId", /threadId must be a non-empty string or a function/],
    [{ threadId: "" }, "threadId", /threadId/],
    [{ format: "gemini" }, "format", /format must be one of openai, responses, anthropic/],
    [{ budget: "lots" }, "budget", /budget must be/],
    [{ recordUsage: "no" }, "recordUsage", /recordUsage must be a boolean/],
    [{ cacheThreads: -1 }, "cacheThreads", /cacheThreads must be a whole number/],
    [{ onTurn: "log" }, "onTurn", /onTurn must be a function/],
    [{ engine: { explain: () => undefined } }, "engine", /engine must be a context engine/],
  ] as const)("refuses bad options when it is made: %j names %s", (bad, field, message) => {
    const options = { engine: newEngine(), threadId: "t", ...bad };
    let error: unknown;
    try {
      contextLedgerMiddleware(options as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).where.field).toBe(field);
    expect((error as ValidationError).message).toMatch(message);
  });

  it("names a threadId function that returns no thread", async () => {
    const middleware = contextLedgerMiddleware({ engine: newEngine(), threadId: () => undefined as never });
    const error = await modelCall(middleware, [new HumanMessage({ id: "h1", content: "go" })]).catch(
      (e) => e,
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.where.field).toBe("threadId");
    expect(error.message).toContain("option threadId returned undefined for this run");
  });
});
