/**
 * The judge of the reachability benchmark: for one prepared request, which of the thread's tool results the plan
 * compacts, and for each whether the model could have it back — a pointer in the request that leads to it, and a
 * `recall` that brings it. Pure bookkeeping over what the engine returned; every recall goes through the public
 * `engine.recall`.
 */
import type { ContextEngine } from "../../src/engine/context-engine.js";
import type { Explanation, MessageFate } from "../../src/engine/explain.js";
import type { RecallRequest, RecallResult } from "../../src/engine/recall.js";
import type { MessageInput, ToolResultPart } from "../../src/log/message.js";
import type { ThreadLog } from "../../src/log/thread-log.js";
import type { CompactionPlan } from "../../src/plan/compaction-plan.js";
import type { RenderedMessage, RenderedPrompt } from "../../src/render/rendered-prompt.js";
import { searchTextOf, searchWords } from "../../src/stores/log-search.js";
import { recallCallHint } from "../../src/texts/placeholders.js";

/** What became of a compacted tool result: anything but kept. */
export type CompactedFate = Exclude<MessageFate, "kept">;

export const FATES: ReadonlyArray<CompactedFate> = ["cleared", "summarized", "externalized", "dropped"];

/** Counts of one fate: results seen compacted (one per request they were compacted in) and how many were reachable. */
export interface FateTally {
  compacted: number;
  reachable: number;
  /** Of the reachable, those the recall answer held only cut (head and tail) because of the recall cap. */
  cut: number;
}

export type ReachTally = Record<CompactedFate, FateTally>;

export function emptyReachTally(): ReachTally {
  return {
    cleared: { compacted: 0, reachable: 0, cut: 0 },
    summarized: { compacted: 0, reachable: 0, cut: 0 },
    externalized: { compacted: 0, reachable: 0, cut: 0 },
    dropped: { compacted: 0, reachable: 0, cut: 0 },
  };
}

export function addReachTallies(a: ReachTally, b: ReachTally): ReachTally {
  const out = emptyReachTally();
  for (const fate of FATES) {
    out[fate].compacted = a[fate].compacted + b[fate].compacted;
    out[fate].reachable = a[fate].reachable + b[fate].reachable;
    out[fate].cut = a[fate].cut + b[fate].cut;
  }
  return out;
}

/** One compacted result that was not reachable, and why (the first few of a run are kept for the report). */
export interface Miss {
  readonly call: number;
  readonly fate: CompactedFate;
  readonly callId: string;
  readonly why: string;
}

/**
 * How rare each word is in the thread so far (messages holding it), for choosing the words a query for a result
 * would use: its rarest words are what tells it apart from everything else.
 */
export class WordRarity {
  readonly #holders = new Map<string, number>();

  add(message: MessageInput): void {
    for (const word of new Set(searchTextOf(message).split(" "))) {
      if (word !== "") this.#holders.set(word, (this.#holders.get(word) ?? 0) + 1);
    }
  }

  /** The `n` rarest words of a text with a letter in them (numbers alone are not what one searches for). */
  rarest(text: string, n: number): string[] {
    const words = [...new Set(searchWords(text).slice(0, 20_000))].filter((w) => /\p{L}/u.test(w));
    const rank = (w: string) => this.#holders.get(w) ?? 0;
    return words
      .map((word, at) => ({ word, at }))
      .sort((a, b) => rank(a.word) - rank(b.word) || b.word.length - a.word.length || a.at - b.at)
      .slice(0, n)
      .map((w) => w.word);
  }
}

/** Everything the judge needs about one prepared request. */
export interface RequestView {
  readonly engine: ContextEngine;
  readonly threadId: string;
  /** The call's number in the run (1-based), for the report. */
  readonly call: number;
  readonly prompt: RenderedPrompt;
  readonly explanation: Explanation;
  readonly plan: CompactionPlan;
  /** The thread's messages by id, as appended. */
  readonly messages: ReadonlyMap<string, MessageInput>;
  /** The same messages as a log, for the call/result pairing. */
  readonly log: ThreadLog;
  readonly rarity: WordRarity;
}

/** How much of a result an answer holds: all of it, its head (the answer was cut to the recall cap), or none. */
function holds(answer: string, content: string): "whole" | "cut" | "no" {
  if (answer.includes(content)) return "whole";
  const head = content.slice(0, 60);
  return head.length > 0 && answer.includes(head) ? "cut" : "no";
}

/** The JSON-escaped form of a text as it sits inside an artifact's JSON lines. */
const escaped = (text: string) => JSON.stringify(text).slice(1, -1);

async function tryRecall(view: RequestView, request: RecallRequest): Promise<RecallResult | string> {
  try {
    return await view.engine.recall(view.threadId, request);
  } catch (error) {
    return `recall ${JSON.stringify(request)} failed: ${(error as Error).message}`;
  }
}

