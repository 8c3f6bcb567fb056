/**
 * What the extractive summarizer finds in a span, as ranked items: the task and later goals stated by the user,
 * salient facts of user messages and tool results, the statements of answers, the calls made with their outcomes,
 * the calls still pending, the user's last question and the references touched. An item's priority is its
 * kind's base plus the rarity of its words in the thread and its recency.
 */
import type { Message, ToolCallPart, ToolResultPart } from "../../log/message.js";
import { callLabel, outcomeOf } from "./call-outcome.js";
import { type LineSalience, lineSalience, type SalienceIndex, wordsOf } from "./salience.js";
import { normalizeItem, type RankedItem } from "./summary-format.js";
import { argStrings, firstSentences, referencesIn, sentences, TAG } from "./text-pieces.js";

/** Base priorities by kind of item: what an agent needs most survives longest; salience and recency add to them. */
export const BASE = {
  task: 3,
  pending: 3,
  goal: 1.2,
  failedOrTested: 1.3,
  call: 0.9,
  outcome: 0.7,
  question: 0.8,
  fact: 0.6,
  decision: 0.4,
  artifact: 0.3,
} as const;
/** A word used in at most two messages weighs at least this much; rarer lines than that are worth no room. */
const RARE = 0.5;
const MIN_FACT_SCORE = 0.3;
const FACTS_PER_MESSAGE = 12;
const DECISIONS_PER_MESSAGE = 2;
/** Each further fact from the same message is worth this much less, so one big output cannot crowd out the rest. */
const FACT_DECAY = 0.8;
/** Openings of the agent talking to itself: not a statement worth keeping. */
const NARRATION =
  /^(?:I'll|I will|I'm going to|I am going to|I need to|I should|I think|I see|I can see|Let me|Let's|Let us|Now\b|Next\b|First\b|Finally\b|Okay|OK\b|Great|Perfect|Good|Alright|Looking at|It (?:seems|looks))/i;

/** The weight of the rarest word of a text. */
export function peakOf(text: string, index: SalienceIndex): number {
  let peak = 0;
  for (const word of wordsOf(text)) peak = Math.max(peak, index.weight(word));
  return peak;
}

interface Extraction {
  readonly index: SalienceIndex;
  readonly maxItemChars: number;
  readonly items: RankedItem[];
  /** No earlier summary: the first request of the span is the task as first stated. */
  taskPending: boolean;
  /**
   * Whether a line of the message being read can be a fact or decision at all: one needs a word weighing
   * {@link RARE}, and most messages of a long thread hold none (their lines need not be weighed).
   */
  rare: boolean;
}

interface OpenCall {
  readonly call: ToolCallPart;
  readonly order: number;
}

/** A call whose result the span holds: its line, where it is read, and its item's place in the extraction. */
interface MadeCall {
  readonly label: string;
  readonly order: number;
  readonly result: ToolResultPart;
  readonly recency: number;
  readonly at: number;
}

/**
 * The ranked items of a span's messages, read in order (`first`: there is no earlier summary, so the span's first
 * request is the task as first stated). Call lines are folded by {@link folded} afterwards.
 */
export function extract(
  messages: ReadonlyArray<Message>,
  index: SalienceIndex,
  maxItemChars: number,
  first: boolean,
): RankedItem[] {
  const x: Extraction = { index, maxItemChars, items: [], taskPending: first, rare: true };
  const open = new Map<string, OpenCall>();
  const made: MadeCall[] = [];
  let question: RankedItem | undefined;
  messages.forEach((message, i) => {
    const at = (i + 1) * 100_000;
    const recency = (i + 1) / messages.length;
    const text = message.parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n");
    if (message.role === "system") return;
    // The span's documents are its messages' texts in order (see `rankedItems`).
    x.rare = index.ceiling(i) >= RARE;
    if (message.role === "user") question = userItems(x, text, at, recency) ?? question;
    const calls = message.parts.filter((p): p is ToolCallPart => p.type === "tool_call");
    if (message.role === "assistant" && calls.length === 0) decisionItems(x, text, at, recency);
    artifactItems(x, [text, ...calls.flatMap((c) => argStrings(c.args))].join("\n"), at);
    message.parts.forEach((part, p) => {
      if (part.type === "tool_call") open.set(part.callId, { call: part, order: at + p });
      if (part.type !== "tool_result") return;
      const pending = open.get(part.callId);
      open.delete(part.callId);
      const label =
        pending === undefined
          ? `${message.meta.toolName ?? "tool"} [${part.callId}]`
          : callLabel(pending.call);
      const order = pending?.order ?? at + p;
      // Its line for now; the whole item once it is known to be the last call of that line (see below).
      made.push({ label, order, result: part, recency, at: x.items.length });
      x.items.push({ field: "toolOutcomes", text: label, priority: 0, order });
      // Its facts stand on their own: the outcome is the first thing given back when room runs short, and a
      // repeated call keeps one outcome only.
      factItems(x, part.content, at + 100, recency, {});
    });
  });
  // Folding keeps the last call of each line and only the number of the others (see `folded`): only the last
  // one's outcome and worth are worked out. A long agent run repeats most of its calls.
  const lastOfLine = new Map<string, MadeCall>();
  for (const call of made) {
    const line = foldedLine(call.label).line;
    const known = lastOfLine.get(line);
    if (known === undefined || known.order < call.order) lastOfLine.set(line, call);
  }
  for (const call of lastOfLine.values()) x.items[call.at] = callItem(x, call);
  // Calls still waiting for their result are open work, not outcomes.
  for (const { call, order } of open.values()) {
    x.items.push({
      field: "openItems",
      text: `waiting for the result of ${callLabel(call)}`,
      priority: BASE.pending,
      order,
    });
  }
  if (question !== undefined) x.items.push(question);
  return x.items;
}

/**
 * A call made, as a short line (`name(main argument…)`) worth keeping on its own, with its outcome as the detail
 * appended while room allows: worth more when the call failed or ran tests, or when it states a rare fact.
 */
function callItem(x: Extraction, { label, order, result, recency }: MadeCall): RankedItem {
  const outcome = outcomeOf(result.content, result.isError === true);
  const base = outcome.failed || outcome.tested ? BASE.failedOrTested : BASE.outcome;
  // The outcome may itself be the result's most salient fact: it is worth as much as that fact.
  const asFact = BASE.fact + lineSalience(outcome.text, x.index).score;
  const worth = Math.max(base + 0.3 * peakOf(`${label} ${outcome.text}`, x.index), asFact);
  return {
    field: "toolOutcomes",
    text: label,
    priority: BASE.call + 0.3 * peakOf(label, x.index) + 0.15 * recency,
    order,
    detail: { text: ` → ${outcome.text}`, priority: worth + 0.15 * recency },
  };
}

/** A call line without its ` ×N` count (an earlier summary's folded line), and that count (1 without). */
function foldedLine(text: string): { readonly line: string; readonly times: number } {
  const [, line = text, times = "1"] = /^(.*) \u00d7(\d+)$/.exec(text) ?? [];
  return { line, times: Number(times) };
}

/**
 * Calls with the same line (a retried command, a test run after each edit; an earlier summary's lines
 * included) as one line `… ×N` where the last of them was made, with its outcome: the line tells what was run,
 * the count how often.
 */
export function folded(items: ReadonlyArray<RankedItem>): RankedItem[] {
  const out: RankedItem[] = [];
  const byLine = new Map<string, { times: number; last: RankedItem }>();
  for (const item of [...items].sort((a, b) => a.order - b.order)) {
    if (item.field !== "toolOutcomes") {
      out.push(item);
      continue;
    }
    const { line, times } = foldedLine(item.text);
    const known = byLine.get(line);
    byLine.set(line, { times: (known?.times ?? 0) + times, last: { ...item, text: line } });
  }
  for (const { times, last } of byLine.values())
    out.push(times === 1 ? last : { ...last, text: `${last.text} ×${times}` });
  return out;
}

/** A user message: its opening as a goal when salient, its other salient lines as facts; its last question. */
function userItems(x: Extraction, text: string, at: number, recency: number): RankedItem | undefined {
  const found = sentences(text);
  const opening = firstSentences(found);
  if (opening !== undefined) {
    const salience = lineSalience(opening, x.index);
    if (x.taskPending || salience.peak >= RARE) {
      const priority = x.taskPending ? BASE.task : BASE.goal + salience.score + 0.15 * recency;
      x.items.push({ field: "goals", text: opening, priority, order: at });
      x.taskPending = false;
    }
  }
  factItems(x, text, at + 1, recency, { skip: opening, sentences: true });
  const asked = found.findLast((s) => s.endsWith("?"));
  if (asked === undefined) return undefined;
  const salience = lineSalience(asked, x.index);
  if (salience.peak < RARE) return undefined;
  return {
    field: "openItems",
    text: `user asked: ${asked}`,
    priority: BASE.question + salience.score,
    order: at + 2,
  };
}

/** An answer or conclusion (an assistant message without calls): its salient statements, never narration. */
function decisionItems(x: Extraction, text: string, at: number, recency: number): void {
  if (!x.rare) return;
  const scored = sentences(text)
    .filter((s) => !NARRATION.test(s) && !s.endsWith("?"))
    .map((s, i) => ({ s, i, salience: lineSalience(s, x.index) }))
    .filter((c) => c.salience.peak >= RARE)
    .sort((a, b) => b.salience.score - a.salience.score || a.i - b.i)
    .slice(0, DECISIONS_PER_MESSAGE);
  for (const { s, i, salience } of scored) {
    const priority = BASE.decision + salience.score + 0.1 * recency;
    x.items.push({ field: "decisions", text: s, priority, order: at + 10 + i });
  }
}

interface FactLine {
  readonly text: string;
  readonly line: number;
  readonly salience: LineSalience;
}

/** How {@link factItems} reads a text. */
interface FactOptions {
  /** Text already kept (a goal, an outcome line): a fact it contains is not repeated. */
  readonly skip?: string | undefined;
  /** Cut every line into sentences (prose), not only long ones (output). */
  readonly sentences?: boolean;
}

/**
 * The salient lines of a text as facts: each line (a long one cut into sentences) scored by salience, the best
 * few kept, each further one from the same text worth a little less; a long line is cut to the part around its
 * rarest word.
 */
function factItems(x: Extraction, content: string, at: number, recency: number, options: FactOptions): void {
  if (!x.rare) return;
  const { skip } = options;
  const found: FactLine[] = [];
  content.split(/\r?\n/).forEach((raw, line) => {
    const stripped = raw.replace(TAG, " ");
    if (stripped.trim().length < 8) return;
    const cut = options.sentences === true || stripped.length > 2 * x.maxItemChars;
    const pieces = cut ? stripped.split(/(?<=[.!?;])\s+/) : [stripped];
    for (const piece of pieces) {
      const salience = lineSalience(piece, x.index);
      if (salience.peak < RARE || salience.score < MIN_FACT_SCORE) continue;
      const text = excerpt(normalizeItem(piece), salience.peakWord, x.maxItemChars);
      if (skip?.includes(text) === true || x.index.shows(piece)) continue;
      found.push({ text, line, salience });
    }
  });
  found.sort((a, b) => b.salience.score - a.salience.score || a.line - b.line);
  found.slice(0, FACTS_PER_MESSAGE).forEach((fact, k) => {
    const priority = BASE.fact + fact.salience.score * FACT_DECAY ** k + 0.15 * recency;
    x.items.push({ field: "constraints", text: fact.text, priority, order: at + fact.line });
  });
}

/** The part of a long line around `word`, marked with "…" where it was cut. */
function excerpt(line: string, word: string | undefined, max: number): string {
  if (line.length <= max) return line;
  const at = word === undefined ? 0 : Math.max(0, line.toLowerCase().indexOf(word));
  const start = Math.max(0, Math.min(at - Math.floor(max / 3), line.length - max + 2));
  const body = line.slice(start, start + max - 2).trim();
  return `${start > 0 ? "…" : ""}${body}${start + max - 2 < line.length ? "…" : ""}`;
}

/** Files, URLs and artifact ids, ranked by how rare they are in the thread. */
function artifactItems(x: Extraction, text: string, at: number): void {
  referencesIn(text).forEach((ref, i) => {
    const priority = BASE.artifact + 0.5 * peakOf(ref, x.index);
    x.items.push({ field: "artifacts", text: ref, priority, order: at + 50 + i });
  });
}
