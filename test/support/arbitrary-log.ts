/**
 * fast-check arbitraries for thread logs and compaction plans.
 *
 * Logs are generated as a list of abstract operations (user turn, assistant text, assistant with calls, a batch
 * of late results) that a small interpreter turns into `MessageInput`s. The interpreter enforces the log's
 * rules itself (call ids are reused only once answered, results answer pending calls), so every shrunk
 * operation list is still a valid log. Plans are generated the same way: abstract action specs interpreted
 * against the log's groups, so removals always cover whole tool-call groups and pending groups stay untouched.
 */
import fc from "fast-check";
import type { Group } from "../../src/log/groups.js";
import type { MessageInput, Part, ReasoningPart } from "../../src/log/message.js";
import { ThreadLog } from "../../src/log/thread-log.js";
import {
  type ActionKind,
  type ActionRecord,
  type CompactionPlan,
  createPlan,
  emptyPlan,
  extendPlan,
  type PlanAction,
} from "../../src/plan/compaction-plan.js";
import { resolvePlan } from "../../src/plan/resolve-plan.js";
import type { PlanProblem } from "../../src/plan/validate-plan.js";

// ---------------------------------------------------------------------------------------------------------------
// text

/** Text as agents produce it, plus the awkward cases: empty, whitespace, unicode, special tokens, big bodies. */
export const textArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.lorem({ maxCount: 6 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 10 }) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 8 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom("", " ", "\n", "<|endoftext|>", "😀👍🏽", "é\u0301", "\u0000", "\uD83D", "{}"),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1000, max: 3000 }).map((n) => "x".repeat(n)) },
);

const argsArb = fc.oneof(
  { weight: 4, arbitrary: textArb.map((q) => JSON.stringify({ q })) },
  { weight: 1, arbitrary: fc.constantFrom("", "{}", "not json", "[1,2]", '{"nested":{"a":[1,null]}}') },
);

// One name per durability class the built-in words give (replayable, unclassed, non-replayable, ephemeral, anchoring)
// plus one no rule knows, so random logs exercise every class.
const toolNames = [
  "search",
  "read_file",
  "run_shell",
  "ünï_tool",
  "write_file",
  "think",
  "todo_write",
] as const;

const reasoningArb: fc.Arbitrary<ReasoningPart> = fc.oneof(
  textArb.map((text): ReasoningPart => ({ type: "reasoning", text })),
  fc
    .tuple(textArb, fc.base64String({ minLength: 4, maxLength: 24 }))
    .map(([text, signature]): ReasoningPart => ({ type: "reasoning", text, signature })),
  fc.base64String({ minLength: 4, maxLength: 24 }).map(
    (redacted): ReasoningPart => ({
      type: "reasoning",
      text: "",
      redacted,
    }),
  ),
);

// ---------------------------------------------------------------------------------------------------------------
// log operations

/** How the results of a new assistant message's calls are written. */
type ResultMode = "each" | "each-reversed" | "combined" | "partial" | "later" | "fuse";

interface UserOp {
  readonly t: "user";
  readonly text: string;
  /** 0: text only; 1: text + an image URL; 2: text + a PDF by reference; 3: a data: image only; 4: no parts. */
  readonly shape: number;
  /** Answer every pending call before the user speaks (what a harness normally does). */
  readonly flush: boolean;
  readonly flushCombined: boolean;
}

interface AssistantOp {
  readonly t: "assistant";
  readonly text: string;
  readonly reasoning: ReasoningPart | null;
  /** Reasoning only, no text part. */
  readonly silent: boolean;
}

/** A system message in the middle of the thread (e.g. a harness notice). */
interface SystemOp {
  readonly t: "system";
  readonly text: string;
}

interface CallOp {
  readonly t: "call";
  readonly n: number;
  readonly picks: ReadonlyArray<number>;
  readonly names: ReadonlyArray<number>;
  readonly args: ReadonlyArray<string>;
  readonly contents: ReadonlyArray<string>;
  readonly errors: ReadonlyArray<boolean>;
  readonly reasoning: ReadonlyArray<ReasoningPart>;
  readonly text: string | null;
  readonly results: ResultMode;
}

interface ResultsOp {
  readonly t: "results";
  readonly count: number;
  readonly picks: ReadonlyArray<number>;
  readonly combined: boolean;
}

type Op = UserOp | AssistantOp | CallOp | ResultsOp | SystemOp;

function userParts(op: UserOp): Part[] {
  const textPart: Part = { type: "text", text: op.text };
  switch (op.shape) {
    case 1:
      return [
        textPart,
        { type: "media", mediaType: "image/png", uri: "https://example.com/a.png", sizeBytes: 1234 },
      ];
    case 2:
      return [
        textPart,
        { type: "media", mediaType: "application/pdf", uri: "s3://bucket/report.pdf", alt: "report" },
      ];
    case 3:
      return [{ type: "media", mediaType: "image/gif", uri: "data:image/gif;base64,R0lGODlhAQABAAAAACw=" }];
    case 4:
      return [];
    default:
      return [textPart];
  }
}

