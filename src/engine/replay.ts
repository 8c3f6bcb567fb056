import { ClearanceError, LedgerError, NotFoundError } from "../errors/ledger-error.js";
import type { Message } from "../log/message.js";
import { mayRead } from "../log/sensitivity.js";
import { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import {
  type ProviderFormat,
  type ProviderRequestMap,
  toProviderRequest,
  validateProviderRequest,
} from "../render/provider-rules.js";
import { renderPrompt } from "../render/render-prompt.js";
import type { RenderedPrompt } from "../render/rendered-prompt.js";
import { aboveClearance, withholdAboveClearance } from "../render/withhold-content.js";
import type { StoredMessage } from "../stores/log-store.js";
import type { ModelCallRecord } from "../stores/model-call-store.js";
import {
  RENDER_FORMAT_VERSION,
  RENDER_FORMAT_VERSIONS,
  type RenderFormatVersion,
} from "../texts/placeholders.js";
import { loadTurnInputs } from "./call-record.js";
import { observed } from "./compaction-steps.js";
import type { EngineCore } from "./engine-core.js";
import { judgeCall, type LedgerVerdict, readAudited, type ThreadChains } from "./ledger-audit.js";
import { checkThreadAccess } from "./thread-access.js";
import { inputOf } from "./thread-cache.js";

/** The outcome of re-rendering a past model call and checking it against what was sent. */
export interface ReplayResult {
  /** True when the re-rendered request has the hash recorded for the call. */
  readonly ok: boolean;
  readonly callId: string;
  readonly threadId: string;
  readonly format: string;
  readonly planVersion: number;
  readonly logSeq: number;
  readonly expectedHash: string;
  /** Hash of the re-rendered request (absent when it could not be rendered at all). */
  readonly actualHash?: string;
  /** The re-rendered provider request. */
  readonly request?: ProviderRequestMap[ProviderFormat];
  readonly prompt?: RenderedPrompt;
  /** Why the replay does not match, in one sentence. */
  readonly mismatch?: string;
  /** Every problem found (each tampered message, a missing plan version, provider rule violations). */
  readonly problems: ReadonlyArray<string>;
  /**
   * The call's audit record as stored: what the plan cleared, summarized (and by which summarizer and prompt),
   * externalized and dropped, and what the turn brought back or left out.
   */
  readonly record?: ModelCallRecord;
  /**
   * The ledger check (docs/decisions/0018): the thread's log and plan chains up to the call's seq and plan version,
   * and the heads the call recorded. Its findings are among `problems`, each naming the thread and the row.
   */
  readonly ledger?: LedgerVerdict;
}

const FORMATS: ReadonlyArray<string> = ["openai", "responses", "anthropic"];

/**
 * Re-renders a recorded call from the stored log (up to the call's log seq) and plan version, always from the
 * stores (never the in-process cache), and compares the request hash with the recorded one. A message whose
 * content no longer matches the hash stored with it, a shortened log, a missing plan version or a renderer
 * whose format version changed all come back as a mismatch with the reason; an unknown call id throws
 * `NotFoundError`.
 */
export function replayCall(core: EngineCore, callId: string): Promise<ReplayResult> {
  return observed(core, "replay", "", async () => {
    const record = await core.stores.calls.get(callId);
    if (record === undefined) {
      throw new NotFoundError(`model call ${JSON.stringify(callId)} was never recorded`, { field: "callId" });
    }
    await checkThreadAccess(core, record.threadId, "replay");
    const result = await replayRecord(core, record);
    core.events.emit("replayed", record.threadId, {
      callId,
      ok: result.ok,
      ...(result.mismatch === undefined ? {} : { mismatch: result.mismatch }),
    });
    return result;
  });
}

/** Where a replay reads the stored log and plans: per call from the stores, or shared by a thread's replays. */
interface ReplaySource {
  /** The stored log up to the call's seq and the thread's chains checked up to its position, from one read. */
  rows(record: ModelCallRecord): Promise<{ readonly log: StoredLog; readonly chains: ThreadChains }>;
  plan(threadId: string, version: number): Promise<CompactionPlan>;
}

/** The stored log up to a call's seq, or why there is none, and every sign of tampering found on the way. */
interface StoredLog {
  readonly log?: ThreadLog;
  readonly problems: ReadonlyArray<string>;
  /** Seqs of the messages a problem already names (the ledger's findings about them are not repeated). */
  readonly named?: ReadonlySet<number>;
}

/** Reads everything per call. */
function storeSource(core: EngineCore): ReplaySource {
  return {
    rows: async (record) => {
      const { entries, chains } = await readAudited(core, record.threadId, record.logSeq, record.planVersion);
      return { log: storedLog(record, entries), chains };
    },
    plan: (threadId, version) => core.stores.plans.get(threadId, version),
  };
}

/**
 * Replays every recorded call of a thread, in call order, reading the stored log once (each call renders its
 * prefix, built up as the calls go) and each plan version once: a thread of hundreds of calls costs one read of
 * its log rather than one per call. Each result is what `replay` returns for that call.
 */
export async function* replayThreadCalls(core: EngineCore, threadId: string): AsyncGenerator<ReplayResult> {
  await checkThreadAccess(core, threadId, "replay");
  const records = await core.stores.calls.list(threadId);
  const upTo = records.reduce((most, r) => Math.max(most, r.logSeq), 0);
  const planUpTo = records.reduce((most, r) => Math.max(most, r.planVersion), 0);
  const shared = sharedSource(core, threadId, upTo, planUpTo);
  for (const record of records) {
    const result = await replayRecord(core, record, shared);
    core.events.emit("replayed", record.threadId, {
      callId: record.callId,
      ok: result.ok,
      ...(result.mismatch === undefined ? {} : { mismatch: result.mismatch }),
    });
    yield result;
  }
}

/** A source that reads the thread's stored log once (up to `upTo`) and each plan version once. */
function sharedSource(core: EngineCore, threadId: string, upTo: number, planUpTo: number): ReplaySource {
  const plans = new Map<number, Promise<CompactionPlan>>();
  let whole: Promise<{ log: WholeLog; chains: ThreadChains }> | undefined;
  return {
    rows: async (record) => {
      whole ??= readAudited(core, threadId, upTo, planUpTo).then(({ entries, chains }) => ({
        log: wholeLog(threadId, entries),
        chains,
      }));
      const { log, chains } = await whole;
      return { log: log.at(record.logSeq), chains };
    },
    plan: (id, version) => {
      let plan = plans.get(version);
      if (plan === undefined) {
        plan = core.stores.plans.get(id, version);
        plans.set(version, plan);
      }
      return plan;
    },
  };
}

/** A thread's stored log read once, handing out the prefix each call saw. */
interface WholeLog {
  at(logSeq: number): StoredLog;
}

function wholeLog(threadId: string, entries: ReadonlyArray<StoredMessage>): WholeLog {
  const problemSeqs: Array<readonly [number, string]> = [];
  // Prefixes are built in order of length, each extending the last (log values are persistent).
  const prefixes = new Map<number, StoredLog>();
  let log = ThreadLog.empty(threadId);
  let broken: string | undefined;
  const prefix = (logSeq: number): StoredLog => {
    if (entries.length < logSeq) {
      return { problems: [`the log holds ${entries.length} of the ${logSeq} messages the call saw`] };
    }
    if (broken === undefined && log.length < logSeq) {
      const from = log.length;
      try {
        log = log.append(entries.slice(from, logSeq).map((e) => inputOf(e.message)));
      } catch (error) {
        broken = `the stored log is no longer a valid log: ${messageOf(error)}`;
      }
      if (broken === undefined) {
        for (let seq = from; seq < logSeq; seq++) {
          for (const problem of tampering(entries[seq]!.message, seq, log)) problemSeqs.push([seq, problem]);
        }
      }
    }
    if (broken !== undefined && log.length < logSeq) return { problems: [broken] };
    const mine = problemSeqs.filter(([seq]) => seq < logSeq);
    const problems = mine.map(([, p]) => p);
    const named = new Set(mine.map(([seq]) => seq));
    // A shorter prefix than the longest built so far: the same log value cut is not at hand, so build it.
    const value =
      log.length === logSeq
        ? log
        : ThreadLog.empty(threadId).append(entries.slice(0, logSeq).map((e) => inputOf(e.message)));
    return { log: value, problems, named };
  };
  return {
    at(logSeq) {
      let stored = prefixes.get(logSeq);
      if (stored === undefined) {
        stored = prefix(logSeq);
        prefixes.clear(); // calls come in log order: only the latest prefix is asked again
        prefixes.set(logSeq, stored);
      }
      return stored;
    },
  };
}

async function replayRecord(
  core: EngineCore,
  record: ModelCallRecord,
  source: ReplaySource = storeSource(core),
): Promise<ReplayResult> {
  const base: Omit<ReplayResult, "ok" | "problems"> & { ledger?: LedgerVerdict } = {
    callId: record.callId,
    threadId: record.threadId,
    format: record.format,
    planVersion: record.planVersion,
    logSeq: record.logSeq,
    expectedHash: record.requestHash,
    record,
  };
  const fail = (mismatch: string, problems: ReadonlyArray<string>): ReplayResult => ({
    ...base,
    ok: false,
    mismatch,
    problems: problems.length === 0 ? [mismatch] : problems,
  });
  if (!FORMATS.includes(record.format))
    return fail(`unknown request format ${JSON.stringify(record.format)}`, []);
  const { log: read, chains } = await source.rows(record);
  const ledger = judgeCall(core, record, chains);
  // A message the content-hash check names already is not named twice; every other finding is a problem.
  const chainProblems = ledger.findings
    .filter((f) => f.chain !== "log" || read.named?.has(f.position) !== true)
    .map((f) => f.text);
  const stored: StoredLog = { ...read, problems: [...read.problems, ...chainProblems] };
  base.ledger = ledger;
  if (stored.log === undefined) return fail(stored.problems[0]!, stored.problems);
  let plan: CompactionPlan;
  try {
    plan = await source.plan(record.threadId, record.planVersion);
  } catch (error) {
    return fail(`plan version ${record.planVersion} cannot be read: ${messageOf(error)}`, stored.problems);
  }
  const inputs = await loadTurnInputs(core.stores.artifacts, {
    tenant: core.settings.tenant,
    callId: record.callId,
  });
  let prompt: RenderedPrompt;
  // As the call's reader saw it: content above the clearance it was recorded for held back as stubs.
  const log = stored.log;
  const asRecorded = (formatVersion?: RenderFormatVersion) =>
    recordedView(
      core,
      log,
      record,
      renderPrompt(log, plan, {
        counter: core.counter,
        ...inputs,
        ...(formatVersion === undefined ? {} : { formatVersion }),
      }),
      formatVersion,
    );
  try {
    prompt = asRecorded();
    // A call recorded under an earlier render format (its texts changed since) renders in that format.
    for (const formatVersion of RENDER_FORMAT_VERSIONS.slice(1)) {
      if (prompt.hash === record.requestHash || stored.problems.length > 0) break;
      const earlier = asRecorded(formatVersion);
      if (earlier.hash === record.requestHash) prompt = earlier;
    }
  } catch (error) {
    return fail(`the stored log and plan no longer render: ${messageOf(error)}`, stored.problems);
  }
  refuseAboveReader(core, log, record, prompt);
  const format = record.format as ProviderFormat;
  const request = toProviderRequest(format, prompt);
  const problems = [
    ...stored.problems,
    ...validateProviderRequest(format, request).map((p) => `${format}: ${p}`),
  ];
  const rendered = { ...base, actualHash: prompt.hash, request, prompt };
  if (prompt.hash === record.requestHash) {
    // The request still hashes the same (e.g. the edited message was evicted), but the log was changed.
    if (problems.length === 0) return { ...rendered, ok: true, problems };
    return { ...rendered, ok: false, mismatch: `the request hash matches, but ${problems[0]}`, problems };
  }
  const mismatch =
    stored.problems.length > 0
      ? `request hash differs: ${stored.problems[0]}`
      : `request hash differs although every stored message matches its stored hash: the renderer (format version now ${RENDER_FORMAT_VERSION}) or the call's turn inputs changed since the call`;
  return { ...rendered, ok: false, mismatch, problems: problems.length === 0 ? [mismatch] : problems };
}

/** A re-rendered call as its reader got it: content above the recorded clearance as stubs. */
function recordedView(
  core: EngineCore,
  log: ThreadLog,
  record: ModelCallRecord,
  prompt: RenderedPrompt,
  formatVersion: RenderFormatVersion | undefined,
): RenderedPrompt {
  const clearance = record.clearance ?? "restricted";
  const reader = { clearance, policy: "placeholder" } as const;
  const what = `replay of call ${JSON.stringify(record.callId)}`;
  return withholdAboveClearance(prompt, log, reader, {
    counter: core.counter,
    what,
    ...(formatVersion === undefined ? {} : { formatVersion }),
  });
}

/**
 * Refuses the replay when the request the call sent carries content above this engine's clearance (a call made
 * for a reader of higher clearance): a replay hands the request out, so it must not show more than a render
 * would. Content the call itself sent as stubs does not count.
 */
function refuseAboveReader(
  core: EngineCore,
  log: ThreadLog,
  record: ModelCallRecord,
  prompt: RenderedPrompt,
): void {
  const recorded = record.clearance ?? "restricted";
  const shown = aboveClearance(prompt, log, core.settings.clearance).filter((m) =>
    mayRead(m.sensitivity, recorded),
  );
  if (shown.length === 0) return;
  const first = shown[0]!;
  throw new ClearanceError(
    `replay of call ${JSON.stringify(record.callId)} refused: it was made for a reader with clearance ${recorded} and its request carries ${first.sensitivity} content, above this engine's clearance ${core.settings.clearance}; replay it with an engine (or CLI --clearance) of clearance ${first.sensitivity} or higher`,
    { threadId: record.threadId },
  );
}

/** The stored log up to the call's seq (`entries`, as read), with every sign of tampering found on the way. */
function storedLog(record: ModelCallRecord, entries: ReadonlyArray<StoredMessage>): StoredLog {
  if (entries.length < record.logSeq) {
    return { problems: [`the log holds ${entries.length} of the ${record.logSeq} messages the call saw`] };
  }
  let log: ThreadLog;
  try {
    log = ThreadLog.empty(record.threadId).append(entries.map((e) => inputOf(e.message)));
  } catch (error) {
    return { problems: [`the stored log is no longer a valid log: ${messageOf(error)}`] };
  }
  const problems: string[] = [];
  const named = new Set<number>();
  entries.forEach((entry, seq) => {
    const found = tampering(entry.message, seq, log);
    if (found.length > 0) named.add(seq);
    problems.push(...found);
  });
  return { log, problems, named };
}

/** What is wrong with a stored message against the log rebuilt from the stored ones (nothing, mostly). */
function tampering(message: Message, seq: number, log: ThreadLog): string[] {
  const problems: string[] = [];
  if (message.seq !== seq)
    problems.push(
      `message ${JSON.stringify(message.id)} of thread ${JSON.stringify(log.threadId)} is stored at seq ${seq} but says seq ${message.seq}: rows were moved, inserted or deleted`,
    );
  if (log.at(seq)!.hash !== message.hash) {
    problems.push(
      `message ${JSON.stringify(message.id)} (seq ${seq}) no longer matches the content hash stored with it: it was changed after it was appended (thread ${JSON.stringify(log.threadId)})`,
    );
  }
  return problems;
}

function messageOf(error: unknown): string {
  return error instanceof LedgerError || error instanceof Error ? error.message : String(error);
}
