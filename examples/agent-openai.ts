/**
 * An agent loop with the official `openai` client (Chat Completions) and one tool, through the engine:
 * `OPENAI_API_KEY=… npx tsx examples/agent-openai.ts "What does package.json say the test command is?"`
 * (`OPENAI_BASE_URL` points it at a compatible server). `test/example-agent-loops.test.ts` runs it against a local
 * server that speaks the wire format.
 */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import {
  type ContextEngine,
  createContextEngine,
  createMemoryStores,
  fromOpenAIChatCompletion,
  type ToolDefinition,
  toolResultMessage,
} from "../src/index.js";

const MODEL = "gpt-4o";
const TOOLS: ToolDefinition[] = [
  {
    name: "read_file",
    description: "Read a text file of the current directory.",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  },
];

/** The tool itself: a file's text (its first 20,000 characters), or why it could not be read. */
async function readFileTool(args: string): Promise<string> {
  const { path } = JSON.parse(args) as { path: string };
  return (await readFile(path, "utf8")).slice(0, 20_000);
}

/** Runs the task to the model's final answer: every call prepared by the engine, every reply and result logged. */
export async function runOpenAIAgent(client: OpenAI, engine: ContextEngine, threadId: string, task: string) {
  await engine.append(threadId, [
    { role: "system", parts: [{ type: "text", text: "You are a careful coding assistant." }] },
    { role: "user", parts: [{ type: "text", text: task }] },
  ]);
  for (let step = 0; step < 25; step++) {
    // The request's messages, compacted to the budget, and the tools (counted against it).
    const turn = await engine.prepareTurn(threadId, { format: "openai", model: MODEL, tools: TOOLS });
    const reply = await client.chat.completions.create({ model: MODEL, ...turn.request });
    if (reply.usage) await engine.recordUsage(turn.callId, { inputTokens: reply.usage.prompt_tokens });
    const calls = (reply.choices[0]?.message.tool_calls ?? []).filter((c) => c.type === "function");
    const results = await Promise.all(
      calls.map(async (call) => {
        const output = await readFileTool(call.function.arguments).catch((e: Error) => `error: ${e.message}`);
        return toolResultMessage(call.id, output, { toolName: call.function.name });
      }),
    );
    // The reply first, then one result per tool call: the log now holds what the next request must show.
    await engine.append(threadId, [fromOpenAIChatCompletion(reply), ...results]);
    if (calls.length === 0) return reply.choices[0]?.message.content ?? "";
  }
  throw new Error("no final answer after 25 model calls");
}

/** `npx tsx examples/agent-openai.ts [task]`: memory stores, the budget of gpt-4o's window. */
export async function main(task = process.argv[2] ?? "Which scripts does package.json define?") {
  const engine = createContextEngine({ stores: createMemoryStores(), budget: { model: MODEL } });
  console.log(await runOpenAIAgent(new OpenAI(), engine, "openai-agent", task));
  await engine.idle(); // background summaries finish before the process ends
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  await main();