/** How a generated log ends. */
type Ending = "as-is" | "flush" | "pending-call";

interface LogSpec {
  readonly system: string | null;
  readonly ops: ReadonlyArray<Op>;
  readonly ending: Ending;
  readonly endingCall: CallOp;
  /** Per message: 0 → `m<seq>`, 1 → `ü<seq>` (unicode id), 2 → no id (generated by the log). */
  readonly idStyles: ReadonlyArray<number>;
}

/** Options of `arbitraryLogInputs`. */
export interface LogArbitraryOptions {
  /** Upper bound on abstract operations (a call op may write several messages). Default 16. */
  readonly maxOps?: number;
  /** Size of the call-id pool; small so ids get reused once answered. Default 3. */
  readonly idPoolSize?: number;
  /**
   * Whether a new call may reuse an (answered) id of an assistant message that still has other calls pending,
   * so that one tool message can answer two assistant messages holding the same call id. Default true.
   */
  readonly reuseIdsAcrossOpenGroups?: boolean;
}

const callOpArb = (idPoolSize: number): fc.Arbitrary<CallOp> =>
  fc.record({
    t: fc.constant("call" as const),
    n: fc.integer({ min: 1, max: 3 }),
    picks: fc.array(fc.nat(idPoolSize * 4), { minLength: 3, maxLength: 3 }),
    names: fc.array(fc.nat(toolNames.length - 1), { minLength: 3, maxLength: 3 }),
    args: fc.array(argsArb, { minLength: 3, maxLength: 3 }),
    contents: fc.array(textArb, { minLength: 3, maxLength: 3 }),
    errors: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
    reasoning: fc.array(reasoningArb, { maxLength: 2 }),
    text: fc.option(textArb, { freq: 2 }),
    results: fc.constantFrom<ResultMode>(
      "each",
      "each",
      "each-reversed",
      "combined",
      "combined",
      "partial",
      "later",
      "later",
      "fuse",
      "fuse",
    ),
  });

function opArb(idPoolSize: number): fc.Arbitrary<Op> {
  return fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        t: fc.constant("user" as const),
        text: textArb,
        shape: fc.oneof(
          { weight: 12, arbitrary: fc.constant(0) },
          { weight: 4, arbitrary: fc.integer({ min: 1, max: 4 }) },
        ),
        flush: fc.oneof(
          { weight: 4, arbitrary: fc.constant(true) },
          { weight: 1, arbitrary: fc.constant(false) },
        ),
        flushCombined: fc.boolean(),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant("assistant" as const),
        text: textArb,
        reasoning: fc.option(reasoningArb, { freq: 3 }),
        silent: fc.nat(8).map((n) => n === 0),
      }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant("system" as const), text: textArb }) },
    { weight: 4, arbitrary: callOpArb(idPoolSize) },
    {
      weight: 1,
      arbitrary: fc.record({
        t: fc.constant("results" as const),
        count: fc.integer({ min: 1, max: 4 }),
        picks: fc.array(fc.nat(8), { minLength: 4, maxLength: 4 }),
        combined: fc.boolean(),
      }),
    },
  );
}

interface PendingCall {
  readonly callId: string;
  readonly name: string;
  readonly content: string;
  readonly isError: boolean;
  /** Index (in the output) of the assistant message holding the call. */
  readonly owner: number;
}

/** Turns a log spec into message inputs; every choice is made so the result is a valid log. */
class LogBuilder {
  readonly out: MessageInput[] = [];
  readonly pending: PendingCall[] = [];
  /** Call ids of each assistant message (by output index) that still has pending calls. */
  readonly openCalls = new Map<number, ReadonlyArray<string>>();

  constructor(
    private readonly spec: LogSpec,
    private readonly pool: ReadonlyArray<string>,
    private readonly reuseAcrossOpen: boolean,
  ) {}

  build(): MessageInput[] {
    if (this.spec.system !== null)
      this.push({ role: "system", parts: [{ type: "text", text: this.spec.system }] });
    for (const op of this.spec.ops) this.apply(op);
    if (this.spec.ending === "flush") this.flush(false);
    if (this.spec.ending === "pending-call") this.call({ ...this.spec.endingCall, results: "later" });
    return this.out;
  }

  private push(input: Omit<MessageInput, "id">): void {
    const seq = this.out.length;
    const style = this.spec.idStyles[seq % Math.max(1, this.spec.idStyles.length)] ?? 0;
    const id = style === 0 ? `m${seq}` : style === 1 ? `ü${seq}` : undefined;
    this.out.push(id === undefined ? input : { id, ...input });
  }