/** How a reachable result came back. */
export type Route =
  | "shown whole"
  | "recall by call id"
  | "recall by artifact id"
  | "query: its own words"
  | "query: its call's words"
  | "query: the same call run again";

type Verdict =
  | { readonly ok: true; readonly cut: boolean; readonly route: Route }
  | { readonly ok: false; readonly why: string };

const fail = (why: string): Verdict => ({ ok: false, why });

function verdictOf(answer: string, content: string, route: Route): Verdict {
  const held = holds(answer, content);
  return held === "no"
    ? fail(`${route}: the answer does not hold the result`)
    : { ok: true, cut: held === "cut", route };
}

/** Where each compacted message is pointed at in the request: by rendered message, per source id. */
function pointersBySource(prompt: RenderedPrompt): Map<string, RenderedMessage[]> {
  const out = new Map<string, RenderedMessage[]>();
  for (const m of prompt.messages) {
    if (m.provenance.kind === "original") continue;
    for (const id of m.provenance.sourceIds) {
      const list = out.get(id);
      if (list === undefined) out.set(id, [m]);
      else list.push(m);
    }
  }
  return out;
}

const textOf = (m: RenderedMessage) =>
  m.parts.map((p) => (p.type === "text" ? p.text : p.type === "tool_result" ? p.content : "")).join("\n");

async function judgeCleared(view: RequestView, shown: RenderedMessage[], part: ToolResultPart) {
  const rendered = shown
    .flatMap((m) => m.parts)
    .find((p): p is ToolResultPart => p.type === "tool_result" && p.callId === part.callId);
  if (rendered === undefined) return fail("no placeholder for the call in the request");
  // A part of a cleared message can be shown whole (a small result beside an oversized one).
  if (rendered.content === part.content) return { ok: true, cut: false, route: "shown whole" } as const;
  if (!rendered.content.includes(recallCallHint(part.callId)))
    return fail("placeholder does not name the call id");
  const answer = await tryRecall(view, { callId: part.callId });
  return typeof answer === "string"
    ? fail(answer)
    : verdictOf(answer.content, part.content, "recall by call id");
}

function artifactOf(plan: CompactionPlan, messageId: string): string | undefined {
  let id: string | undefined;
  for (const action of plan.actions) {
    if (action.kind === "externalize" && action.span.includes(messageId)) id = action.record.artifactId;
  }
  return id;
}

async function judgeExternalized(
  view: RequestView,
  shown: RenderedMessage[],
  messageId: string,
  part: ToolResultPart,
) {
  const artifactId = artifactOf(view.plan, messageId);
  if (artifactId === undefined) return fail("no externalize action names the message");
  const pointer = shown.find((m) => m.provenance.kind === "pointer" && textOf(m).includes(artifactId));
  if (pointer === undefined) return fail(`no pointer naming ${artifactId} in the request`);
  const answer = await tryRecall(view, { artifactId });
  return typeof answer === "string"
    ? fail(answer)
    : verdictOf(answer.content, escaped(part.content), "recall by artifact id");
}

/**
 * Asks recall for `words` (with `limit`, default the tool's) and looks for the result among the matches: the
 * message itself or, given `call` (the text recall shows for the call, `name(args)`), the same call run again with
 * the same output — the model asking for that command's output gets exactly what it asked for.
 */
async function found(
  view: RequestView,
  words: ReadonlyArray<string>,
  messageId: string,
  part: ToolResultPart,
  route: Route,
  options: { readonly call?: string; readonly limit?: number } = {},
): Promise<Verdict> {
  const query = words.join(" ");
  const answer = await tryRecall(view, {
    query,
    ...(options.limit === undefined ? {} : { limit: options.limit }),
  });
  if (typeof answer === "string") return fail(answer);
  if (answer.kind !== "query") return fail("recall by query did not answer a query");
  const { matches } = answer;
  const own = matches.find((m) => m.messageId === messageId);
  if (own !== undefined) return verdictOf(own.text, part.content, route);
  const again = matches.find(
    (m, i) =>
      options.call !== undefined &&
      i > 0 &&
      m.role === "tool" &&
      holds(m.text, part.content) === "whole" &&
      matches.slice(0, i).some((c) => c.role === "assistant" && c.text.split("\n").includes(options.call!)),
  );
  if (again === undefined) return fail(`recall by query ${JSON.stringify(query)} did not find it`);
  return verdictOf(again.text, part.content, "query: the same call run again");
}

/** The text of a call's arguments as the model wrote it: the string values of its JSON, else the raw text. */
function argumentText(args: string): string {
  const strings: string[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === "string") strings.push(value);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value !== null && typeof value === "object") Object.values(value).forEach(walk);
  };
  try {
    walk(JSON.parse(args));
  } catch {
    return args;
  }
  return strings.join("\n");
}

