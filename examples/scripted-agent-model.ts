/**
 * The "model" behind the example's local server: a deterministic policy that answers a Chat Completions request
 * the way a coding agent's model does — mostly parallel tool calls, now and then a plain-text report, and now and
 * then a reference back to content compaction moved out (a pointer's artifact id or a few words) — so a harness
 * can be driven for hundreds of turns without a real model.
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
  /**
   * Chance that a request showing pointers to externalized content gets a reply referring back to them (default
   * 0.2): a `recall` call by artifact id or by query, or an artifact id named in the text or in a tool call's
   * arguments. Only when the request offers `recall`.
   */
  readonly referenceChance?: number;
  /** Chance that an artifact id the model refers to is mistyped, as models now and then garble ids (default 0.05). */
  readonly typoChance?: number;
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

/** How a reply refers back to compacted content. */
export type ReferenceKind = "recallId" | "recallQuery" | "text" | "argument";

/** How often each kind is chosen: recall by id most, as the pointer asks. */
const REFERENCE_WEIGHTS: ReadonlyArray<readonly [ReferenceKind, number]> = [
  ["recallId", 0.4],
  ["recallQuery", 0.2],
  ["text", 0.2],
  ["argument", 0.2],
];

/** The sentence of a pointer that names its artifact (`… stored as artifact art_<hex>`). */
const POINTER_ID = /stored as artifact (art_[0-9a-f]+)/g;

/** The artifact ids the request's pointers name, in the order they appear, each once. */
export function pointerIds(body: Readonly<Record<string, unknown>>): ReadonlyArray<string> {
  const ids = new Set<string>();
  for (const m of Array.isArray(body.messages) ? body.messages : []) {
    const content = (m as { readonly content?: unknown } | undefined)?.content;
    if (typeof content !== "string") continue;
    for (const match of content.matchAll(POINTER_ID)) ids.add(match[1]!);
  }
  return [...ids];
}

function weighted<T>(items: ReadonlyArray<readonly [T, number]>, next: () => number): T {
  let r = next() * items.reduce((sum, [, w]) => sum + w, 0);
  for (const [item, w] of items) {
    r -= w;
    if (r < 0) return item;
  }
  return items.at(-1)![0];
}

/** The id as the model writes it: now and then with its last character wrong. */
function recalledId(id: string, typoChance: number, next: () => number): string {
  if (next() >= typoChance) return id;
  const last = id.at(-1) === "0" ? "1" : "0";
  return `${id.slice(0, -1)}${last}`;
}

/** A reply that refers back to an artifact (or, for a query, to words of earlier work). */
function referenceReply(
  kind: ReferenceKind,
  id: string,
  n: number,
  tools: ReadonlyArray<string>,
  next: () => number,
): ScriptedReply {
  const callId = (k: number) => `call_${String(n).padStart(5, "0")}_${k}`;
  const recall = (args: Readonly<Record<string, unknown>>) => ({
    content: null,
    toolCalls: [{ id: callId(0), name: "recall", arguments: JSON.stringify(args) }],
  });
  if (kind === "recallId") return recall({ artifactId: id });
  if (kind === "recallQuery")
    return recall({ query: `${pick(TERMS, next)} ${pick(MODULES, next)}`, limit: 3 });
  const others = tools.filter((t) => t !== "recall");
  if (kind === "text" || !others.includes("search")) {
    const content = `I need ${id} again to compare it with what I see now.`;
    if (others.length === 0) return { content, toolCalls: [] };
    const name = pick(others, next);
    return { content, toolCalls: [{ id: callId(0), name, arguments: argumentsFor(name, next) }] };
  }
  // An id inside a tool's arguments: the model searches the repository for where that output came from.
  return {
    content: null,
    toolCalls: [{ id: callId(0), name: "search", arguments: JSON.stringify({ query: id, path: "src/" }) }],
  };
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
 * When the request offers `recall` and shows pointers, it refers back with probability `referenceChance` (see
 * `ReferenceKind`); `recall` is never among the 1–3 ordinary calls.
 *
 * @example
 * const model = createScriptedAgentModel({ seed: 7 });
 * model({ messages: [{ role: "user", content: "fix it" }], tools }, 1).toolCalls.length; // 1–3
 */
export function createScriptedAgentModel(options: ScriptedAgentOptions = {}): ScriptedAgentModel {
  const seed = options.seed ?? 1;
  const textChance = options.textChance ?? 0.2;
  const referenceChance = options.referenceChance ?? 0.2;
  const typoChance = options.typoChance ?? 0.05;
  return (body, n) => {
    // One generator per request, seeded by its number: a reply does not depend on how earlier ones were drawn.
    const next = random(seed * 1_000_003 + n);
    const offered = offeredTools(body);
    const ids = offered.includes("recall") ? pointerIds(body) : [];
    if (ids.length > 0 && next() < referenceChance) {
      const id = recalledId(pick(ids, next), typoChance, next);
      return referenceReply(weighted(REFERENCE_WEIGHTS, next), id, n, offered, next);
    }
    const tools = offered.filter((t) => t !== "recall");
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