  private apply(op: Op): void {
    switch (op.t) {
      case "user":
        if (op.flush) this.flush(op.flushCombined);
        this.push({
          role: "user",
          parts: userParts(op),
          meta: { pinned: op.text.length % 7 === 0 },
        });
        return;
      case "assistant": {
        const textPart: Part = { type: "text", text: op.text };
        if (op.reasoning === null) this.push({ role: "assistant", parts: [textPart] });
        else this.push({ role: "assistant", parts: op.silent ? [op.reasoning] : [op.reasoning, textPart] });
        return;
      }
      case "system":
        this.push({ role: "system", parts: [{ type: "text", text: op.text }] });
        return;
      case "call":
        this.call(op);
        return;
      case "results": {
        const chosen: PendingCall[] = [];
        for (const pick of op.picks.slice(0, op.count)) {
          const rest = this.pending.filter((p) => !chosen.includes(p));
          if (rest.length === 0) break;
          chosen.push(rest[pick % rest.length]!);
        }
        this.answer(chosen, op.combined);
        return;
      }
    }
  }

  private available(): string[] {
    const busy = new Set(this.pending.map((p) => p.callId));
    if (!this.reuseAcrossOpen) for (const ids of this.openCalls.values()) for (const id of ids) busy.add(id);
    return this.pool.filter((id) => !busy.has(id));
  }

  private call(op: CallOp): void {
    if (this.available().length === 0) this.flush(false);
    const free = this.available();
    const calls: PendingCall[] = [];
    const owner = this.out.length;
    for (let k = 0; k < op.n && free.length > 0; k++) {
      const [callId] = free.splice(op.picks[k]! % free.length, 1);
      calls.push({
        callId: callId!,
        name: toolNames[op.names[k]!]!,
        content: op.contents[k]!,
        isError: op.errors[k]! && op.contents[k]!.length % 3 === 0,
        owner,
      });
    }
    const parts: Part[] = [...op.reasoning];
    if (op.text !== null) parts.push({ type: "text", text: op.text });
    calls.forEach((c, k) => {
      parts.push({ type: "tool_call", callId: c.callId, name: c.name, args: op.args[k]! });
    });
    this.push({ role: "assistant", parts });
    this.pending.push(...calls);
    this.openCalls.set(
      owner,
      calls.map((c) => c.callId),
    );
    switch (op.results) {
      case "each":
        for (const c of calls) this.answer([c], false);
        return;
      case "each-reversed":
        for (const c of [...calls].reverse()) this.answer([c], false);
        return;
      case "combined":
        this.answer(calls, true);
        return;
      case "partial":
        this.answer(calls.slice(0, Math.max(1, calls.length - 1)), true);
        return;
      case "later":
        return;
      case "fuse":
        // one tool message answering these calls and every earlier pending one: fuses their groups
        this.flush(true);
        return;
    }
  }

  /** Answers every pending call, oldest first. */
  private flush(combined: boolean): void {
    this.answer([...this.pending], combined);
  }

  private answer(calls: ReadonlyArray<PendingCall>, combined: boolean): void {
    if (calls.length === 0) return;
    const toPart = (c: PendingCall): Part =>
      c.isError
        ? { type: "tool_result", callId: c.callId, content: c.content, isError: true }
        : { type: "tool_result", callId: c.callId, content: c.content };
    const meta = (c: PendingCall) => (c.content.length % 2 === 0 ? { toolName: c.name } : {});
    if (combined) this.push({ role: "tool", parts: calls.map(toPart), meta: meta(calls[0]!) });
    else for (const c of calls) this.push({ role: "tool", parts: [toPart(c)], meta: meta(c) });
    for (const c of calls) {
      this.pending.splice(this.pending.indexOf(c), 1);
      if (!this.pending.some((p) => p.owner === c.owner)) this.openCalls.delete(c.owner);
    }
  }
}

/** Random batches-in-one of message inputs that together form a valid log (optional system message first). */
export function arbitraryLogInputs(options: LogArbitraryOptions = {}): fc.Arbitrary<MessageInput[]> {
  const idPoolSize = options.idPoolSize ?? 3;
  const pool = Array.from({ length: idPoolSize }, (_, i) => `call_${i}`);
  const reuse = options.reuseIdsAcrossOpenGroups ?? true;
  return fc
    .record({
      system: fc.option(textArb, { freq: 2 }),
      ops: fc.array(opArb(idPoolSize), { maxLength: options.maxOps ?? 16, size: "+1" }),
      ending: fc.constantFrom<Ending>("as-is", "flush", "flush", "pending-call"),
      endingCall: callOpArb(idPoolSize),
      idStyles: fc.array(fc.constantFrom(0, 0, 0, 0, 1, 2), { minLength: 1, maxLength: 8 }),
    })
    .map((spec) => new LogBuilder(spec, pool, reuse).build());
}

/** A random valid log value. */
export function arbitraryLog(
  options: LogArbitraryOptions = {},
  threadId = "thread-1",
): fc.Arbitrary<ThreadLog> {
  return arbitraryLogInputs(options).map((inputs) => describeLog(ThreadLog.from(threadId, inputs)));
}