/** The call a result part answers (by the log's pairing): its tool name and arguments. */
function callOf(view: RequestView, messageId: string, part: ToolResultPart) {
  const seq = view.log.seqOf(messageId)!;
  const index = view.log
    .at(seq)!
    .parts.findIndex((p) => p.type === "tool_result" && p.callId === part.callId);
  const callSeq = view.log.callSeqsOfParts(seq)[index];
  const call = callSeq === undefined ? undefined : view.log.at(callSeq);
  return call?.parts.find((p) => p.type === "tool_call" && p.callId === part.callId);
}

/**
 * By query, as a model that knows what it is looking for would ask: the result's five rarest words; when they do
 * not find it (an empty output, one repeated many times), the words of the call that made it, since a matched call
 * brings its results along: its tool name and the six rarest words of its arguments, then the command quoted (its
 * first 32 distinct words, as many as a query searches) asking for 20 matches.
 */
async function judgeByQuery(view: RequestView, messageId: string, part: ToolResultPart): Promise<Verdict> {
  const own = view.rarity.rarest(part.content, 5);
  const first =
    own.length === 0
      ? fail("the result has no word to search for")
      : await found(view, own, messageId, part, "query: its own words");
  if (first.ok) return first;
  const call = callOf(view, messageId, part);
  if (call?.type !== "tool_call") return first;
  const args = argumentText(call.args);
  const shown = { call: `${call.name}(${call.args})` };
  const byCall: Route = "query: its call's words";
  const rare = await found(view, [call.name, ...view.rarity.rarest(args, 6)], messageId, part, byCall, shown);
  if (rare.ok) return rare;
  const words = [call.name, ...new Set(searchWords(args))].slice(0, 32);
  const quoted = await found(view, words, messageId, part, byCall, { ...shown, limit: 20 });
  return quoted.ok ? quoted : fail(`${first.why}; by its call: ${quoted.why}`);
}

async function judgeSummarized(
  view: RequestView,
  shown: RenderedMessage[],
  messageId: string,
  part: ToolResultPart,
) {
  const summary = shown.find((m) => m.provenance.kind === "summary");
  if (summary === undefined) return fail("no summary standing for the message in the request");
  if (!/recall by query/.test(textOf(summary))) return fail("the summary does not name recall");
  return judgeByQuery(view, messageId, part);
}

/**
 * A dropped result counts as reachable only when something in the request stands for it and says how: the
 * marker of its dropped run (a drop without one leaves nothing that points to it).
 */
async function judgeDropped(
  view: RequestView,
  shown: RenderedMessage[],
  messageId: string,
  part: ToolResultPart,
) {
  const marker = shown.find((m) => m.provenance.kind === "drop_marker" && /recall by query/.test(textOf(m)));
  if (marker === undefined) return fail("nothing in the request points to it");
  return judgeByQuery(view, messageId, part);
}

/** The kind of a miss: its reason without the specifics (ids, queries), for counting. */
export function missKind(why: string): string {
  return why.replace(/"[^"]*"|art_\w+|\{.*\}/g, "…").replace(/: [^;]*/g, "");
}

/**
 * Judges every compacted tool result of one request into `tally`; misses are counted by kind in `kinds`, and the
 * first `keep` go to `misses` whole.
 */
export async function judgeRequest(
  view: RequestView,
  tally: ReachTally,
  misses: Miss[],
  keep: number,
  kinds: Map<string, number>,
  routes: Map<Route, number>,
) {
  const pointers = pointersBySource(view.prompt);
  for (const row of view.explanation.rows) {
    if (row.role !== "tool" || row.state === "kept") continue;
    const fate = row.state;
    const message = view.messages.get(row.id);
    if (message === undefined) throw new Error(`message ${row.id} of the explanation was never appended`);
    const shown = pointers.get(row.id) ?? [];
    for (const part of message.parts) {
      if (part.type !== "tool_result") continue;
      tally[fate].compacted++;
      const verdict =
        fate === "cleared"
          ? await judgeCleared(view, shown, part)
          : fate === "externalized"
            ? await judgeExternalized(view, shown, row.id, part)
            : fate === "summarized"
              ? await judgeSummarized(view, shown, row.id, part)
              : await judgeDropped(view, shown, row.id, part);
      if (verdict.ok) {
        routes.set(verdict.route, (routes.get(verdict.route) ?? 0) + 1);
        tally[fate].reachable++;
        if (verdict.cut) tally[fate].cut++;
      } else {
        const kind = `${fate}: ${missKind(verdict.why)}`;
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
        if (misses.length < keep)
          misses.push({ call: view.call, fate, callId: part.callId, why: verdict.why });
      }
    }
  }
}
