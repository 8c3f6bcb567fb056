/**
 * Gathers what the audit report shows of one thread from the engine's audit views: every recorded model call
 * (replayed, so its request is the one the model saw), every plan version's fate for each message (from
 * `explain`), and the log itself. Everything is embedded once: texts are interned; so is each distinct request
 * message (a message kept verbatim is the same in every call that sends it), and a call's request is runs of
 * those; a plan version is stored as its changes against the version before it (also the report's plan diff).
 * The page therefore grows with what changes from call to call, not with calls × messages.
 */
import type { ContextEngine, MessageFate, ReplayResult, Stores } from "../index.js";
import { NotFoundError } from "../index.js";
import type { Part, Sensitivity } from "../log/message.js";
import type { RenderedMessage } from "../render/rendered-prompt.js";
import { withheldText } from "../render/withhold-content.js";
import type { ModelCallRecord } from "../stores/model-call-store.js";

/** What a plan does with a message: its fate and the strategy and reason of the action behind it. */
export type ReportAction = readonly [fate: MessageFate, strategy: string, reason: string];

/** A log message: id, role, index of its text in `texts`, its own tokens. */
export type ReportMessage = readonly [id: string, role: string, text: number, tokens: number];

/** One message of a request: role, rendered kind, text index, tokens, the seqs of the log messages it stands for. */
export type ReportRequestMessage = readonly [
  role: string,
  kind: string,
  text: number,
  tokens: number,
  sources: ReadonlyArray<number>,
];

/** A plan version as its changes against the previous one: `[seq, action index]`, -1 for kept. */
export interface ReportPlan {
  readonly version: number;
  readonly changes: ReadonlyArray<readonly [seq: number, action: number]>;
}

/** One recorded model call as the report shows it. */
export interface ReportCall {
  readonly callId: string;
  /** 1-based position among the thread's calls. */
  readonly number: number;
  readonly planVersion: number;
  readonly logSeq: number;
  readonly format: string;
  readonly model?: string;
  readonly createdAt: string;
  /** Prompt tokens of the request, by the renderer's own count. */
  readonly tokens: number;
  /** The recorded estimate (prompt plus tool definitions and framing). */
  readonly tokenEstimate: number;
  readonly budget?: ModelCallRecord["budget"];
  /** Whether the re-rendered request hashes as recorded; `mismatch` says why not. */
  readonly verified: boolean;
  readonly mismatch?: string;
  /** The request's messages: runs `[first, count]` of consecutive indexes into `ReportData.requests`. */
  readonly request: ReadonlyArray<readonly [first: number, count: number]>;
}

/** Everything the report page renders, JSON-serializable. */
export interface ReportData {
  readonly threadId: string;
  readonly generatedAt: string;
  readonly texts: ReadonlyArray<string>;
  readonly actions: ReadonlyArray<ReportAction>;
  readonly messages: ReadonlyArray<ReportMessage>;
  /** Every distinct request message of the thread's calls, each once. */
  readonly requests: ReadonlyArray<ReportRequestMessage>;
  readonly plans: ReadonlyArray<ReportPlan>;
  readonly calls: ReadonlyArray<ReportCall>;
}

/** Where the data comes from. */
export interface ReportSource {
  readonly engine: ContextEngine;
  readonly stores: Stores;
  /** Names the database in errors. */
  readonly database: string;
  /** Clock for `generatedAt` (tests pin it). */
  readonly now?: () => Date;
  /** Told after each plan version read and each call replayed: a long thread takes a while. */
  readonly onProgress?: (done: number, total: number) => void;
}

/** Interns strings so each distinct text or action is embedded once. */
class Interner<T> {
  readonly values: T[] = [];
  private readonly index = new Map<string, number>();
  constructor(private readonly keyOf: (value: T) => string) {}
  add(value: T): number {
    const key = this.keyOf(value);
    let i = this.index.get(key);
    if (i === undefined) {
      i = this.values.length;
      this.values.push(value);
      this.index.set(key, i);
    }
    return i;
  }
}

const PART_TEXT: { readonly [K in Part["type"]]: (part: Extract<Part, { type: K }>) => string } = {
  text: (p) => p.text,
  reasoning: (p) => `[reasoning] ${p.redacted === undefined ? p.text : "(redacted)"}`,
  tool_call: (p) => `→ ${p.name}(${p.args})  [call ${p.callId}]`,
  tool_result: (p) => `← ${p.isError === true ? "error " : ""}[result of ${p.callId}] ${p.content}`,
  media: (p) => `[${p.mediaType} ${p.uri}${p.alt === undefined ? "" : `: ${p.alt}`}]`,
};

/** A message's parts as one readable text (the same for a log message and its verbatim copy in a request). */
export function partsText(parts: ReadonlyArray<Part>): string {
  return parts.map((p) => (PART_TEXT[p.type] as (part: Part) => string)(p)).join("\n");
}