/** A valid log split into consecutive non-empty batches (each batch appends cleanly after the previous ones). */
export function arbitraryBatches(options: LogArbitraryOptions = {}): fc.Arbitrary<MessageInput[][]> {
  return fc
    .tuple(arbitraryLogInputs(options), fc.array(fc.integer({ min: 1, max: 6 }), { maxLength: 40 }))
    .map(([inputs, sizes]) => {
      const batches: MessageInput[][] = [];
      let at = 0;
      for (let k = 0; at < inputs.length; k++) {
        const size = sizes[k % Math.max(1, sizes.length)] ?? inputs.length;
        batches.push(inputs.slice(at, at + size));
        at += size;
      }
      return batches;
    });
}

/** A message that can never be appended to a log built by these arbitraries, and why. */
export interface BadMessage {
  readonly input: MessageInput;
  readonly why: string;
}

/** Messages that can never be appended to a log built by these arbitraries; `existingId` adds a duplicate id. */
export function badMessageCases(existingId?: string): BadMessage[] {
  const cases: BadMessage[] = [
    {
      why: "orphaned result",
      input: { role: "tool", parts: [{ type: "tool_result", callId: "never-called", content: "x" }] },
    },
    {
      why: "call in a user message",
      input: { role: "user", parts: [{ type: "tool_call", callId: "never-called", name: "x", args: "{}" }] },
    },
    { why: "tool message without results", input: { role: "tool", parts: [] } },
    { why: "unknown role", input: { role: "robot", parts: [] } as unknown as MessageInput },
    { why: "malformed part", input: { role: "user", parts: [{ type: "text" }] } as unknown as MessageInput },
    {
      why: "empty call id",
      input: { role: "assistant", parts: [{ type: "tool_call", callId: "", name: "x", args: "{}" }] },
    },
    { why: "empty id", input: { id: "", role: "user", parts: [] } },
  ];
  if (existingId !== undefined) {
    cases.push({
      why: "duplicate id",
      input: { id: existingId, role: "user", parts: [{ type: "text", text: "" }] },
    });
  }
  return cases;
}

/** A random bad message (see `badMessageCases`). */
export function arbitraryBadMessage(existingId?: string): fc.Arbitrary<BadMessage> {
  return fc.constantFrom(...badMessageCases(existingId));
}

/**
 * Whether one tool message answers calls of two assistant messages that share a call id (an id reused after
 * being answered while the first message still had a call pending). `renderPrompt` mishandles this shape (see
 * render-prompt.test.ts, "reused call id across a fused group"), so the differential properties skip it.
 */
export function hasFusedIdReuse(log: ThreadLog): boolean {
  for (let seq = 0; seq < log.length; seq++) {
    const callers = log.answersOf(seq);
    if (callers.length < 2) continue;
    const seen = new Set<string>();
    for (const callSeq of callers) {
      for (const p of log.at(callSeq)!.parts) {
        if (p.type !== "tool_call") continue;
        if (seen.has(p.callId)) return true;
        seen.add(p.callId);
      }
    }
  }
  return false;
}

/**
 * The minimal log of that shape: a1 calls c1 (alpha) and c2 (beta); t1 answers c1; a2 reuses c1 (gamma); t2
 * answers c2 (of a1) and c1 (of a2).
 */
export function fusedIdReuseLog(): ThreadLog {
  const log = ThreadLog.from("t", [
    {
      id: "a1",
      role: "assistant",
      parts: [
        { type: "tool_call", callId: "c1", name: "alpha", args: "{}" },
        { type: "tool_call", callId: "c2", name: "beta", args: "{}" },
      ],
    },
    { id: "t1", role: "tool", parts: [{ type: "tool_result", callId: "c1", content: "r1" }] },
    { id: "a2", role: "assistant", parts: [{ type: "tool_call", callId: "c1", name: "gamma", args: "{}" }] },
    {
      id: "t2",
      role: "tool",
      parts: [
        { type: "tool_result", callId: "c2", content: "r2" },
        { type: "tool_result", callId: "c1", content: "r3" },
      ],
    },
  ]);
  return log;
}

/** Per-render options that shape the messages: pending mode, injections and rehydrated artifacts. */
export interface RenderExtras {
  readonly pendingCalls: "stub" | "hold";
  readonly injections: ReadonlyArray<{ readonly text: string; readonly role?: "user" | "system" }>;
  readonly rehydrated: ReadonlyArray<{
    readonly artifactId: string;
    readonly content: string;
    readonly truncated?: boolean;
  }>;
}

