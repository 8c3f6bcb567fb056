/**
 * The harness's count of the model's references back to compacted content — `recall` calls by artifact id or by
 * query, and artifact ids named in a reply's text or in a tool call's arguments — and of what came of each. Every
 * outcome is held against what the harness can see for itself (the artifact store, its own record of what the
 * engine brought back lately, the plan's fate of each message), so a reference the engine should have honoured
 * and did not is reported as a failure rather than counted away.
 */
import type { ChatCompletionMessage, ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { MessageFate, RehydrationBlockReason, TurnStats } from "../src/index.js";
import type { RecallAnswer } from "./recall-answer.js";

/** How the model referred back: a `recall` call by id or by query, or an id named in text or call arguments. */
export type ReferenceChannel = "recallId" | "recallQuery" | "named";

/**
 * What came of a reference: the content came back (`honoured`), the engine held it back for a reason it gave
 * (a rehydration block), the id is no artifact of this thread (`notAnArtifact`: mistyped), the query matched no
 * compacted message (`noMatch`), the `recall` arguments were malformed (`invalid`), or nothing came back where
 * something should have (`failed`).
 */
export type ReferenceOutcome =
  | "honoured"
  | RehydrationBlockReason
  | "notAnArtifact"
  | "noMatch"
  | "invalid"
  | "failed";

/** Outcomes that are no fault of the engine: nothing, or nothing more, was there to give. */
const EXCUSED: ReadonlyArray<ReferenceOutcome> = [
  "notAnArtifact",
  "noMatch",
  "invalid",
  "cooldown",
  "budget",
];

/** What a run's references came to (those of the last reply, which no request follows, are not counted). */
export interface ReferenceFigures {
  readonly made: number;
  readonly byChannel: Readonly<
    Record<ReferenceChannel, { readonly made: number; readonly honoured: number }>
  >;
  readonly outcomes: Readonly<Partial<Record<ReferenceOutcome, number>>>;
  /**
   * References the engine should honour: to an artifact of this thread (or a query some compacted message
   * matches) that is neither in its cooldown nor refused for want of room.
   */
  readonly honourable: number;
  readonly honoured: number;
  /** `recall` calls by id whose id the next request brought back as well (the call's arguments name it). */
  readonly rehydratedAfterRecall: number;
  /** Honourable references that got nothing, and outcomes that contradict what the harness sees: bugs. */
  readonly failures: ReadonlyArray<string>;
}

/** What the harness can look up without asking `recall` or `prepareTurn`. */
export interface ReferenceChecks {
  /** The content of the artifact when it is one of this thread's, read from the artifact store directly. */
  artifactContent(artifactId: string): Promise<string | undefined>;
  /** What the current plan does with a message. */
  fateOf(messageId: string): Promise<MessageFate | undefined>;
  /** The id of a message the current plan compacts (does not keep) that holds one of `words`, if any. */
  compactedHolding(words: ReadonlyArray<string>): Promise<string | undefined>;
  /** The engine's `rehydration.cooldownCalls`. */
  readonly cooldownCalls: number;
}

/** An artifact id as the stores make it (`art_` and 32 hex digits); a mistyped one still has this shape. */
const ARTIFACT_ID = /art_[0-9a-f]{32}/g;

/** Words as the log search makes them: lower case, split at anything that is not a letter or a digit. */
export function searchWords(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w !== "");
}

/** The artifact ids a reply names outside `recall` calls (its text and the other calls' arguments), each once. */
export function namedIds(message: ChatCompletionMessage): ReadonlyArray<string> {
  const texts = [message.content ?? ""];
  for (const call of message.tool_calls ?? []) {
    if (call.type === "function" && call.function.name !== "recall") texts.push(call.function.arguments);
  }
  return [...new Set(texts.flatMap((t) => t.match(ARTIFACT_ID) ?? []))];
}

/**
 * Whether `recall` arguments are what the tool asks for: exactly one of a non-blank `artifactId` and `query`, and
 * `limit` (a whole number from 1 to 50) only with `query`. The engine refuses anything else, rightly.
 */
