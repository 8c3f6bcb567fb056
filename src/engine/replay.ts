import { LedgerError, NotFoundError } from "../errors/ledger-error.js";
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
import type { ModelCallRecord } from "../stores/model-call-store.js";
import { RENDER_FORMAT_VERSION, RENDER_FORMAT_VERSIONS } from "../texts/placeholders.js";
import { loadTurnInputs } from "./call-record.js";
import { observed } from "./compaction-steps.js";
import type { EngineCore } from "./engine-core.js";
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
    const result = await replayRecord(core, record);
    core.events.emit("replayed", record.threadId, {
      callId,
      ok: result.ok,
      ...(result.mismatch === undefined ? {} : { mismatch: result.mismatch }),
    });
    return result;
  });
}

async function replayRecord(core: EngineCore, record: ModelCallRecord): Promise<ReplayResult> {
  const base = {
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
  const stored = await storedLog(core, record);
  if (stored.log === undefined) return fail(stored.problems[0]!, stored.problems);
  let plan: CompactionPlan;
  try {
    plan = await core.stores.plans.get(record.threadId, record.planVersion);
  } catch (error) {
    return fail(`plan version ${record.planVersion} cannot be read: ${messageOf(error)}`, stored.problems);
  }
  const inputs = await loadTurnInputs(core.stores.artifacts, {
    tenant: core.settings.tenant,
    callId: record.callId,
  });
  let prompt: RenderedPrompt;
  try {
    prompt = renderPrompt(stored.log, plan, { counter: core.counter, ...inputs });
    // A call recorded under an earlier render format (its texts changed since) renders in that format.
    for (const formatVersion of RENDER_FORMAT_VERSIONS.slice(1)) {
      if (prompt.hash === record.requestHash || stored.problems.length > 0) break;
      const earlier = renderPrompt(stored.log, plan, { counter: core.counter, ...inputs, formatVersion });
      if (earlier.hash === record.requestHash) prompt = earlier;
    }
  } catch (error) {
    return fail(`the stored log and plan no longer render: ${messageOf(error)}`, stored.problems);
  }
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

/** The stored log up to the call's seq, with every sign of tampering found on the way. */
async function storedLog(
  core: EngineCore,
  record: ModelCallRecord,
): Promise<{ log?: ThreadLog; problems: ReadonlyArray<string> }> {
  const entries = await core.stores.log.read(record.threadId, 0, record.logSeq);
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
  entries.forEach((entry, seq) => {
    const message = entry.message;
    if (message.seq !== seq)
      problems.push(`message ${JSON.stringify(message.id)} is stored at seq ${seq} but says ${message.seq}`);
    if (log.at(seq)!.hash !== message.hash) {
      problems.push(
        `message ${JSON.stringify(message.id)} (seq ${seq}) no longer matches the content hash stored with it: it was changed after it was appended`,
      );
    }
  });
  return { log, problems };
}

function messageOf(error: unknown): string {
  return error instanceof LedgerError || error instanceof Error ? error.message : String(error);
}
