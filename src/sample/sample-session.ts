import type { MessageInput } from "../log/message.js";
import { SeededRandom } from "./seeded-random.js";

/** Options of `generateSampleSession`. */
export interface SampleSessionOptions {
  /** Number of messages to produce (at least 2). */
  readonly messages: number;
  readonly seed?: number;
  /** End on a tool call that has no result yet, as runs that stop on `submit` do. */
  readonly endPending?: boolean;
  /** Prefix for message and call ids, so several sessions can share one thread. */
  readonly idPrefix?: string;
}

const FILES = [
  "src/server.ts",
  "src/db/pool.ts",
  "lib/parse.py",
  "tests/test_api.py",
  "README.md",
  "Makefile",
];
const WORDS = (
  "the request handler retries connection pool timeout config value parser returns error when input is empty " +
  "cache invalidation test fails because fixture expects sorted keys patch applies cleanly migration adds column " +
  "index lookup is slow under load we should check the logs before changing the retry policy"
).split(" ");

function sentence(rng: SeededRandom, words: number): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(rng.pick(WORDS));
  const text = out.join(" ");
  return `${text[0]!.toUpperCase()}${text.slice(1)}.`;
}

function codeBlock(rng: SeededRandom, lines: number): string {
  const out: string[] = [];
  for (let i = 1; i <= lines; i++) {
    const indent = " ".repeat(rng.int(0, 3) * 2);
    out.push(
      `${String(i).padStart(4)}  ${indent}${rng.pick(["const", "if (", "return", "await", "for (const"])} ${rng.pick(WORDS)}_${rng.int(0, 99)}${rng.pick([";", " {", ")", " = null;"])}`,
    );
  }
  return out.join("\n");
}

function base64Blob(rng: SeededRandom, chars: number): string {
  const bytes = new Uint8Array(Math.ceil((chars * 3) / 4));
  for (let i = 0; i < bytes.length; i++) bytes[i] = rng.int(0, 255);
  return Buffer.from(bytes).toString("base64").slice(0, chars);
}

/** A tool result body of realistic shape and size: file listings, test output, blobs, separator-heavy logs. */
function toolOutput(rng: SeededRandom, tool: string): string {
  switch (tool) {
    case "read_file":
      return codeBlock(rng, rng.int(5, 80));
    case "run_tests": {
      const failures = rng.int(0, 3);
      const head = `${"=".repeat(30)} test session starts ${"=".repeat(30)}\ncollected ${rng.int(5, 300)} items\n`;
      const body = Array.from(
        { length: failures },
        () => `FAILED tests/test_api.py::test_${rng.pick(WORDS)} - ${sentence(rng, 8)}`,
      ).join("\n");
      return `${head}${body}\n${"=".repeat(20)} ${failures} failed, ${rng.int(5, 200)} passed ${"=".repeat(20)}`;
    }
    case "fetch_asset":
      return `{"name":"asset.bin","encoding":"base64","data":"${base64Blob(rng, rng.int(500, 6000))}"}`;
    default:
      return Array.from(
        { length: rng.int(1, 25) },
        () => `${rng.pick(FILES)}:${rng.int(1, 400)}: ${sentence(rng, 6)}`,
      ).join("\n");
  }
}

const SYSTEM_PROMPT =
  "You are a careful software engineering agent. Work in small steps, run the tests after every change, " +
  "and never modify files outside the repository. Answer the user concisely.";

/**
 * Generates a deterministic agent session (system prompt, user requests, assistant reasoning, tool calls with
 * results of very different sizes) for demos, tests and benchmarks; no external data needed.
 */
export function generateSampleSession(options: SampleSessionOptions): MessageInput[] {
  const rng = new SeededRandom(options.seed ?? 7);
  const prefix = options.idPrefix ?? "";
  const out: MessageInput[] = [
    {
      id: `${prefix}m0`,
      role: "system",
      parts: [{ type: "text", text: SYSTEM_PROMPT }],
      meta: { pinned: true },
    },
  ];
  let call = 0;
  const id = () => `${prefix}m${out.length}`;
  while (out.length < options.messages) {
    const room = options.messages - out.length;
    if (out.length === 1 || (rng.chance(0.12) && room >= 1)) {
      out.push({
        id: id(),
        role: "user",
        parts: [
          { type: "text", text: `${sentence(rng, rng.int(8, 40))} Please look at ${rng.pick(FILES)}.` },
        ],
      });
      continue;
    }
    if ((room < 2 && options.endPending !== true) || rng.chance(0.1)) {
      out.push({
        id: id(),
        role: "assistant",
        parts: [{ type: "text", text: sentence(rng, rng.int(10, 60)) }],
      });
      continue;
    }
    const tool = rng.pick([
      "read_file",
      "grep",
      "run_tests",
      "grep",
      "read_file",
      "grep",
      "run_tests",
      "fetch_asset",
    ]);
    const callId = `${prefix}call_${++call}`;
    const args = JSON.stringify(
      tool === "read_file" ? { path: rng.pick(FILES) } : { query: rng.pick(WORDS), limit: rng.int(1, 50) },
    );
    out.push({
      id: id(),
      role: "assistant",
      parts: [
        { type: "text", text: sentence(rng, rng.int(5, 25)) },
        { type: "tool_call", callId, name: tool, args },
      ],
    });
    const last = out.length === options.messages;
    if (last && options.endPending === true) break;
    if (last) {
      out.pop();
      out.push({ id: id(), role: "assistant", parts: [{ type: "text", text: sentence(rng, 12) }] });
      break;
    }
    out.push({
      id: id(),
      role: "tool",
      parts: [{ type: "tool_result", callId, content: toolOutput(rng, tool) }],
      meta: { toolName: tool },
    });
  }
  return out;
}