/** Random pending mode, injections and rehydrations. */
export const renderExtrasArb: fc.Arbitrary<RenderExtras> = fc.record({
  pendingCalls: fc.constantFrom("stub" as const, "hold" as const),
  injections: fc.array(
    fc
      .tuple(textArb, fc.constantFrom("user" as const, "system" as const, undefined))
      .map(([text, role]) => (role === undefined ? { text } : { text, role })),
    { maxLength: 2 },
  ),
  rehydrated: fc.array(
    fc
      .tuple(fc.string({ minLength: 1, maxLength: 6 }), textArb, fc.option(fc.boolean()))
      .map(([artifactId, content, truncated]) =>
        truncated === null ? { artifactId, content } : { artifactId, content, truncated },
      ),
    { maxLength: 2 },
  ),
});

/** fast-check run parameters: `numRuns`, and the seed from env `FC_SEED` when set (to replay a failure). */
export function fcParams(numRuns: number): { numRuns: number; seed?: number } {
  const seed = process.env.FC_SEED;
  return seed !== undefined && seed !== "" ? { numRuns, seed: Number(seed) } : { numRuns };
}

/** Gives a log a readable form in fast-check counterexamples (its messages, not the class internals). */
function describeLog(log: ThreadLog): ThreadLog {
  Object.defineProperty(log, fc.toStringMethod, {
    value: () =>
      `ThreadLog.from(${JSON.stringify(log.threadId)}, ${fc.stringify(log.messages.map(({ id, role, parts }) => ({ id, role, parts })))})`,
  });
  return log;
}

// ---------------------------------------------------------------------------------------------------------------
// plans

interface RecordStrings {
  readonly summary: string;
  readonly artifactSummary: string;
  readonly summarizerId: string;
  readonly promptVersion: string;
  readonly artifactId: string;
  readonly dropReason: string;
  readonly flag: boolean;
  readonly size: number;
  readonly structured: boolean;
}

interface ActionSpec {
  readonly kind: ActionKind;
  /** Group picks (drop) or message picks (clear, include). */
  readonly picks: ReadonlyArray<number>;
  /** Run start and length over the non-pending groups (summarize, externalize). */
  readonly start: number;
  readonly len: number;
  /** When set, reuse (overlap with) the span of an earlier action. */
  readonly reuse: number | null;
  readonly record: RecordStrings;
  readonly strategy: string;
  readonly reason: string;
}

interface PlanSpec {
  readonly version: number;
  readonly actions: ReadonlyArray<ActionSpec>;
  /** Offset subtracted from the log length for `basedOnSeq` (bounded by the last mentioned message). */
  readonly basedOnSlack: number;
}

const nonEmpty = fc
  .oneof(fc.lorem({ maxCount: 4 }), fc.string({ unit: "grapheme", minLength: 1, maxLength: 6 }))
  .filter((s) => s.length > 0);

const recordStringsArb: fc.Arbitrary<RecordStrings> = fc.record({
  summary: nonEmpty,
  artifactSummary: fc.oneof(fc.constant(""), textArb),
  summarizerId: fc.constantFrom("model:small", "model:large", "sümm"),
  promptVersion: fc.constantFrom("v1", "v2"),
  artifactId: fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 8 }),
  dropReason: nonEmpty,
  flag: fc.boolean(),
  size: fc.nat(2_000_000),
  structured: fc.boolean(),
});

const actionSpecArb: fc.Arbitrary<ActionSpec> = fc.record({
  kind: fc.constantFrom<ActionKind>(
    "include",
    "clear",
    "clear",
    "summarize",
    "summarize",
    "externalize",
    "drop",
  ),
  picks: fc.array(fc.nat(1000), { minLength: 1, maxLength: 5 }),
  start: fc.nat(1000),
  len: fc.integer({ min: 1, max: 4 }),
  reuse: fc.option(fc.nat(10), { freq: 3 }),
  record: recordStringsArb,
  strategy: fc.constantFrom("tool-retention", "sliding-window", "summarizer", "fallback", "strätegy"),
  reason: fc.oneof(fc.constant(""), textArb),
});

const planSpecArb: fc.Arbitrary<PlanSpec> = fc.record({
  version: fc.nat(50),
  actions: fc.array(actionSpecArb, { maxLength: 6 }),
  basedOnSlack: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(5) }),
});