export function wellFormedRecall(request: Readonly<Record<string, unknown>> | undefined): boolean {
  if (request === undefined) return false;
  const text = (v: unknown) => typeof v === "string" && v.trim() !== "";
  const hasId = text(request.artifactId);
  const hasQuery = text(request.query);
  const { limit } = request;
  const limitOk =
    limit === undefined ||
    (hasQuery && Number.isInteger(limit) && (limit as number) >= 1 && (limit as number) <= 50);
  const known = Object.keys(request).every((k) => k === "artifactId" || k === "query" || k === "limit");
  return hasId !== hasQuery && limitOk && known;
}

/** Counts references and checks their outcomes; one per harness run. */
export class ReferenceTally {
  readonly #checks: ReferenceChecks;
  readonly #made = { recallId: 0, recallQuery: 0, named: 0 };
  readonly #honouredBy = { recallId: 0, recallQuery: 0, named: 0 };
  readonly #outcomes: Partial<Record<ReferenceOutcome, number>> = {};
  readonly #failures: string[] = [];
  /** The last call each artifact was brought back in (detected rehydration), by the harness's own count. */
  readonly #lastRehydrated = new Map<string, number>();
  /** Ids named in the latest reply, and ids it recalled: the next request says what came of them. */
  #pendingNamed: ReadonlyArray<string> = [];
  #pendingRecalled: ReadonlyArray<string> = [];
  #rehydratedAfterRecall = 0;

  constructor(checks: ReferenceChecks) {
    this.#checks = checks;
  }

