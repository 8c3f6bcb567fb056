/**
 * Planted facts for the retention benchmark: 16 made-up facts per run (8 carry an identifier such as `KX-48213`,
 * 8 a pronounceable made-up word such as `velmorine`), each a neutral sentence inserted at a line boundary of a
 * tool result or user message at a chosen depth of the run, plus one pinned constraint right after the system
 * prompt. Everything is drawn from a seeded generator, so a run is the same every time.
 */
import type { MessageInput, Part } from "../../src/log/message.js";
import { SeededRandom } from "../../src/sample/seeded-random.js";

/** The two kinds of key a fact carries; they are reported separately. */
export type FactKind = "identifier" | "word";

/** Where in the run a fact is planted, as a share of the run's messages. */
export const DEPTH_BANDS = [
  { name: "0-10 %", from: 0, to: 0.1 },
  { name: "10-50 %", from: 0.1, to: 0.5 },
  { name: "50-90 %", from: 0.5, to: 0.9 },
] as const;

/** One planted fact. */
export interface PlantedFact {
  readonly kind: FactKind;
  /** The token whose presence anywhere in a request counts the fact as kept. */
  readonly key: string;
  readonly sentence: string;
  /** Index of the message (in the planted run) that holds it. */
  readonly messageIndex: number;
  /** Index into {@link DEPTH_BANDS}. */
  readonly band: number;
}

/** A run with its facts planted and its pinned constraint inserted. */
export interface PlantedRun {
  readonly messages: ReadonlyArray<MessageInput>;
  readonly facts: ReadonlyArray<PlantedFact>;
  /** Index of the pinned constraint message. */
  readonly pinnedIndex: number;
  readonly pinnedText: string;
  /** Index of the thread's first user message other than the pinned one (the task). */
  readonly taskIndex: number;
}

const FACTS_PER_KIND = 8;

// Neutral sentences; `{k}` is the key. None of them asks the model to do anything.
const TEMPLATES = [
  "Note: the staging bucket is called {k}.",
  "For reference, the release branch for this work is tagged {k}.",
  "The internal ticket that tracks this change is {k}.",
  "Side note: the fallback region in the deployment config is named {k}.",
  "FYI, the shared cache key prefix on this host is {k}.",
  "The nightly build that last touched this area was labelled {k}.",
  "Background: the team calls the legacy importer {k}.",
  "The audit folder for these runs is {k}.",
] as const;

const CONSONANTS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z"];
const VOWELS = ["a", "e", "i", "o", "u"];
const ENDINGS = ["ine", "ora", "ent", "ix", "ell", "und", "ar", "ossa"];
const LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ";

function identifier(rng: SeededRandom): string {
  const a = LETTERS[rng.int(0, LETTERS.length - 1)]!;
  const b = LETTERS[rng.int(0, LETTERS.length - 1)]!;
  return `${a}${b}-${rng.int(10_000, 99_999)}`;
}

function madeUpWord(rng: SeededRandom): string {
  let word = "";
  for (let i = rng.int(2, 3); i > 0; i--) word += rng.pick(CONSONANTS) + rng.pick(VOWELS);
  return word + rng.pick(CONSONANTS) + rng.pick(ENDINGS);
}

/** A key of `kind` that occurs nowhere in `haystack` (lower-cased) and was not drawn before. */
function freshKey(kind: FactKind, rng: SeededRandom, haystack: string, taken: Set<string>): string {
  for (;;) {
    const key = kind === "identifier" ? identifier(rng) : madeUpWord(rng);
    if (!taken.has(key) && !haystack.includes(key.toLowerCase())) {
      taken.add(key);
      return key;
    }
  }
}

function hostable(m: MessageInput): boolean {
  if (m.meta?.pinned === true) return false;
  if (m.role === "tool") return m.parts.some((p) => p.type === "tool_result");
  return m.role === "user" && m.parts.some((p) => p.type === "text");
}

/** A host message in the band, or the hostable message nearest to it when the band has none. */
function pickHost(messages: ReadonlyArray<MessageInput>, band: number, rng: SeededRandom): number {
  const { from, to } = DEPTH_BANDS[band]!;
  const hosts = messages.flatMap((m, i) => (hostable(m) ? [i] : []));
  const inBand = hosts.filter((i) => i >= from * messages.length && i < to * messages.length);
  if (inBand.length > 0) return rng.pick(inBand);
  const middle = ((from + to) / 2) * messages.length;
  return hosts.reduce((best, i) => (Math.abs(i - middle) < Math.abs(best - middle) ? i : best), hosts[0]!);
}

function insertLine(text: string, sentence: string, rng: SeededRandom): string {
  const lines = text.split("\n");
  lines.splice(rng.int(0, lines.length), 0, sentence);
  return lines.join("\n");
}

/** The message with `sentence` inserted into its first tool result or text part. */
function withSentence(m: MessageInput, sentence: string, rng: SeededRandom): MessageInput {
  const at = m.parts.findIndex((p) => (m.role === "tool" ? p.type === "tool_result" : p.type === "text"));
  const parts: Part[] = m.parts.map((p, i) => {
    if (i !== at) return p;
    if (p.type === "tool_result") return { ...p, content: insertLine(p.content, sentence, rng) };
    if (p.type === "text") return { ...p, text: insertLine(p.text, sentence, rng) };
    return p;
  });
  return { ...m, parts };
}

function pinnedMessage(rng: SeededRandom, haystack: string, taken: Set<string>): MessageInput {
  const code = freshKey("identifier", rng, haystack, taken);
  const text =
    `Standing constraint (${code}): do not modify files outside the repository or task scope, ` +
    "and report every command that fails together with its exit code.";
  return { role: "user", parts: [{ type: "text", text }], meta: { pinned: true } };
}

/** Plants 16 facts and a pinned constraint into a run, deterministically from `seed`. */
export function plantFacts(source: ReadonlyArray<MessageInput>, seed: number): PlantedRun {
  const rng = new SeededRandom(seed);
  const haystack = JSON.stringify(source).toLowerCase();
  const taken = new Set<string>();
  const messages = [...source];
  const pinnedIndex = messages[0]?.role === "system" ? 1 : 0;
  const pinned = pinnedMessage(rng, haystack, taken);
  messages.splice(pinnedIndex, 0, pinned);
  const facts: PlantedFact[] = [];
  for (let i = 0; i < 2 * FACTS_PER_KIND; i++) {
    const kind: FactKind = i % 2 === 0 ? "identifier" : "word";
    const key = freshKey(kind, rng, haystack, taken);
    const sentence = rng.pick(TEMPLATES).replace("{k}", key);
    const band = i % DEPTH_BANDS.length;
    const messageIndex = pickHost(messages, band, rng);
    messages[messageIndex] = withSentence(messages[messageIndex]!, sentence, rng);
    facts.push({ kind, key, sentence, messageIndex, band });
  }
  const taskIndex = messages.findIndex((m, i) => i !== pinnedIndex && m.role === "user");
  const pinnedPart = pinned.parts[0];
  const pinnedText = pinnedPart?.type === "text" ? pinnedPart.text : "";
  return { messages, facts, pinnedIndex, pinnedText, taskIndex };
}