function recordFor(
  kind: ActionKind,
  r: RecordStrings,
  span: ReadonlyArray<string>,
  log: ThreadLog,
): ActionRecord {
  switch (kind) {
    case "include":
      return { kind };
    case "clear": {
      if (!r.flag) return { kind };
      const cleared = span.flatMap((id) =>
        log
          .byId(id)!
          .parts.flatMap((p) =>
            p.type === "tool_result"
              ? [{ messageId: id, callId: p.callId, toolName: "tool", chars: p.content.length }]
              : [],
          ),
      );
      if (!r.structured) return { kind, clearArgs: r.size % 2 === 0, cleared };
      // Excerpts on every other text or result part; a part index of 0 is sometimes left to its default.
      const excerpts = span.flatMap((id) =>
        log.byId(id)!.parts.flatMap((p, i) =>
          (p.type === "tool_result" || p.type === "text") && (i + r.size) % 2 === 0
            ? [
                {
                  messageId: id,
                  ...(i === 0 && r.size % 3 === 0 ? {} : { partIndex: i }),
                  text: `[excerpt ${i}] ${r.summary}`,
                },
              ]
            : [],
        ),
      );
      // Sometimes only some parts: every other changeable part of each message (a call's result, arguments or
      // reasoning alone; not the reasoning of the turn in progress, which a clear may not leave out).
      const onlyParts = span.flatMap((id) =>
        log
          .byId(id)!
          .parts.flatMap((p, i) =>
            p.type !== "media" &&
            (i + r.size) % 3 !== 0 &&
            (p.type !== "reasoning" || log.seqOf(id)! < log.lastUserSeq)
              ? [{ messageId: id, partIndex: i }]
              : [],
          ),
      );
      const only = r.size % 4 === 1 && onlyParts.length > 0 ? { onlyParts } : {};
      return { kind, clearArgs: r.size % 2 === 0, cleared, excerpts, ...only };
    }
    case "summarize":
      return {
        kind,
        summary: r.summary,
        summarizerId: r.summarizerId,
        promptVersion: r.promptVersion,
        ...(r.structured ? { structured: { goals: [r.summary], openItems: [] } } : {}),
        ...(r.flag ? { spanHash: "ab".repeat(32) } : {}),
      };
    case "externalize":
      return {
        kind,
        artifactId: r.artifactId,
        summary: r.artifactSummary,
        ...(r.flag ? { sizeChars: r.size } : {}),
      };
    case "drop":
      return { kind, reason: r.dropReason, ...(r.flag ? { marker: true } : {}) };
  }
}

/** Ids of some groups' messages in log order. */
function idsOfGroups(groups: ReadonlyArray<Group>, log: ThreadLog): string[] {
  return groups
    .flatMap((g) => g.seqs)
    .sort((a, b) => a - b)
    .map((s) => log.at(s)!.id);
}

function distinctPicks<T>(items: ReadonlyArray<T>, picks: ReadonlyArray<number>): T[] {
  const chosen = new Set<T>();
  for (const p of picks) chosen.add(items[p % items.length]!);
  return [...chosen];
}

function buildAction(
  spec: ActionSpec,
  log: ThreadLog,
  earlier: ReadonlyArray<PlanAction>,
): PlanAction | null {
  const free = log.groups.filter((g) => !g.pending);
  if (free.length === 0) return null;
  const groupOfId = new Map<string, number>();
  free.forEach((g, i) => {
    for (const id of g.messageIds) groupOfId.set(id, i);
  });
  const reused =
    spec.reuse !== null && earlier.length > 0 ? earlier[spec.reuse % earlier.length]!.span : null;
  let span: string[];
  if (spec.kind === "include" || spec.kind === "clear") {
    const freeIds = idsOfGroups(free, log);
    span = reused !== null ? [...reused] : distinctPicks(freeIds, spec.picks);
  } else {
    const reusedGroups = reused === null ? null : [...new Set(reused.map((id) => groupOfId.get(id)!))];
    let chosen: number[];
    if (spec.kind === "drop") {
      chosen = reusedGroups ?? distinctPicks([...free.keys()], spec.picks);
    } else {
      // summarize / externalize: a run of whole consecutive groups
      const lo = reusedGroups === null ? spec.start % free.length : Math.min(...reusedGroups);
      const hi =
        reusedGroups === null ? Math.min(free.length - 1, lo + spec.len - 1) : Math.max(...reusedGroups);
      chosen = Array.from({ length: hi - lo + 1 }, (_, k) => lo + k);
    }
    span = idsOfGroups(
      chosen.map((i) => free[i]!),
      log,
    );
  }
  span.sort((a, b) => log.seqOf(a)! - log.seqOf(b)!);
  return {
    kind: spec.kind,
    span,
    record: recordFor(spec.kind, spec.record, span, log),
    strategy: spec.strategy,
    reason: spec.reason,
  } as PlanAction;
}

function buildPlan(log: ThreadLog, spec: PlanSpec): CompactionPlan {
  const actions: PlanAction[] = [];
  for (const a of spec.actions) {
    const action = buildAction(a, log, actions);
    if (action !== null) actions.push(action);
  }
  let lastMentioned = -1;
  for (const a of actions) for (const id of a.span) lastMentioned = Math.max(lastMentioned, log.seqOf(id)!);
  const basedOnSeq = Math.max(lastMentioned + 1, log.length - spec.basedOnSlack);
  return createPlan({ threadId: log.threadId, version: spec.version, basedOnSeq, actions });
}

/**
 * Random VALID plans for a log: removals (drop, summarize, externalize) cover whole groups, summarize and
 * externalize spans are runs of consecutive groups, include/clear take any non-pending messages, pending groups
 * are never mentioned, and actions often overlap (reuse an earlier action's span) to exercise precedence.
 */
