/**
 * Deterministic stand-ins for a coding agent's tools (read a file, search, run tests): the outputs look like the
 * real thing and vary in size from about 1 KB to 20 KB, the mix that makes an agent's context fill up.
 */
import type { ChatCompletionFunctionTool } from "openai/resources/chat/completions";

/** The tool definitions sent with every request. */
export const FAKE_TOOLS: ReadonlyArray<ChatCompletionFunctionTool> = Object.freeze([
  {
    type: "function",
    function: {
      name: "read_file",
      description: "Read a file of the repository.",
      parameters: {
        type: "object",
        properties: { path: { type: "string" } },
        required: ["path"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: {
      name: "search",
      description: "Search the repository for a term; answers path:line: text.",
      parameters: {
        type: "object",
        properties: { query: { type: "string" }, path: { type: "string" } },
        required: ["query"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: {
      name: "run_tests",
      description: "Run the tests matching a pattern.",
      parameters: {
        type: "object",
        properties: { pattern: { type: "string" }, bail: { type: "boolean" } },
        required: ["pattern"],
        additionalProperties: false,
      },
    },
  },
]);

/** A tool's output, as it goes into the log. */
export interface FakeToolOutput {
  readonly content: string;
  readonly isError: boolean;
}

/** FNV-1a: a stable 32-bit hash, so the same file reads the same every time. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** A size in bytes between `min` and `max`, skewed towards `min` (most outputs are small, a few are large). */
function sizeFor(key: string, min: number, max: number): number {
  const r = (hash(key) % 10_000) / 10_000;
  return Math.round(min + (max - min) * r * r);
}

/** Lines from `line(i)` until `bytes` characters are reached. */
function fill(bytes: number, line: (i: number) => string): string {
  const out: string[] = [];
  let size = 0;
  for (let i = 1; size < bytes; i++) {
    const text = line(i);
    out.push(text);
    size += text.length + 1;
  }
  return out.join("\n");
}

function readFile(path: string): string {
  const name = (path.split("/").at(-1) ?? "module").replace(/\W/g, "_");
  const bytes = sizeFor(path, 2_000, 20_000);
  return fill(bytes, (i) =>
    i % 9 === 1
      ? `export function ${name}_${i}(log: ThreadLog, plan: CompactionPlan): number {`
      : i % 9 === 0
        ? "}"
        : `  const step${i} = resolve(log, "${name}.${i}", { limit: ${i * 7}, tag: "t${i % 13}" }); // keeps seq ${i}`,
  );
}

function search(query: string, path: string): string {
  const bytes = sizeFor(`${query}@${path}`, 1_000, 6_000);
  return fill(
    bytes,
    (i) =>
      `${path}module-${i % 17}.ts:${(i * 37) % 400}: const found = lookup("${query}", ${i}); // match ${i}`,
  );
}

function runTests(pattern: string, seed: string): string {
  const bytes = sizeFor(`${pattern}#${seed}`, 2_000, 8_000);
  const failing = hash(seed) % 4 === 0;
  const body = fill(bytes, (i) => `  ✓ ${pattern} > case ${i} handles "${pattern}" (${(i * 13) % 50} ms)`);
  return failing
    ? `${body}\n  ✗ ${pattern} > keeps the budget\n    AssertionError: expected 16384 to be less than 16000\n\nTests: 1 failed`
    : `${body}\n\nTests: all passed`;
}

function parseArgs(text: string): Readonly<Record<string, unknown>> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Runs a fake tool. The output depends only on the tool, its arguments and (for tests) the call id, so a run of
 * the harness is reproducible; bad arguments or an unknown tool come back as an error output, as real tools do.
 */
export function runFakeTool(name: string, args: string, callId: string): FakeToolOutput {
  const parsed = parseArgs(args);
  const text = (key: string, fallback: string) =>
    typeof parsed?.[key] === "string" ? (parsed[key] as string) : fallback;
  if (parsed === undefined) return { content: `error: arguments are not JSON: ${args}`, isError: true };
  if (name === "read_file") return { content: readFile(text("path", "README.md")), isError: false };
  if (name === "search") return { content: search(text("query", ""), text("path", "./")), isError: false };
  if (name === "run_tests") return { content: runTests(text("pattern", "test/"), callId), isError: false };
  return { content: `error: unknown tool ${JSON.stringify(name)}`, isError: true };
}
