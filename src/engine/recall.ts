/**
 * `engine.recall`: the answer to the model's `recall` tool call. By artifact id it reads what externalization
 * moved out, gated like any artifact read; by call id it reads a tool call's result from the log (which never
 * loses it), gated by the result message's sensitivity; by query it searches the messages the current plan
 * compacted through the log store's full-text index. Every answer is cut to the engine's cap and is meant to be
 * sent as that call's result, which then lives in the log like any other.
 */

import * as z from "zod";
import { AccessDeniedError, ClearanceError, NotFoundError, ValidationError } from "../errors/ledger-error.js";
import { deepFreeze } from "../log/deep-freeze.js";
import { type LogView, toolNameOfResult } from "../log/log-view.js";
import { mayRead } from "../log/sensitivity.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import { FATE_OF, finalStates } from "../plan/final-states.js";
import { decisionAt } from "../plan/resolve-for-log.js";
import { RECALL_LIMIT_DEFAULT, RECALL_LIMIT_MAX } from "../render/recall-tool.js";
import { withheldText } from "../render/withhold-content.js";
import type { Artifact } from "../stores/artifact-store.js";
import { searchTerms, searchTextOf } from "../stores/log-search.js";
import type { LogSearchHit } from "../stores/log-store.js";
import { checkThreadId } from "../stores/log-store.js";
import { SearchIndex } from "../stores/memory/memory-search-index.js";
import { checkValue } from "../stores/store-row-schemas.js";
import { textTokenCounter } from "../texts/text-excerpt.js";
import { turnInputsId } from "./call-record.js";
import { observed, requireMessages } from "./compaction-steps.js";
import type { EngineCore } from "./engine-core.js";
import {
  type CountText,
  type FoundMessage,
  type FoundResult,
  fitContent,
  fitMatches,
  fitResults,
  type RecallMatch,
} from "./recall-text.js";

/**
 * What the model asked for (exactly one of them): an artifact by its id, a tool call's result by the call's id, or
 * compacted messages by a query.
 */
export type RecallRequest =
  | { readonly artifactId: string }
  | { readonly callId: string }
  | {
      readonly query: string;
      /** Matches to return, best first: 1 to 50 (default 5); a matched call's results come along beyond it. */
      readonly limit?: number;
    };

/** An artifact brought back: its content, cut in the middle when `truncated`. */
export interface ArtifactRecall {
  readonly kind: "artifact";
  readonly artifactId: string;
  /** The tool result to send: the content, or its head and tail with a marker of what was left out. */
  readonly content: string;
  readonly truncated: boolean;
}

/** A tool call's result brought back from the log: its content, cut in the middle when `truncated`. */
export interface CallRecall {
  readonly kind: "call";
  readonly callId: string;
  /** The tool the call was made to. */
  readonly toolName: string;
  /** Results the answer holds: more than one only when the thread reused the call id. */
  readonly results: number;
  /** The tool result to send: the result's content (with `[error] ` before a failed one), or its head and tail. */
  readonly content: string;
  readonly truncated: boolean;
}

/** The compacted messages a query found, best first. */
export interface QueryRecall {
  readonly kind: "query";
  readonly query: string;
  readonly matches: ReadonlyArray<RecallMatch>;
  /** The tool result to send: the matches under one header line each (or a line saying nothing matched). */
  readonly content: string;
  /** True when a match was cut or lower-ranked matches were left out to stay within the cap. */
  readonly truncated: boolean;
}

/** What `recall` returns; `content` is the tool result to send, whichever was asked. */
export type RecallResult = ArtifactRecall | CallRecall | QueryRecall;

// `null` reads as absent: tools declared strict (OpenAI) send null for the arguments the model leaves out.
const requestSchema = z.strictObject({
  artifactId: z.string().trim().min(1, "must not be empty").max(1_000).nullish(),
  callId: z.string().trim().min(1, "must not be empty").max(1_000).nullish(),
  query: z.string().max(2_000).nullish(),
  limit: z.number().int().min(1).max(RECALL_LIMIT_MAX).nullish(),
});

type ParsedRequest =
  | { readonly artifactId: string }
  | { readonly callId: string }
  | { readonly query: string; readonly limit: number };

