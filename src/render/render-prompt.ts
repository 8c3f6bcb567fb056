import { hash } from "node:crypto";
import { type LogView, toolNameOfResult } from "../log/log-view.js";
import type { Message, Part, ToolCallPart, ToolResultPart } from "../log/message.js";
import type { CompactionPlan, PlanAction } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog, type SeqResolution } from "../plan/resolve-for-log.js";
import type { Decision } from "../plan/resolve-plan.js";
import { assertPlanValid } from "../plan/validate-plan.js";
import {
  clearMessage,
  droppedText,
  namesWayBack,
  type PendingStub,
  pendingStub,
  pointerText,
  RENDER_FORMAT_VERSION,
  type RenderFormatVersion,
  rehydratedText,
  summaryText,
} from "../texts/placeholders.js";
import type { MessageCounter } from "../tokens/tokenizer.js";
import { finishPrompt, hashedAsDigest, lazyProvenance, makeRendered } from "./prompt-hash.js";
import type { Provenance, RenderedMessage, RenderedPrompt } from "./rendered-prompt.js";
import { setRecordedClass } from "./span-classes.js";
import { type SpanSources, spanSourcesOf } from "./span-sources.js";

/** Per-turn content added at the end of the request; never part of the log. */
export interface Injection {
  readonly text: string;
  /** Defaults to `user`. */
  readonly role?: "user" | "system";
  /** A name for the injection in errors and audits (e.g. "retrieved docs"); not rendered. */
  readonly label?: string;
}

/** An externalized artifact brought back for this turn; rendered at the end, never part of the log. */
export interface RehydratedArtifact {
  readonly artifactId: string;
  readonly content: string;
  readonly truncated?: boolean;
}

/** How calls without a result are rendered so the request stays valid. */
export type PendingCallMode = "stub" | "hold";

/** Options of `renderPrompt`. */
export interface RenderOptions {
  /** Counts tokens per rendered message (with provider framing). */
  readonly counter: MessageCounter;
  /** `stub` (default) adds a placeholder result; `hold` leaves the call out of the request. */
  readonly pendingCalls?: PendingCallMode;
  readonly injections?: ReadonlyArray<Injection>;
  readonly rehydrated?: ReadonlyArray<RehydratedArtifact>;
  /** The previous render of this thread, to report how many leading tokens are unchanged. */
  readonly previous?: RenderedPrompt;
  /** Validate the plan against the log first (default true). Turn off only for plans validated already. */
  readonly validatePlan?: boolean;
  /**
   * The texts and hash of an earlier render format (default: the current one), so replay can verify a call
   * recorded under it.
   */
  readonly formatVersion?: RenderFormatVersion;
}

interface MemoEntry {
  readonly action: PlanAction | undefined;
  readonly rendered: RenderedMessage;
}

// Synthetic summary/pointer messages per counter, keyed by their source list (memoized per resolution in
// `span-sources.ts`), so a warm render reuses the same frozen message and never re-freezes a long id list.
const syntheticMemoByCounter = new WeakMap<
  MessageCounter,
  WeakMap<SpanSources, { readonly action: PlanAction; readonly rendered: RenderedMessage }>
>();
// Rendered form of a log message under one action, per counter: logs are immutable, so this never goes stale.
const memoByCounter = new WeakMap<MessageCounter, WeakMap<Message, MemoEntry>>();
// Stub results of a call message's pending calls, per counter, keyed by which calls are pending.
const stubMemoByCounter = new WeakMap<
  MessageCounter,
  WeakMap<Message, { stub: PendingStub; rendered: RenderedMessage }>
>();

/**
 * Renders log + plan into the provider-neutral request a model receives. Dropped messages are omitted,
 * cleared ones keep their call/result pairing with placeholder bodies, each summarized or externalized span
 * becomes exactly one synthetic assistant message where its first remaining message was, tool results are
 * placed right after their call, pending calls are stubbed or held back, and rehydrated artifacts and
 * injections come last. The same inputs always give the same bytes and hash.
 */