export function arbitraryPlanFor(log: ThreadLog): fc.Arbitrary<CompactionPlan> {
  return planSpecArb.map((spec) => buildPlan(log, spec));
}

/** A random valid log together with a random valid plan for it (shrinks both sides independently). */
export function arbitraryLogAndPlan(
  options: LogArbitraryOptions = {},
): fc.Arbitrary<{ readonly log: ThreadLog; readonly plan: CompactionPlan }> {
  return fc
    .tuple(arbitraryLog(options), planSpecArb)
    .map(([log, spec]) => ({ log, plan: buildPlan(log, spec) }));
}

// ---------------------------------------------------------------------------------------------------------------
// invalid plans

/** A plan with exactly one kind of defect, and the problem code `validatePlan` must report for it. */
export interface InvalidPlanCase {
  readonly plan: CompactionPlan;
  readonly code: PlanProblem["code"];
  readonly why: string;
}

/** Random choices for building one defect (which kind, which message, which record). */
export interface DefectSpec {
  readonly which: number;
  readonly pick: number;
  readonly pick2: number;
  readonly kind: number;
}

export const defectSpecArb: fc.Arbitrary<DefectSpec> = fc.record({
  which: fc.nat(100),
  pick: fc.nat(1000),
  pick2: fc.nat(1000),
  kind: fc.nat(2),
});

const dropOf = (span: string[]): PlanAction => ({
  kind: "drop",
  span,
  record: { kind: "drop", reason: "test" },
  strategy: "bad",
  reason: "",
});

/** Actions of a valid plan with every mention of some ids removed (empty actions disappear). */
function without(plan: CompactionPlan, ids: ReadonlyArray<string>): PlanAction[] {
  const gone = new Set(ids);
  return plan.actions.flatMap((a) => {
    const span = a.span.filter((id) => !gone.has(id));
    return span.length === 0 ? [] : [{ ...a, span } as PlanAction];
  });
}

function buildInvalid(log: ThreadLog, base: CompactionPlan, d: DefectSpec): InvalidPlanCase {
  const ids = log.messages.map((m) => m.id);
  const make = (over: Partial<CompactionPlan>, code: PlanProblem["code"], why: string): InvalidPlanCase => ({
    plan: createPlan({ ...base, basedOnSeq: log.length, ...over }),
    code,
    why,
  });
  const defects: Array<() => InvalidPlanCase> = [
    () => make({ actions: [...base.actions, dropOf([`unknown-${d.pick}`])] }, "unknown_id", "unknown id"),
    () => make({ threadId: `${log.threadId}-other` }, "thread_mismatch", "other thread"),
    () => make({ basedOnSeq: log.length + 1 + (d.pick % 3) }, "based_on_future", "based on a future seq"),
  ];
  if (ids.length > 0) {
    const id = ids[d.pick % ids.length]!;
    defects.push(() => {
      const wrong: ActionRecord = d.kind === 0 ? { kind: "drop", reason: "x" } : { kind: "include" };
      const action = {
        kind: d.kind === 0 ? "clear" : "summarize",
        span: [id],
        record: wrong,
        strategy: "bad",
        reason: "",
      };
      return make(
        { actions: [...base.actions, action as unknown as PlanAction] },
        "record_mismatch",
        "wrong record kind",
      );
    });
    defects.push(() => {
      const action: PlanAction = {
        kind: "include",
        span: [id, id],
        record: { kind: "include" },
        strategy: "b",
        reason: "",
      };
      return make({ actions: [...base.actions, action] }, "duplicate_in_span", "id twice in a span");
    });
    defects.push(() => {
      const seq = d.pick % ids.length;
      const action: PlanAction = {
        kind: "include",
        span: [ids[seq]!],
        record: { kind: "include" },
        strategy: "b",
        reason: "",
      };
      return make(
        { basedOnSeq: seq, actions: [...base.actions, action] },
        "future_id",
        "id at/after basedOnSeq",
      );
    });
  }
  const splittable = log.groups.filter((g) => !g.pending && g.kind === "tool_call" && g.seqs.length >= 2);
  if (splittable.length > 0) {
    defects.push(() => {
      const group = splittable[d.pick % splittable.length]!;
      // a non-empty proper subset of the group
      const n = group.messageIds.length;
      const mask = 1 + (d.pick2 % ((1 << Math.min(n, 16)) - 2));
      const subset = group.messageIds.filter((_, i) => i < 16 && (mask & (1 << i)) !== 0);
      const kinds: ActionKind[] = ["drop", "summarize", "externalize"];
      const kind = kinds[d.kind]!;
      const record = recordFor(kind, { ...defaultRecordStrings }, subset, log);
      const action = { kind, span: subset, record, strategy: "bad", reason: "" } as PlanAction;
      return make(
        { actions: [...without(base, group.messageIds), action] },
        "orphaning_split",
        "half a group removed",
      );
    });
  }
  const pendingGroups = log.groups.filter((g) => g.pending);
  if (pendingGroups.length > 0) {
    defects.push(() => {
      const group = pendingGroups[d.pick % pendingGroups.length]!;
      const id = group.messageIds[d.pick2 % group.messageIds.length]!;
      const kinds: ActionKind[] = ["clear", "drop", "summarize"];
      const kind = kinds[d.kind]!;
      const action = {
        kind,
        span: [id],
        record: recordFor(kind, defaultRecordStrings, [id], log),
        strategy: "bad",
        reason: "",
      };
      return make(
        { actions: [...base.actions, action as PlanAction] },
        "pending_call_touched",
        "pending call touched",
      );
    });
  }
  return defects[d.which % defects.length]!();
}