/** Checks a request as the model sent it (the tool call's parsed arguments). */
function parseRequest(threadId: string, value: unknown): ParsedRequest {
  checkThreadId(threadId);
  const { artifactId, callId, query, limit } = checkValue(requestSchema, value, {
    what: "recall request",
    threadId,
  });
  const wrong = (problem: string, field: string) => new ValidationError(problem, { threadId, field });
  const ways = { artifactId, callId, query };
  const given = (Object.keys(ways) as Array<keyof typeof ways>).filter((k) => ways[k] != null);
  if (given.length > 1)
    throw wrong(`give one of artifactId, callId and query, not ${given.join(" and ")}`, given[0]!);
  if (artifactId != null || callId != null) {
    const field = artifactId != null ? "artifactId" : "callId";
    if (limit != null) throw wrong(`limit goes with query, not with ${field}`, "limit");
    return artifactId != null ? { artifactId } : { callId: callId! };
  }
  if (query == null)
    throw wrong(
      "give artifactId (an id a pointer names), callId (the id a cleared result names) or query (words to search)",
      "query",
    );
  if (query.trim() === "") throw wrong("query must have something besides whitespace", "query");
  return { query: query.trim(), limit: limit ?? RECALL_LIMIT_DEFAULT };
}

async function recallArtifact(core: EngineCore, threadId: string, artifactId: string, count: CountText) {
  const { tenant, clearance } = core.settings;
  const missing = () =>
    new NotFoundError(
      `thread ${JSON.stringify(threadId)} has no artifact ${JSON.stringify(artifactId)} to recall (never stored for it, expired, or another tenant's): use an id a pointer message names`,
      { threadId, field: "artifactId" },
    );
  // Call records keep a turn's inputs as artifacts of the thread; they are the audit's, not the model's.
  if (artifactId.startsWith(turnInputsId(""))) throw missing();
  let artifact: Artifact | undefined;
  try {
    artifact = await core.stores.artifacts.get(artifactId, { tenant, clearance });
  } catch (error) {
    if (!(error instanceof AccessDeniedError)) throw error;
    throw new AccessDeniedError(
      `artifact ${JSON.stringify(artifactId)} is more sensitive than this engine's clearance (${clearance}) and may not be recalled`,
      { threadId, field: "artifactId" },
    );
  }
  if (artifact === undefined || artifact.meta.threadId !== threadId) throw missing();
  const fitted = fitContent(artifact.content, core.settings.recall.maxTokens, count);
  return { kind: "artifact" as const, artifactId, ...fitted };
}

/** The tool name of a result part at `partIndex` of the tool message at `seq`, through the log's pairing. */
function toolNameOf(log: LogView, seq: number, partIndex: number): string {
  return toolNameOfResult(log, seq, partIndex) ?? String(log.at(seq)!.meta.toolName ?? "tool");
}

async function recallCall(core: EngineCore, threadId: string, callId: string, count: CountText) {
  const thread = await core.loader.whole(threadId);
  requireMessages(thread, threadId);
  const { log } = thread;
  const { clearance } = core.settings;
  const found: FoundResult[] = [];
  let toolName: string | undefined;
  let withheld = 0;
  let called = false;
  for (let seq = 0; seq < log.length; seq++) {
    const message = log.at(seq)!;
    for (let i = 0; i < message.parts.length; i++) {
      const part = message.parts[i]!;
      if (part.type === "tool_call" && part.callId === callId) called = true;
      if (part.type !== "tool_result" || part.callId !== callId) continue;
      const sensitivity = message.meta.sensitivity ?? "internal";
      toolName ??= toolNameOf(log, seq, i);
      if (!mayRead(sensitivity, clearance)) {
        withheld++;
        // Placeholder policy: the result is named with a stub, so the model knows it exists but not what it says.
        found.push({
          messageId: message.id,
          content: withheldText(sensitivity),
          isError: part.isError === true,
        });
        continue;
      }
      found.push({ messageId: message.id, content: part.content, isError: part.isError === true });
    }
  }
  const where = { threadId, field: "callId" };
  if (withheld > 0 && core.settings.aboveClearance === "refuse") {
    throw new ClearanceError(
      `recall of call ${JSON.stringify(callId)} refused: ${withheld} of its results are above this engine's clearance (${clearance})`,
      where,
    );
  }
  if (found.length === withheld && withheld > 0) {
    throw new AccessDeniedError(
      `the result of call ${JSON.stringify(callId)} is more sensitive than this engine's clearance (${clearance}) and may not be recalled`,
      where,
    );
  }
  if (found.length === 0) {
    const why = called
      ? "that call has no result yet"
      : "no such call in this thread: use the id a cleared result names";
    throw new NotFoundError(
      `thread ${JSON.stringify(threadId)} has no result of call ${JSON.stringify(callId)} to recall (${why})`,
      where,
    );
  }
  const fitted = fitResults(callId, found, core.settings.recall.maxTokens, count);
  return { kind: "call" as const, callId, toolName: toolName!, results: found.length, ...fitted };
}

