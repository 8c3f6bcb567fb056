/**
 * The AI SDK wing end to end: a 55-step tool loop against the SDK's mock model, with tools returning large results
 * under a budget far below the history's size, through `createPrepareStep` (generateText) and through
 * `contextLedgerMiddleware` (a ToolLoopAgent on a wrapped model). Every prompt the model receives is checked on its
 * own: rebuilt as a log (which refuses orphaned results), rendered and checked with the provider validators, counted
 * with the engine's counter against the budget; and every call the engine recorded replays to the same bytes.
 */
import { generateText, jsonSchema, stepCountIs, ToolLoopAgent, tool, wrapLanguageModel } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import {
  createContextEngine,
  createMemoryStores,
  createMessageCounter,
  createTokenizer,
  emptyPlan,
  type PreparedTurn,
  renderPrompt,
  ThreadLog,
  toProviderRequest,
  validateProviderRequest,
} from "../src/index.js";
import {
  contextLedgerMiddleware,
  createPrepareStep,
  fromModelMessages,
} from "../src/integrations/ai-sdk/index.js";
import type { LanguageModelPrompt } from "../src/integrations/ai-sdk/sdk-types.js";
import { toLanguageModelPrompt } from "../src/integrations/ai-sdk/to-model-messages.js";

const STEPS = 55;
const BUDGET = 9_000;
const SYSTEM = "You are a careful code reviewer. Read files one at a time and report what you find.";
const TASK = "Review every file under src/ and list the functions that lack tests.";

const counter = createMessageCounter(createTokenizer({ model: "gpt-4o" }), "openai");

/** A file's content: about 1,500 tokens of varied lines, different for every path. */
function fileContent(path: string): string {
  const lines: string[] = [];
  for (let i = 0; i < 120; i++) {
    lines.push(
      `// ${path}:${i} function handler${i}(input${i % 7}) { return compute(${i * 31} + input${i % 7}); }`,
    );
  }
  return lines.join("\n");
}

const tools = {
  read_file: tool({
    description: "Read a file of the repository",
    inputSchema: jsonSchema<{ path: string }>({
      type: "object",
      properties: { path: { type: "string" } },
      required: ["path"],
    }),
    execute: async ({ path }) => fileContent(path),
  }),
  list_dir: tool({
    description: "List a directory",
    inputSchema: jsonSchema<{ dir: string }>({
      type: "object",
      properties: { dir: { type: "string" } },
      required: ["dir"],
    }),
    execute: async ({ dir }) => ({
      dir,
      entries: Array.from({ length: 40 }, (_, i) => `${dir}/file-${i}.ts`),
    }),
  }),
};

type CallOptions = Parameters<MockLanguageModelV3["doGenerate"]>[0];

const usage = {
  inputTokens: { total: 100, noCache: 100, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 10, text: 10, reasoning: undefined },
};

/** The scripted model: reasoning with a signature, a sentence and one or two tool calls per step; then an answer. */
function scriptedModel(received: CallOptions[]): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doGenerate: async (options) => {
      received.push(options);
      const step = received.length;
      if (step === STEPS) {
        return {
          content: [{ type: "text", text: "Done: 12 functions lack tests." }],
          finishReason: { unified: "stop", raw: "stop" },
          usage,
          warnings: [],
        };
      }
      const calls =
        step % 10 === 1
          ? [
              {
                toolCallId: `call-${step}-a`,
                toolName: "list_dir",
                input: JSON.stringify({ dir: `src/m${step}` }),
              },
            ]
          : [
              {
                toolCallId: `call-${step}-a`,
                toolName: "read_file",
                input: JSON.stringify({ path: `src/f${step}.ts` }),
              },
              ...(step % 3 === 0
                ? [
                    {
                      toolCallId: `call-${step}-b`,
                      toolName: "read_file",
                      input: JSON.stringify({ path: `src/g${step}.ts` }),
                    },
                  ]
                : []),
            ];
      return {
        content: [
          {
            type: "reasoning",
            text: `Step ${step}: the next file to read.`,
            providerMetadata: { anthropic: { signature: `sig/${step}+==` } },
          },
          { type: "text", text: `Reading the next file (step ${step}).` },
          ...calls.map((c) => ({ type: "tool-call" as const, ...c })),
        ],
        finishReason: { unified: "tool-calls", raw: "tool_use" },
        usage,
        warnings: [],
      };
    },
  });
}

/**
 * Checks one prompt as the model received it: every tool call answered right after its message, every result
 * answering a call; rebuilt as a log and rendered to each provider format, the validators find nothing; its tokens
 * by the engine's counter match the engine's own count for the turn, within the budget.
 */