export function renderPrompt(log: LogView, plan: CompactionPlan, options: RenderOptions): RenderedPrompt {
  if (options.validatePlan !== false) assertPlanValid(plan, log);
  const resolved = resolveForLog(plan, log);
  const ctx = new RenderContext(log, resolved, options);
  const { decisions } = resolved;
  // Whether each action's seqs are skipped (index + 1): a drop's always; a summarized or externalized span's
  // once its synthetic message is out (it renders once, at its first remaining message).
  const skipped = new Uint8Array(decisions.length + 1);
  decisions.forEach((d, i) => {
    skipped[i + 1] = d.kind === "drop" ? 1 : 0;
  });
  ctx.onSpanEmitted = (actionIndex) => {
    skipped[actionIndex + 1] = 1;
  };
  // The history as runs of seqs under one action: a compacted history is mostly a few long runs (a summary's
  // span, the dropped prefix), skipped whole rather than seq by seq.
  const runs = actionRuns(resolved, log.length);
  const markDrops = namesWayBack(options.formatVersion ?? RENDER_FORMAT_VERSION);
  for (let r = 0; r < runs.length; r += 3) {
    const end = runs[r + 1]!;
    const index = runs[r + 2]!;
    const decision = index < 0 ? undefined : decisions[index];
    // A dropped run is one triple (the resolution's runs are maximal); its marker, when the drop governing its
    // first message asks for one, goes where the run began.
    if (decision?.kind === "drop") {
      if (markDrops && decision.action.kind === "drop" && decision.action.record.marker === true) {
        ctx.visitDropped(runs[r]!, end);
      }
      continue;
    }
    for (let seq = runs[r]!; seq < end && skipped[index + 1] === 0; seq++) {
      // A projected log (0009) need not hold a summarized or externalized message: its span renders from the
      // plan.
      if (!log.holds(seq) && (decision?.kind === "summarize" || decision?.kind === "externalize")) {
        ctx.visitSynthetic(decision.actionIndex);
        continue;
      }
      ctx.visit(log.at(seq)!, decision);
    }
  }
  ctx.appendTail();
  return finishPrompt(log, plan, ctx.out, options);
}

/** The digest standing for the ids of the dropped seqs `[start, stop)` in a prompt hash. */
function runDigest(log: LogView, start: number, stop: number): string {
  return hash(
    "sha256",
    JSON.stringify(["dropped", log.idAt(start), log.idAt(stop - 1), stop - start]),
    "hex",
  );
}

// Per resolution: its action table as runs (see `actionRuns`), with the log length they were made for.
const runsMemo = new WeakMap<SeqResolution, { readonly length: number; readonly runs: Int32Array }>();

/**
 * The seqs below `length` as runs under one action: flat `[start, end, actionIndex]` triples, -1 where no action
 * governs. A dropped run of the resolution (`dropRuns`, possibly several drops) is one triple naming a drop that
 * governs its first seq: it is skipped whole, and never scanned. Kept per resolution (renders of one plan share
 * it).
 */
function actionRuns(resolved: SeqResolution, length: number): Int32Array {
  const known = runsMemo.get(resolved);
  if (known !== undefined && known.length === length) return known.runs;
  const { actionAt, dropRuns } = resolved;
  const covered = Math.min(actionAt.length, length);
  const out: number[] = [];
  let seq = 0;
  let drop = 0;
  while (seq < covered) {
    while (drop < dropRuns.length && dropRuns[drop + 1]! <= seq) drop += 2;
    const nextDrop = drop < dropRuns.length ? dropRuns[drop]! : covered;
    if (nextDrop <= seq) {
      const end = Math.min(dropRuns[drop + 1]!, covered);
      out.push(seq, end, actionAt[seq]!);
      seq = end;
      continue;
    }
    const index = actionAt[seq]!;
    const stop = Math.min(nextDrop, covered);
    let end = seq + 1;
    while (end < stop && actionAt[end] === index) end++;
    out.push(seq, end, index);
    seq = end;
  }
  if (covered < length) {
    if (out.length > 0 && out[out.length - 1] === -1) out[out.length - 2] = length;
    else out.push(covered, length, -1);
  }
  const runs = Int32Array.from(out);
  runsMemo.set(resolved, { length, runs });
  return runs;
}

// The seqs holding pending calls, per pending-call map (a log value's map is immutable and shared by renders).
const pendingSeqsMemo = new WeakMap<ReadonlyMap<string, { readonly seq: number }>, ReadonlySet<number>>();

function pendingSeqsOf(pending: ReadonlyMap<string, { readonly seq: number }>): ReadonlySet<number> {
  let seqs = pendingSeqsMemo.get(pending);
  if (seqs === undefined) {
    seqs = new Set([...pending.values()].map((c) => c.seq));
    pendingSeqsMemo.set(pending, seqs);
  }
  return seqs;
}

function hasToolCall(parts: ReadonlyArray<Part>): boolean {
  for (let i = 0; i < parts.length; i++) if (parts[i]!.type === "tool_call") return true;
  return false;
}

/** The per-counter memo of rendered messages (tokens depend on the counter, so memos never mix). */
function memoFor<K extends object, V>(
  memos: WeakMap<MessageCounter, WeakMap<K, V>>,
  counter: MessageCounter,
): WeakMap<K, V> {
  let memo = memos.get(counter);
  if (memo === undefined) {
    memo = new WeakMap();
    memos.set(counter, memo);
  }
  return memo;
}

