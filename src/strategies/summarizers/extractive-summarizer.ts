/**
 * A summarizer without a model: it keeps what an agent needs from a span by simple, deterministic rules. The
 * calls actually made, one short line each (repeats folded) with a share of the room ahead of facts, and their
 * outcomes (errors, test results, exit codes) appended while room allows; the requests and facts stated in
 * user messages and tool results, chosen by salience (words rare in the thread and not visible in the kept
 * tail); the files and references touched; what is still open. Narration, questions the agent asks itself and
 * boilerplate repeated across messages carry no rare word and are left out. Every candidate has a priority, and
 * the least valuable go first until the text fits `maxTokens`; an earlier summary's items compete on the same
 * terms. Useful as the free fallback when no model is configured or the model keeps failing.
 */
import { SummarizerError } from "../../errors/ledger-error.js";
import { deepFreeze } from "../../log/deep-freeze.js";
import type { Message } from "../../log/message.js";
import type { StructuredSummary } from "../../plan/compaction-plan.js";
import type { Summarizer, SummaryRequest, SummaryResult } from "../summarizer.js";
import { BASE, extract, folded, peakOf } from "./extractive-items.js";
import { buildSalienceIndex, lineSalience, type SalienceIndex } from "./salience.js";
import {
  estimateTokens,
  fitRanked,
  formatSummary,
  type RankedItem,
  SUMMARY_FIELDS,
  type SummaryField,
} from "./summary-format.js";

/** Options of `createExtractiveSummarizer`. */
export interface ExtractiveSummarizerOptions {
  /** Token count of a text, to respect `maxTokens` when the request brings no counter (default: ceil(chars / 4)). */
  readonly countTokens?: (text: string) => number;
  /** Longest item in characters (default 200). */
  readonly maxItemChars?: number;
}

const ID = "extractive";
const PROMPT_VERSION = "extractive/3";

/**
 * The share of the summary's room that call lines get ahead of facts (their outcomes not included): the calls
 * made are what the agent would otherwise redo, and a line costs little. Beyond it they compete on their own
 * priority. The boost keeps them under the task and pending calls.
 */
const CALL_SHARE = 0.3;
const CALL_BOOST = 1;
/** An outcome that reports a test run. */
const TESTS = /\b\d+ (?:passed|failed|errors?|skipped)\b|^Ran \d+ tests?\b|\b(?:OK|FAILED)\b/;

/**
 * A deterministic summarizer that extracts goals, facts, tool calls and their outcomes, open items and artifact
 * references from a span without calling a model; the same request always gives the same bytes.
 *
 * @example
 * const summarizer = createExtractiveSummarizer({ countTokens: (t) => tokenizer.count(t) });
 * const { text } = await summarizer.summarize({ threadId: log.threadId, messages: log.messages, maxTokens: 600 });
 */
export function createExtractiveSummarizer(options: ExtractiveSummarizerOptions = {}): Summarizer {
  const maxItemChars = options.maxItemChars ?? 200;
  return Object.freeze({
    id: ID,
    promptVersion: PROMPT_VERSION,
    local: true,
    summarize(request: SummaryRequest): Promise<SummaryResult> {
      try {
        return Promise.resolve(summarizeNow(request, maxItemChars, options.countTokens));
      } catch (error) {
        return Promise.reject(error);
      }
    },
  });
}

function summarizeNow(
  request: SummaryRequest,
  maxItemChars: number,
  countTokens: ((text: string) => number) | undefined,
): SummaryResult {
  const where = { threadId: request.threadId };
  if (request.signal?.aborted === true)
    throw new SummarizerError(ID, "aborted", "the request was aborted", where);
  if (request.messages.length === 0)
    throw new SummarizerError(ID, "empty", "the span has no messages", where);
  const items = rankedItems(request, maxItemChars);
  if (items.length === 0) {
    throw new SummarizerError(ID, "empty", "nothing worth keeping was found in the span", where);
  }
  const count = request.countTokens ?? countTokens;
  const reserved = reserveForCalls(items, request.maxTokens, count ?? estimateTokens);
  const fitted = fitRanked(reserved, request.maxTokens, {
    maxItemChars,
    ...(count === undefined ? {} : { countTokens: count }),
  });
  if (fitted === undefined) {
    const problem = `not even one shortened item fits in maxTokens ${request.maxTokens}; raise the budget`;
    throw new SummarizerError(ID, "failed", problem, where);
  }
  return deepFreeze({ text: formatSummary(fitted), structured: fitted });
}

