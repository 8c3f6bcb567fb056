/**
 * The "model" behind the example's local server: a deterministic policy that answers a Chat Completions request
 * the way a coding agent's model does — mostly parallel tool calls, now and then a plain-text report — so a
 * harness can be driven for hundreds of turns without a real model.
 */
import { SeededRandom } from "../src/sample/index.js";

/** One tool call as the model emits it (`arguments` is JSON text, as the API sends it). */
export interface ScriptedToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** What the model answers one request with. */
export interface ScriptedReply {
  /** Text of the reply; null when it only calls tools. */
  readonly content: string | null;
  readonly toolCalls: ReadonlyArray<ScriptedToolCall>;
}

/** Options of {@link createScriptedAgentModel}. */
export interface ScriptedAgentOptions {
  /** Seeds every choice, so the same requests in the same order get the same replies (default 1). */
  readonly seed?: number;
  /** Chance of a plain-text report after tool results (default 0.2). */
  readonly textChance?: number;
}

/** Decides the reply to the `n`-th request (1-based) from its body. */
export type ScriptedAgentModel = (body: Readonly<Record<string, unknown>>, n: number) => ScriptedReply;

const MODULES = [
  "thread-log",
  "resolve-plan",
  "render-prompt",
  "token-budget",
  "tool-result-retention",
  "summarization",
  "sqlite-log-store",
  "context-engine",
  "calibration",
  "hard-fallback",
] as const;

const TERMS = [
  "pendingCalls",
  "tokenCount",
  "planVersion",
  "groupIndexOf",
  "TODO",
  "flaky",
  "timeout",
] as const;

const REPORTS = [
  "The failing assertion comes from the budget check: the request was counted before the tool schemas were added.",
  "Tests pass locally now; the remaining failure is a timing issue in the background summarizer.",
  "I traced the orphaned result to the renderer: results held away from their call are regrouped behind it.",
  "The plan resolver keeps earlier decisions, so the cached prefix survives; I have not changed it.",
] as const;

/** The project's seeded generator as a function, for the choices below. */
function random(seed: number): () => number {
  const rng = new SeededRandom(seed);
  return () => rng.next();
}

function pick<T>(items: ReadonlyArray<T>, next: () => number): T {
  return items[Math.floor(next() * items.length)]!;
}

/** A Fisher–Yates shuffle driven by `next`. */
function shuffled<T>(items: ReadonlyArray<T>, next: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** JSON arguments a coding agent would pass to each of the example's tools; `{}` for tools it does not know. */
function argumentsFor(name: string, next: () => number): string {
  const module = pick(MODULES, next);
  const args: Readonly<Record<string, unknown>> =
    name === "read_file"
      ? { path: `src/${module}.ts` }
      : name === "search"
        ? { query: pick(TERMS, next), path: "src/" }
        : name === "run_tests"
          ? { pattern: `test/${module}.test.ts`, bail: next() < 0.5 }
          : {};
  return JSON.stringify(args);
}

/** The tool names a request offers (`tools[].function.name`). */
function offeredTools(body: Readonly<Record<string, unknown>>): ReadonlyArray<string> {
  if (!Array.isArray(body.tools)) return [];
  const names: string[] = [];
  for (const tool of body.tools as ReadonlyArray<{ readonly function?: { readonly name?: unknown } }>) {
    if (typeof tool?.function?.name === "string") names.push(tool.function.name);
  }
  return names;
}

function lastRole(body: Readonly<Record<string, unknown>>): unknown {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  return (messages.at(-1) as { readonly role?: unknown } | undefined)?.role;
}

/**
 * Creates the scripted model. A fresh user message always gets tool calls (1–3 distinct tools, in parallel);
 * after tool results it reports in plain text with probability `textChance`; without `tools` it can only talk.
 *
 * @example
 * const model = createScriptedAgentModel({ seed: 7 });
 * model({ messages: [{ role: "user", content: "fix it" }], tools }, 1).toolCalls.length; // 1–3
 */
export function createScriptedAgentModel(options: ScriptedAgentOptions = {}): ScriptedAgentModel {
  const seed = options.seed ?? 1;
  const textChance = options.textChance ?? 0.2;
  return (body, n) => {
    // One generator per request, seeded by its number: a reply does not depend on how earlier ones were drawn.
    const next = random(seed * 1_000_003 + n);
    const tools = offeredTools(body);
    const talk = tools.length === 0 || (lastRole(body) !== "user" && next() < textChance);
    if (talk) return { content: pick(REPORTS, next), toolCalls: [] };
    const count = Math.min(tools.length, 1 + Math.floor(next() * 3));
    const names = shuffled(tools, next).slice(0, count);
    const toolCalls = names.map((name, k) => ({
      id: `call_${String(n).padStart(5, "0")}_${k}`,
      name,
      arguments: argumentsFor(name, next),
    }));
    // Models sometimes say a word before calling tools; most of the time the content is null.
    const content = next() < 0.15 ? "Let me look at that." : null;
    return { content, toolCalls };
  };
}