  /** Call `call`'s request is prepared: settles the ids the previous reply named against the turn's figures. */
  async onTurn(
    call: number,
    stats: TurnStats,
    messages: ReadonlyArray<ChatCompletionMessageParam>,
  ): Promise<void> {
    for (const id of this.#pendingNamed) await this.#settleNamed(call, id, stats, messages);
    for (const id of this.#pendingRecalled) {
      if (stats.rehydrated.some((r) => r.artifactId === id)) this.#rehydratedAfterRecall++;
    }
    for (const r of stats.rehydrated) this.#lastRehydrated.set(r.artifactId, call);
    this.#pendingNamed = [];
    this.#pendingRecalled = [];
  }

  /** A reply came back: remembers the ids it names outside `recall`, to settle them on the next call. */
  onReply(message: ChatCompletionMessage): void {
    this.#pendingNamed = namedIds(message);
  }

  /** A `recall` call of the model was answered. */
  async onRecall(answer: RecallAnswer): Promise<void> {
    const { request, result, error } = answer;
    const artifactId = typeof request?.artifactId === "string" ? request.artifactId : undefined;
    if (!wellFormedRecall(request)) {
      // The model's mistake: the engine must refuse it, not answer it.
      const channel = artifactId === undefined ? "recallQuery" : "recallId";
      if (result === undefined) return this.#record(channel, "invalid");
      return this.#record(channel, "failed", `recall ${JSON.stringify(request)}: malformed, and answered`);
    }
    if (artifactId !== undefined) {
      this.#pendingRecalled = [...this.#pendingRecalled, artifactId];
      const content = await this.#checks.artifactContent(artifactId);
      const where = `recall of ${artifactId}`;
      if (content === undefined) {
        if (result !== undefined)
          return this.#record("recallId", "failed", `${where}: answered, but no such artifact`);
        return this.#record("recallId", "notAnArtifact");
      }
      if (result?.kind !== "artifact") {
        return this.#record("recallId", "failed", `${where}: ${error?.message ?? "no artifact answer"}`);
      }
      // Whole when not cut; a cut keeps the head (hundreds of tokens), so it is shorter and starts alike.
      const faithful = result.truncated
        ? result.content.length < content.length && result.content.slice(0, 32) === content.slice(0, 32)
        : result.content === content;
      if (!faithful)
        return this.#record("recallId", "failed", `${where}: the content differs from the store's`);
      return this.#record("recallId", "honoured");
    }
    if (result?.kind !== "query") {
      const why = error?.message ?? "no query answer";
      return this.#record("recallQuery", "failed", `recall ${JSON.stringify(request)}: ${why}`);
    }
    await this.#settleQuery(result.query, result.matches);
  }

  figures(): ReferenceFigures {
    const o = this.#outcomes;
    const made = this.#made.recallId + this.#made.recallQuery + this.#made.named;
    const excused = EXCUSED.reduce((n, outcome) => n + (o[outcome] ?? 0), 0);
    return {
      made,
      byChannel: {
        recallId: { made: this.#made.recallId, honoured: this.#honouredBy.recallId },
        recallQuery: { made: this.#made.recallQuery, honoured: this.#honouredBy.recallQuery },
        named: { made: this.#made.named, honoured: this.#honouredBy.named },
      },
      outcomes: { ...o },
      honourable: made - excused,
      honoured: o.honoured ?? 0,
      rehydratedAfterRecall: this.#rehydratedAfterRecall,
      failures: [...this.#failures],
    };
  }

  async #settleNamed(
    call: number,
    id: string,
    stats: TurnStats,
    messages: ReadonlyArray<ChatCompletionMessageParam>,
  ): Promise<void> {
    const exists = (await this.#checks.artifactContent(id)) !== undefined;
    const last = this.#lastRehydrated.get(id);
    const cooling = last !== undefined && call - last <= this.#checks.cooldownCalls;
    const where = `call ${call}: ${id}`;
    if (stats.rehydrated.some((r) => r.artifactId === id)) {
      const shown = messages.some((m) =>
        JSON.stringify(m.content ?? "").includes(`[Rehydrated artifact ${id}`),
      );
      if (!exists || !shown) {
        return this.#record(
          "named",
          "failed",
          `${where}: reported brought back, but ${exists ? "not in the request" : "no such artifact"}`,
        );
      }
      return this.#record("named", "honoured");
    }
    const reason = stats.rehydrationBlocked.find((b) => b.artifactId === id)?.reason;
    if (reason === undefined) {
      // The engine looks only for ids its plan externalized: silence is right for a mistyped id, wrong otherwise.
      if (exists)
        return this.#record(
          "named",
          "failed",
          `${where}: an artifact of the thread, named, and not looked at`,
        );
      return this.#record("named", "notAnArtifact");
    }
    // Each reason must agree with what the harness sees; room (`budget`) is the engine's call alone.
    const agrees =
      reason === "budget" || (reason === "cooldown" && cooling) || (reason === "missing" && !exists);
    if (!agrees)
      return this.#record("named", "failed", `${where}: blocked as ${reason}, which does not hold`);
    this.#record("named", reason === "missing" ? "notAnArtifact" : reason);
  }

  async #settleQuery(
    query: string,
    matches: ReadonlyArray<{ readonly messageId: string; readonly fate: MessageFate }>,
  ): Promise<void> {
    const where = `recall query ${JSON.stringify(query)}`;
    if (matches.length === 0) {
      const holder = await this.#checks.compactedHolding(searchWords(query));
      if (holder !== undefined) {
        return this.#record(
          "recallQuery",
          "failed",
          `${where}: no match, but compacted message ${holder} holds a word of it`,
        );
      }
      return this.#record("recallQuery", "noMatch");
    }
    for (const m of matches) {
      const fate = await this.#checks.fateOf(m.messageId);
      if (fate === undefined || fate === "kept" || fate !== m.fate) {
        return this.#record(
          "recallQuery",
          "failed",
          `${where}: match ${m.messageId} is ${fate ?? "unknown"} in the plan, said ${m.fate}`,
        );
      }
    }
    this.#record("recallQuery", "honoured");
  }

  #record(channel: ReferenceChannel, outcome: ReferenceOutcome, failure?: string): void {
    this.#made[channel]++;
    if (outcome === "honoured") this.#honouredBy[channel]++;
    this.#outcomes[outcome] = (this.#outcomes[outcome] ?? 0) + 1;
    if (failure !== undefined) this.#failures.push(failure);
  }
}