class RenderContext {
  readonly out: RenderedMessage[] = [];
  /** Told when a synthetic span message has been placed, so the caller can skip the rest of the span. */
  onSpanEmitted: ((actionIndex: number) => void) | undefined;
  readonly #placed = new Set<number>();
  readonly #emittedSpans = new Set<number>();
  readonly #memo: WeakMap<Message, MemoEntry>;
  readonly #stubMemo: WeakMap<Message, { stub: PendingStub; rendered: RenderedMessage }>;
  readonly #pendingSeqs: ReadonlySet<number>;
  readonly #currentFormat: boolean;

  constructor(
    readonly log: LogView,
    readonly resolved: SeqResolution,
    readonly options: RenderOptions,
  ) {
    this.#memo = memoFor(memoByCounter, options.counter);
    this.#stubMemo = memoFor(stubMemoByCounter, options.counter);
    this.#pendingSeqs = pendingSeqsOf(log.pendingCalls);
    this.#currentFormat = (options.formatVersion ?? RENDER_FORMAT_VERSION) === RENDER_FORMAT_VERSION;
  }

  visit(message: Message, decision: Decision | undefined): void {
    if (message.role === "tool" && this.#placed.has(message.seq)) return;
    const kind = decision?.kind ?? "include";
    if (kind === "summarize" || kind === "externalize") {
      this.#emitSynthetic(decision!.actionIndex);
      return;
    }
    if (message.role === "tool") {
      // Only reached for results whose call was not rendered; validation makes that impossible.
      return;
    }
    this.#emitMessage(message, decision?.action);
    if (message.role === "assistant" && hasToolCall(message.parts)) this.#emitResultsOf(message);
  }

  /**
   * The marker standing for the dropped seqs `[start, stop)`. Its provenance lists their ids; a long list is built
   * only when read, and enters the hash as a digest of the run's first and last id and length (ids are unique in a
   * thread, so those name the run), so a turn never walks a long dropped prefix.
   */
  visitDropped(start: number, stop: number): void {
    const count = stop - start;
    let built: string[] | undefined;
    const ids = () => {
      if (built === undefined) {
        const table = this.log.fullIdTable();
        built = [];
        for (let seq = start; seq < stop; seq++) built.push(table[seq]!);
      }
      return built;
    };
    const provenance = hashedAsDigest(count)
      ? lazyProvenance("drop_marker", runDigest(this.log, start, stop), ids)
      : { kind: "drop_marker" as const, sourceIds: ids(), synthetic: true };
    const parts = [{ type: "text" as const, text: droppedText(count) }];
    this.out.push(makeRendered("assistant", parts, provenance, this.options.counter));
  }

  /** A summarized or externalized message the log does not hold (never a placed result: those are held). */
  visitSynthetic(actionIndex: number): void {
    this.#emitSynthetic(actionIndex);
  }

  appendTail(): void {
    for (const artifact of this.options.rehydrated ?? []) {
      const text = rehydratedText(artifact.artifactId, artifact.content, artifact.truncated === true);
      this.#push("user", [{ type: "text", text }], "rehydration", []);
    }
    for (const injection of this.options.injections ?? []) {
      this.#push(injection.role ?? "user", [{ type: "text", text: injection.text }], "injection", []);
    }
  }

  #emitSynthetic(actionIndex: number): void {
    if (this.#emittedSpans.has(actionIndex)) return;
    this.#emittedSpans.add(actionIndex);
    this.onSpanEmitted?.(actionIndex);
    const action = this.resolved.plan.actions[actionIndex]!;
    if (action.kind !== "summarize" && action.kind !== "externalize") return;
    const sources = spanSourcesOf(this.log, this.resolved, actionIndex);
    // The memo holds current-format messages only: an earlier format's are rendered afresh (replay only).
    const current = this.#currentFormat;
    const memo = memoFor(syntheticMemoByCounter, this.options.counter);
    const hit = current ? memo.get(sources) : undefined;
    if (hit !== undefined && hit.action === action) {
      this.out.push(hit.rendered);
      return;
    }
    const summary = action.kind === "summarize";
    const kind: Provenance["kind"] = summary ? "summary" : "pointer";
    const text = summary
      ? summaryText(action.record, sources.count, this.options.formatVersion)
      : pointerText(action.record, sources.count, this.options.formatVersion);
    // A list seeded from a checkpoint stays unbuilt: the hash takes its digest, a reader of the ids builds it.
    const provenance =
      !sources.ready && sources.digest !== undefined && hashedAsDigest(sources.count)
        ? lazyProvenance(kind, sources.digest, () => sources.ids())
        : { kind, sourceIds: sources.ids(), synthetic: true };
    const rendered = makeRendered("assistant", [{ type: "text", text }], provenance, this.options.counter);
    // A floor for the class a reader's clearance is checked against: the span's own messages may raise it (a
    // record written by an older or careless strategy may name a class below theirs), never lower it.
    if (action.record.sensitivity !== undefined)
      setRecordedClass(rendered.provenance, action.record.sensitivity);
    if (current) memo.set(sources, { action, rendered });
    this.out.push(rendered);
  }

  #emitMessage(message: Message, action: PlanAction | undefined, parts?: ReadonlyArray<Part>): void {
    const pending = this.#pendingSeqs.has(message.seq);
    // Holding calls back changes a pending message's body with the set of pending calls; a stub leaves it as is,
    // so only held messages bypass the memo.
    const held = pending && this.options.pendingCalls === "hold";
    // The memo holds current-format messages only (a cleared message's text depends on the format).
    const memoized = parts === undefined && !held && this.#currentFormat;
    if (memoized) {
      const hit = this.#memo.get(message);
      if (hit !== undefined && hit.action === action) {
        this.out.push(hit.rendered);
        return;
      }
    }
    let body = parts ?? message.parts;
    let kind: "original" | "cleared" = "original";
    if (action?.kind === "clear") {
      const toolName = (result: ToolResultPart) => this.#toolNameOf(message, result);
      const before = body.length;
      body = clearMessage(message, action.record, toolName, body, this.options.formatVersion);
      kind = "cleared";
      // Only a clear listing every part of a reasoning-only message empties it: nothing is sent then.
      if (body.length === 0 && before > 0) return;
    }
    if (held) {
      body = body.filter((p) => p.type !== "tool_call" || !this.#isPendingHere(message, p));
      if (body.length === 0) return;
    }
    const hash = kind === "original" && body === message.parts ? message.hash : undefined;
    const rendered = makeRendered(
      message.role,
      body,
      { kind, sourceIds: [message.id], synthetic: false },
      this.options.counter,
      hash,
      message.meta,
    );
    if (memoized) this.#memo.set(message, { action, rendered });
    this.out.push(rendered);
  }

  #emitResultsOf(call: Message): void {
    for (const resultSeq of this.log.resultsOf(call.seq)) {
      const result = this.log.at(resultSeq)!;
      const answered = this.log.answersOf(resultSeq);
      // A tool message answering calls of several assistant messages is split: each part goes right after the
      // message holding the call it is paired with (by the log's pairing, not by id: ids may be reused).
      const callSeqs = this.log.callSeqsOfParts(resultSeq);
      const parts =
        answered.length === 1 ? undefined : result.parts.filter((_, i) => callSeqs[i] === call.seq);
      this.#emitMessage(result, decisionAt(this.resolved, resultSeq)?.action, parts);
      if (answered[answered.length - 1] === call.seq) this.#placed.add(resultSeq);
    }
    if (this.options.pendingCalls !== "hold") this.#emitPendingStubs(call);
  }