function checkReceived(options: CallOptions, turn: PreparedTurn): void {
  const prompt = options.prompt;
  const open = new Set<string>();
  for (const message of prompt) {
    if (message.role === "tool") {
      for (const part of message.content) {
        if (part.type !== "tool-result") continue;
        expect(open.delete(part.toolCallId), `result ${part.toolCallId} answers an open call`).toBe(true);
      }
      continue;
    }
    expect([...open], "calls answered before the next message").toEqual([]);
    if (message.role === "assistant") {
      for (const part of message.content) if (part.type === "tool-call") open.add(part.toolCallId);
    }
  }
  expect([...open]).toEqual([]);
  const log = ThreadLog.from("received", fromModelMessages(prompt));
  const rendered = renderPrompt(log, emptyPlan("received"), { counter });
  for (const format of ["openai", "responses", "anthropic"] as const) {
    expect(validateProviderRequest(format, toProviderRequest(format, rendered)), format).toEqual([]);
  }
  expect(rendered.tokenCount).toBe(turn.prompt.tokenCount);
  expect(turn.stats.tokens).toBeLessThanOrEqual(BUDGET);
  expect(rendered.tokenCount + turn.stats.toolTokens).toBeLessThanOrEqual(BUDGET);
}

/** Signed reasoning the model received is byte for byte what it produced at that step. */
function checkSignatures(received: ReadonlyArray<CallOptions>): number {
  let seen = 0;
  for (const options of received) {
    for (const message of options.prompt) {
      if (message.role !== "assistant") continue;
      for (const part of message.content) {
        if (part.type !== "reasoning") continue;
        const step = /Step (\d+):/.exec(part.text)?.[1];
        expect(part.providerOptions).toEqual({ anthropic: { signature: `sig/${step}+==` } });
        seen++;
      }
    }
  }
  return seen;
}

function newEngine() {
  return createContextEngine({ stores: createMemoryStores(), counter, budget: { model: "gpt-4o" } });
}

async function checkRun(
  engine: ReturnType<typeof newEngine>,
  threadId: string,
  received: CallOptions[],
  turns: PreparedTurn[],
) {
  expect(received).toHaveLength(STEPS);
  expect(turns).toHaveLength(STEPS);
  for (const [i, options] of received.entries()) checkReceived(options, turns[i]!);
  expect(checkSignatures(received)).toBeGreaterThan(STEPS);
  const compactions = turns.filter((t) => t.stats.compacted).length;
  await engine.idle();
  // Each call replays from the stores to the same bytes, and its prompt is the one the model received.
  const content = (prompt: LanguageModelPrompt) =>
    fromModelMessages(prompt).map(({ role, parts }) => ({ role, parts }));
  for (const [i, turn] of turns.entries()) {
    const replay = await engine.replay(turn.callId);
    expect(replay.ok, `${turn.callId}: ${replay.mismatch ?? ""}`).toBe(true);
    expect(content(toLanguageModelPrompt(replay.prompt!))).toEqual(content(received[i]!.prompt));
  }
  // Every message went into the log once: system, task, then per step a reply and its results.
  const explanation = await engine.explain(threadId);
  const logged = turns.at(-1)!.stats.logSeq;
  expect(explanation.logSeq).toBe(logged);
  expect(logged).toBe(2 + 2 * (STEPS - 1));
  // Without compaction the last request would be many times the budget.
  const history = explanation.rows.reduce((sum, row) => sum + row.tokens, 0);
  expect(history).toBeGreaterThan(BUDGET * 8);
  // Compaction was needed again and again as the history grew, not once.
  expect(compactions).toBeGreaterThan(STEPS / 4);
}

describe("context-ledger/ai-sdk over a 55-step tool loop", () => {
  it("createPrepareStep: generateText sends only compacted, valid prompts within the budget, each replayable", async () => {
    const engine = newEngine();
    const received: CallOptions[] = [];
    const turns: PreparedTurn[] = [];
    const prepareStep = createPrepareStep({
      engine,
      threadId: "run-1",
      budget: BUDGET,
      tools,
      system: SYSTEM,
      onTurn: (turn) => {
        turns.push(turn);
      },
    });
    const result = await generateText({
      model: scriptedModel(received),
      system: SYSTEM,
      prompt: TASK,
      tools,
      prepareStep,
      stopWhen: stepCountIs(STEPS + 5),
    });
    expect(result.text).toBe("Done: 12 functions lack tests.");
    expect(result.steps).toHaveLength(STEPS);
    // The SDK's own system prompt was replaced by the thread's, never sent twice.
    for (const options of received) {
      expect(options.prompt.filter((m) => m.role === "system")).toEqual([
        { role: "system", content: SYSTEM },
      ]);
    }
    await checkRun(engine, "run-1", received, turns);
  });

  it("contextLedgerMiddleware: a ToolLoopAgent on the wrapped model does the same at model level", async () => {
    const engine = newEngine();
    const received: CallOptions[] = [];
    const turns: PreparedTurn[] = [];
    const model = wrapLanguageModel({
      model: scriptedModel(received),
      middleware: contextLedgerMiddleware({
        engine,
        threadId: "run-2",
        budget: BUDGET,
        onTurn: (turn) => {
          turns.push(turn);
        },
      }),
    });
    const agent = new ToolLoopAgent({ model, instructions: SYSTEM, tools, stopWhen: stepCountIs(STEPS + 5) });
    const result = await agent.generate({ prompt: TASK });
    expect(result.text).toBe("Done: 12 functions lack tests.");
    // The middleware counted the call's tools.
    expect(turns.every((t) => t.stats.toolTokens > 0)).toBe(true);
    await checkRun(engine, "run-2", received, turns);
  });
});