/** All the text a message shows: its text parts, call arguments and results. */
function shownText(message: Message): string {
  return message.parts
    .map((p) =>
      p.type === "text"
        ? p.text
        : p.type === "tool_call"
          ? `${p.name} ${p.args}`
          : p.type === "tool_result"
            ? p.content
            : "",
    )
    .join("\n");
}

function rankedItems(request: SummaryRequest, maxItemChars: number): RankedItem[] {
  const { messages, previous } = request;
  const documents = messages.map(shownText);
  const earlier = previous === undefined ? [] : SUMMARY_FIELDS.flatMap((f) => previous.structured[f] ?? []);
  // The earlier summary stands for the messages it covers: one document, so its rare words stay rare.
  if (earlier.length > 0) documents.push(earlier.join("\n"));
  const index = buildSalienceIndex(documents, (request.tail ?? []).map(shownText));
  const items = previous === undefined ? [] : rerank(previous.structured, index);
  return folded([...items, ...extract(messages, index, maxItemChars, items.length === 0)]);
}

/** An earlier summary's items, ranked on the same terms as new ones (without a recency bonus: they are older). */
function rerank(structured: StructuredSummary, index: SalienceIndex): RankedItem[] {
  const out: RankedItem[] = [];
  let order = -1_000_000;
  const rank: { readonly [F in SummaryField]-?: (item: string, i: number) => number } = {
    goals: (item, i) => (i === 0 ? BASE.task : BASE.goal + lineSalience(item, index).score),
    constraints: (item) => BASE.fact + lineSalience(item, index).score,
    decisions: (item) => BASE.decision + lineSalience(item, index).score,
    openItems: (item) => BASE.question + lineSalience(item, index).score,
    toolOutcomes: (item) => BASE.call + 0.3 * peakOf(item, index),
    artifacts: (item) => BASE.artifact + 0.5 * peakOf(item, index),
  };
  for (const field of SUMMARY_FIELDS) {
    (structured[field] ?? []).forEach((text, i) => {
      if (field !== "toolOutcomes") {
        out.push({ field, text, priority: rank[field](text, i), order: order++ });
        return;
      }
      // A call line and its outcome: the outcome goes first when room runs out, as for a fresh call.
      const [call = text, ...rest] = text.split(" → ");
      const outcome = rest.join(" → ");
      const base = /^error:/.test(outcome) || TESTS.test(outcome) ? BASE.failedOrTested : BASE.outcome;
      const detail = { text: ` → ${outcome}`, priority: base + 0.3 * peakOf(text, index) };
      const item = { field, text: call, priority: rank[field](call, i), order: order++ };
      out.push(outcome === "" ? item : { ...item, detail });
    });
  }
  return out;
}

/**
 * Call lines (without their outcomes) get the first {@link CALL_SHARE} of the room ahead of facts: the most
 * valuable of them, as many as that share holds, are boosted; the rest compete on their own priority.
 */
function reserveForCalls(
  items: ReadonlyArray<RankedItem>,
  maxTokens: number,
  count: (text: string) => number,
): RankedItem[] {
  const calls = items
    .map((item, i) => ({ item, i }))
    .filter(({ item }) => item.field === "toolOutcomes")
    .sort((a, b) => b.item.priority - a.item.priority || a.item.order - b.item.order);
  const boosted = new Set<number>();
  let room = Math.floor(maxTokens * CALL_SHARE);
  for (const { item, i } of calls) {
    room -= count(`- ${item.text}`) + 1;
    if (room < 0) break;
    boosted.add(i);
  }
  return items.map((item, i) => (boosted.has(i) ? { ...item, priority: item.priority + CALL_BOOST } : item));
}