  #emitPendingStubs(call: Message): void {
    if (!this.#pendingSeqs.has(call.seq)) return;
    // The stub depends only on which calls of this message are pending: reuse it while that stays the same.
    const stub = pendingStub(this.log, call.seq);
    if (stub === undefined) return;
    const hit = this.#stubMemo.get(call);
    if (hit !== undefined && hit.stub === stub) {
      this.out.push(hit.rendered);
      return;
    }
    const rendered = makeRendered(
      "tool",
      stub.parts,
      { kind: "pending_stub", sourceIds: [], synthetic: true },
      this.options.counter,
      stub.hash,
    );
    this.#stubMemo.set(call, { stub, rendered });
    this.out.push(rendered);
  }

  #isPendingHere(message: Message, part: ToolCallPart): boolean {
    return this.log.pendingCalls.get(part.callId)?.seq === message.seq;
  }

  /** The name of the tool a result part answers, found through the log's pairing of that very part. */
  #toolNameOf(message: Message, part: ToolResultPart): string {
    const index = message.parts.indexOf(part);
    const name =
      message.role === "tool" && index >= 0 ? toolNameOfResult(this.log, message.seq, index) : undefined;
    return name ?? String(message.meta.toolName ?? "tool");
  }

  #push(
    role: Message["role"],
    parts: ReadonlyArray<Part>,
    kind: RenderedMessage["provenance"]["kind"],
    sourceIds: ReadonlyArray<string>,
  ): void {
    this.out.push(makeRendered(role, parts, { kind, sourceIds, synthetic: true }, this.options.counter));
  }
}
