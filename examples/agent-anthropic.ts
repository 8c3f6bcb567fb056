/**
 * An agent loop with the official `@anthropic-ai/sdk` client (Messages), one tool and prompt caching, through the
 * engine: `ANTHROPIC_API_KEY=… npx tsx examples/agent-anthropic.ts "What does package.json say the test command is?"`
 * (`ANTHROPIC_BASE_URL` points it elsewhere). `test/example-agent-loops.test.ts` runs it against a local server
 * that speaks the wire format.
 */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Anthropic from "@anthropic-ai/sdk";
import {
  type ContextEngine,
  createContextEngine,
  createMemoryStores,
  fromAnthropicMessage,
  type ToolDefinition,
  toolResultMessage,
} from "../src/index.js";

const MODEL = "claude-sonnet-4-5";
const TOOLS: ToolDefinition[] = [
  {
    name: "read_file",
    description: "Read a text file of the current directory.",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  },
];

/** The tool itself: a file's text (its first 20,000 characters), or why it could not be read. */
async function readFileTool(input: unknown): Promise<string> {
  return (await readFile((input as { path: string }).path, "utf8")).slice(0, 20_000);
}

/** Runs the task to the model's final answer: every call prepared by the engine, every reply and result logged. */
export async function runAnthropicAgent(
  client: Anthropic,
  engine: ContextEngine,
  threadId: string,
  task: string,
) {
  await engine.append(threadId, [
    { role: "system", parts: [{ type: "text", text: "You are a careful coding assistant." }] },
    { role: "user", parts: [{ type: "text", text: task }] },
  ]);
  for (let step = 0; step < 25; step++) {
    // `system` and `messages` compacted to the budget, the tools counted against it, and `cache_control` marks
    // after the stable prefix and the last history message (Anthropic caches only what is marked).
    const turn = await engine.prepareTurn(threadId, {
      format: "anthropic",
      model: MODEL,
      tools: TOOLS,
      cacheControl: true,
    });
    const reply = await client.messages.create({ model: MODEL, max_tokens: 4_096, ...turn.request });
    const u = reply.usage; // input_tokens leaves out what was written to or read from the cache
    const inputTokens =
      u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
    await engine.recordUsage(turn.callId, { inputTokens, cachedInputTokens: u.cache_read_input_tokens ?? 0 });
    const calls = reply.content.filter((block) => block.type === "tool_use");
    const results = await Promise.all(
      calls.map(async (call) => {
        const output = await readFileTool(call.input).catch((e: Error) => `error: ${e.message}`);
        return toolResultMessage(call.id, output, { toolName: call.name });
      }),
    );
    // The reply first, then one result per tool call: the log now holds what the next request must show.
    await engine.append(threadId, [fromAnthropicMessage(reply), ...results]);
    if (calls.length === 0) return reply.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");
  }
  throw new Error("no final answer after 25 model calls");
}

/** `npx tsx examples/agent-anthropic.ts [task]`: memory stores, the budget of the model's window. */
export async function main(task = process.argv[2] ?? "Which scripts does package.json define?") {
  const engine = createContextEngine({ stores: createMemoryStores(), budget: { model: MODEL } });
  console.log(await runAnthropicAgent(new Anthropic(), engine, "anthropic-agent", task));
  await engine.idle(); // background summaries finish before the process ends
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  await main();