/** Gathers the report data of a thread; throws `NotFoundError` for an unknown thread or one with no calls. */
export async function gatherReport(source: ReportSource, threadId: string): Promise<ReportData> {
  const { engine, stores, database } = source;
  const length = await stores.log.length(threadId);
  if (length === 0) {
    throw new NotFoundError(`thread ${JSON.stringify(threadId)} not found in ${database} (ingest it first)`, {
      threadId,
    });
  }
  const records = await stores.calls.list(threadId);
  if (records.length === 0) {
    throw new NotFoundError(
      `thread ${JSON.stringify(threadId)} in ${database} has no recorded model calls (run prepare first: the report shows what each call sent)`,
      { threadId },
    );
  }
  const texts = new Interner<string>((s) => s);
  const actions = new Interner<ReportAction>((a) => JSON.stringify(a));
  const entries = await stores.log.read(threadId, 0, length);
  const seqOf = new Map<string, number>();
  const messages: ReportMessage[] = entries.map(({ message }) => {
    seqOf.set(message.id, message.seq);
    return [message.id, message.role, -1, 0];
  });
  const versions = await versionsOf(stores, threadId, records);
  const total = versions.length + records.length;
  const progress = (done: number) => source.onProgress?.(done, total);
  // `explain` says which messages are above the engine's clearance (or refuses them): those show as stubs.
  const withheld = new Map<number, Sensitivity>();
  const plans = await planVersions(engine, threadId, versions, actions, messages, progress, withheld);
  messages.forEach((m, seq) => {
    const sensitivity = withheld.get(seq);
    const text =
      sensitivity === undefined ? partsText(entries[seq]!.message.parts) : withheldText(sensitivity);
    messages[seq] = [m[0], m[1], texts.add(text), m[3]];
  });
  const requests = new Interner<ReportRequestMessage>((m) => JSON.stringify(m));
  const calls: ReportCall[] = [];
  // One pass over the thread's calls, reading the stored log and each plan version once for all of them.
  for await (const replay of engine.replayThread(threadId)) {
    const record = replay.record ?? records[calls.length]!;
    calls.push(reportCall(replay, record, calls.length + 1, { texts, requests, seqOf }));
    progress(versions.length + calls.length);
  }
  return {
    threadId,
    generatedAt: (source.now?.() ?? new Date()).toISOString(),
    texts: texts.values,
    actions: actions.values,
    messages,
    requests: requests.values,
    plans,
    calls,
  };
}

/**
 * Every plan version the thread committed or a call used, each as its changes against the one before, read
 * from `explain` so the fates are the ones `explain` and `diff` print. Fills in the messages' token counts.
 */
async function planVersions(
  engine: ContextEngine,
  threadId: string,
  versions: ReadonlyArray<number>,
  actions: Interner<ReportAction>,
  messages: ReportMessage[],
  progress: (done: number) => void,
  withheld: Map<number, Sensitivity>,
): Promise<ReportPlan[]> {
  let previous: number[] = messages.map(() => -1);
  const plans: ReportPlan[] = [];
  for (const version of versions) {
    const explanation = await engine.explain(threadId, { planVersion: version });
    const current = messages.map(() => -1);
    for (const row of explanation.rows) {
      if (row.seq >= messages.length) continue;
      const m = messages[row.seq]!;
      if (row.withheld !== undefined) withheld.set(row.seq, row.withheld);
      if (m[3] === 0) messages[row.seq] = [m[0], m[1], m[2], row.tokens];
      if (row.state !== "kept")
        current[row.seq] = actions.add([row.state, row.strategy ?? "", row.reason ?? ""]);
    }
    const changes: Array<readonly [number, number]> = [];
    current.forEach((action, seq) => {
      if (action !== previous[seq]) changes.push([seq, action]);
    });
    plans.push({ version, changes });
    previous = current;
    progress(plans.length);
  }
  return plans;
}

/** Version 0 (nothing compacted), every committed version and every version a call used, ascending. */
async function versionsOf(
  stores: Stores,
  threadId: string,
  records: ReadonlyArray<ModelCallRecord>,
): Promise<number[]> {
  const committed = await stores.plans.versions(threadId);
  return [...new Set([0, ...committed, ...records.map((r) => r.planVersion)])].sort((a, b) => a - b);
}

/** Where a call's request messages go: texts and request messages interned, log seqs by message id. */
interface RequestTables {
  readonly texts: Interner<string>;
  readonly requests: Interner<ReportRequestMessage>;
  readonly seqOf: ReadonlyMap<string, number>;
}

/** Indexes as runs `[first, count]` of consecutive values. */
function runsOf(indexes: ReadonlyArray<number>): Array<readonly [number, number]> {
  const runs: Array<[number, number]> = [];
  for (const i of indexes) {
    const last = runs.at(-1);
    if (last !== undefined && last[0] + last[1] === i) last[1]++;
    else runs.push([i, 1]);
  }
  return runs;
}

function reportCall(
  replay: ReplayResult,
  record: ModelCallRecord,
  number: number,
  tables: RequestTables,
): ReportCall {
  const rendered: ReadonlyArray<RenderedMessage> = replay.prompt?.messages ?? [];
  const indexes = rendered.map((m) => {
    const sources = m.provenance.sourceIds.flatMap((id) => {
      const seq = tables.seqOf.get(id);
      return seq === undefined ? [] : [seq];
    });
    const text = tables.texts.add(partsText(m.parts));
    return tables.requests.add([m.role, m.provenance.kind, text, m.tokens, sources]);
  });
  return {
    callId: record.callId,
    number: record.callNumber ?? number,
    planVersion: record.planVersion,
    logSeq: record.logSeq,
    format: record.format,
    ...(record.model === undefined ? {} : { model: record.model }),
    createdAt: record.createdAt,
    tokens: replay.prompt?.tokenCount ?? record.tokenEstimate,
    tokenEstimate: record.tokenEstimate,
    ...(record.budget === undefined ? {} : { budget: record.budget }),
    verified: replay.ok,
    ...(replay.mismatch === undefined ? {} : { mismatch: replay.mismatch }),
    request: runsOf(indexes),
  };
}