const defaultRecordStrings: RecordStrings = {
  summary: "s",
  artifactSummary: "",
  summarizerId: "m",
  promptVersion: "v1",
  artifactId: "a1",
  dropReason: "r",
  flag: false,
  size: 0,
  structured: false,
};

/** Random INVALID plans for a log, each built from a valid plan plus one defect. */
export function arbitraryInvalidPlanFor(log: ThreadLog): fc.Arbitrary<InvalidPlanCase> {
  return fc.tuple(planSpecArb, defectSpecArb).map(([spec, d]) => buildInvalid(log, buildPlan(log, spec), d));
}

/**
 * One action that, added to a VALID plan for `log`, makes it invalid, with the code `validatePlan` must report;
 * null when the chosen defect is impossible for this log and plan. Used to test incremental validation
 * (`extendPlan` of a plan already known valid).
 */
export function addedDefect(
  log: ThreadLog,
  base: CompactionPlan,
  d: DefectSpec,
): { readonly action: PlanAction; readonly code: PlanProblem["code"] } | null {
  const ids = log.messages.map((m) => m.id);
  const resolved = resolvePlan(base);
  const keeps = (id: string) => ["include", "clear"].includes(resolved.decisions.get(id)?.kind ?? "include");
  const options: Array<() => { action: PlanAction; code: PlanProblem["code"] } | null> = [
    () => ({ action: dropOf([`unknown-${d.pick}`]), code: "unknown_id" }),
    () => {
      const id = ids[d.pick % Math.max(1, ids.length)];
      if (id === undefined) return null;
      const action = {
        kind: "clear",
        span: [id],
        record: { kind: "drop", reason: "x" },
        strategy: "b",
        reason: "",
      };
      return { action: action as unknown as PlanAction, code: "record_mismatch" };
    },
    () => {
      const id = ids[d.pick % Math.max(1, ids.length)];
      if (id === undefined) return null;
      return {
        action: { kind: "include", span: [id, id], record: { kind: "include" }, strategy: "b", reason: "" },
        code: "duplicate_in_span",
      };
    },
    () => {
      const pending = log.groups.filter((g) => g.pending);
      if (pending.length === 0) return null;
      const group = pending[d.pick % pending.length]!;
      const id = group.messageIds[d.pick2 % group.messageIds.length]!;
      return {
        action: { kind: "clear", span: [id], record: { kind: "clear" }, strategy: "b", reason: "" },
        code: "pending_call_touched",
      };
    },
    () => {
      const kept = log.groups.filter(
        (g) => !g.pending && g.kind === "tool_call" && g.seqs.length >= 2 && g.messageIds.every(keeps),
      );
      if (kept.length === 0) return null;
      const group = kept[d.pick % kept.length]!;
      const n = Math.min(group.messageIds.length, 16);
      const mask = 1 + (d.pick2 % ((1 << n) - 2));
      const subset = group.messageIds.filter((_, i) => i < 16 && (mask & (1 << i)) !== 0);
      return { action: dropOf(subset), code: "orphaning_split" };
    },
  ];
  return options[d.which % options.length]!();
}

/**
 * The same plan built step by step with `extendPlan` (each step adds a chunk of its actions, `basedOnSeq` never
 * decreasing), so resolution and validation take their incremental paths. Every step is a valid plan when `plan`
 * is: a prefix of a valid plan's actions still removes whole groups only.
 */
export function chainOf(plan: CompactionPlan, cuts: ReadonlyArray<number>, log: ThreadLog): CompactionPlan[] {
  const points = [...new Set(cuts.map((c) => c % (plan.actions.length + 1)))].sort((a, b) => a - b);
  const chain: CompactionPlan[] = [];
  let previous = emptyPlan(plan.threadId);
  let at = 0;
  let basedOnSeq = 0;
  for (const point of [...points, plan.actions.length]) {
    const chunk = plan.actions.slice(at, point);
    for (const a of chunk) for (const id of a.span) basedOnSeq = Math.max(basedOnSeq, log.seqOf(id)! + 1);
    if (point === plan.actions.length) basedOnSeq = plan.basedOnSeq;
    previous = extendPlan(previous, chunk, basedOnSeq);
    chain.push(previous);
    at = point;
  }
  return chain;
}