/** Seqs of the messages the plan compacts and the engine's clearance may read, with what became of each. */
function compactedMessages(core: EngineCore, log: LogView, plan: CompactionPlan) {
  const { resolution } = finalStates(log, plan);
  const fates = new Map<number, FoundMessage>();
  for (let seq = 0; seq < resolution.actionAt.length; seq++) {
    const decision = decisionAt(resolution, seq);
    if (decision === undefined) continue;
    const fate = FATE_OF[decision.kind];
    if (fate === "kept") continue;
    const message = log.at(seq)!;
    if (!mayRead(message.meta.sensitivity ?? "internal", core.settings.clearance)) continue;
    fates.set(seq, { message, fate });
  }
  return fates;
}

/** The search of a log store without `search`: an index over the candidates, built for this query. */
function searchLoaded(found: ReadonlyMap<number, FoundMessage>, query: string, limit: number) {
  const index = new SearchIndex();
  for (const [seq, { message }] of found) index.add(seq, message.id, searchTextOf(message));
  return index.search({ terms: searchTerms(query), limit, seqs: undefined });
}

/**
 * The messages a search found, best first, each tool call followed by those of its results the plan compacts and
 * the search did not find on their own: an empty or repeated output has no words to be found by, but the call
 * that made it has.
 */
function withResults(
  log: LogView,
  compacted: ReadonlyMap<number, FoundMessage>,
  hits: ReadonlyArray<LogSearchHit>,
): FoundMessage[] {
  const hitSeqs = new Set(hits.map((hit) => hit.seq));
  const added = new Set<number>();
  const out: FoundMessage[] = [];
  const add = (seq: number, f: FoundMessage) => {
    added.add(seq);
    out.push(f);
  };
  for (const hit of hits) {
    const f = compacted.get(hit.seq);
    if (f === undefined || f.message.id !== hit.messageId || added.has(hit.seq)) continue;
    add(hit.seq, f);
    if (f.message.role !== "assistant") continue;
    for (const seq of log.resultsOf(hit.seq)) {
      const result = compacted.get(seq);
      if (result !== undefined && !hitSeqs.has(seq) && !added.has(seq)) add(seq, result);
    }
  }
  return out;
}

async function recallQuery(
  core: EngineCore,
  threadId: string,
  query: string,
  limit: number,
  count: CountText,
) {
  const thread = await core.loader.whole(threadId);
  requireMessages(thread, threadId);
  const compacted = compactedMessages(core, thread.log, thread.plan);
  const store = core.stores.log;
  let hits: ReadonlyArray<LogSearchHit> = [];
  if (compacted.size > 0) {
    hits =
      store.search === undefined
        ? searchLoaded(compacted, query, limit)
        : await store.search(threadId, query, { limit, seqs: [...compacted.keys()] });
  }
  const found = withResults(thread.log, compacted, hits);
  const fitted = fitMatches(query, found, core.settings.recall.maxTokens, count);
  return { kind: "query" as const, query, ...fitted };
}

/**
 * Answers a `recall` tool call on a thread (see `RecallRequest`). By artifact id: the artifact must be one of this
 * thread (`meta.threadId`), of the engine's tenant (another tenant's reads as not found) and within its clearance
 * (else `AccessDeniedError`); a missing one is a `NotFoundError` naming the thread and the id. By call id: the
 * call's results in the log, whatever the plan does with them, except those whose message is above the clearance
 * (`AccessDeniedError` when that leaves none); a call the thread never made, or one still without a result, is a
 * `NotFoundError` naming the thread and the id. By query: the messages the current plan clears, summarizes,
 * externalizes or drops, within the clearance, searched in the log store; a matched tool call brings its
 * compacted results along (right after it, beyond `limit`).
 * Bad arguments are a `ValidationError` (whose message the harness may send back as the tool result).
 */
export function recall(core: EngineCore, threadId: string, request: RecallRequest): Promise<RecallResult> {
  return observed(core, "recall", threadId, async () => {
    const t0 = performance.now();
    const parsed = parseRequest(threadId, request);
    const count = textTokenCounter(core.counter);
    const result: RecallResult =
      "artifactId" in parsed
        ? await recallArtifact(core, threadId, parsed.artifactId, count)
        : "callId" in parsed
          ? await recallCall(core, threadId, parsed.callId, count)
          : await recallQuery(core, threadId, parsed.query, parsed.limit, count);
    core.events.emit("recalled", threadId, {
      ...(result.kind === "artifact"
        ? { artifactId: result.artifactId }
        : result.kind === "call"
          ? { callId: result.callId }
          : { query: result.query, matches: result.matches.length }),
      chars: result.content.length,
      truncated: result.truncated,
      durationMs: performance.now() - t0,
    });
    return deepFreeze(result);
  });
}
