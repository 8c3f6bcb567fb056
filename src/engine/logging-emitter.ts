import type { EngineEvent, EngineEventMap, EngineEventType, EngineListener } from "./engine-events.js";

/** Options of {@link createLoggingEmitter}. */
export interface LoggingEmitterOptions {
  /** `text` (default): one readable line per event; `json`: the event as one JSON line. */
  readonly format?: "text" | "json";
  /** Event types to leave out (e.g. the chatty `proposal`). */
  readonly exclude?: ReadonlyArray<EngineEventType>;
}

type Describe<K extends EngineEventType> = (event: EngineEventMap[K]) => string;

const ms = (n: number): string => `${n.toFixed(1)}ms`;

/** One describer per event type, so a new event type does not compile until it can be logged. */
const DESCRIBE: { readonly [K in EngineEventType]: Describe<K> } = {
  appended: (e) => `appended ${e.messages} message(s), log length ${e.logSeq} (${ms(e.durationMs)})`,
  loaded: (e) => `loaded ${e.source}: ${e.messages} message(s), plan v${e.planVersion} (${ms(e.durationMs)})`,
  check_started: (e) =>
    `${e.operation}: check at log ${e.logSeq}, plan v${e.planVersion}, target ${e.target}` +
    (e.calibrationRatio === 1 ? "" : `, calibration ×${e.calibrationRatio.toFixed(3)}`),
  proposal: (e) =>
    `${e.operation}: ${e.strategy} (${e.cost}) ${e.outcome}, ${e.actions} action(s), ${e.tokensBefore} → ${e.tokensAfter} tokens` +
    (e.detail === undefined ? "" : ` — ${e.detail}`),
  cleared: (e) => actionLine("cleared", e),
  summarized: (e) => actionLine("summarized", e),
  externalized: (e) => actionLine("externalized", e),
  dropped: (e) => actionLine("dropped", e),
  rehydrated: (e) =>
    `rehydrated artifact ${e.artifactId} (${e.chars} chars${e.truncated === true ? ", cut" : ""}${e.detected === true ? ", referred to" : ""})`,
  rehydration_blocked: (e) => `did not rehydrate artifact ${e.artifactId}: ${e.reason}`,
  recalled: (e) =>
    (e.artifactId === undefined
      ? `recalled ${e.matches ?? 0} message(s) for query ${JSON.stringify(e.query ?? "")}`
      : `recalled artifact ${e.artifactId}`) +
    ` (${e.chars} chars${e.truncated ? ", truncated" : ""}, ${ms(e.durationMs)})`,
  committed: (e) =>
    `${e.operation}: committed plan v${e.planVersion} at log ${e.basedOnSeq}, ${e.tokensBefore} → ${e.tokensAfter} tokens (freed ${e.tokensFreed})`,
  version_conflict: (e) =>
    `${e.operation}: ${e.store} version conflict (expected ${e.expected}, store has ${e.actual}), attempt ${e.attempt}`,
  conflict_retry: (e) => `${e.operation}: attempt ${e.attempt} lost a race, retrying in ${ms(e.delayMs)}`,
  background_scheduled: (e) =>
    `background summarization queued on plan v${e.basedOnVersion} (to replace v${e.replacesVersion})`,
  background_discarded: (e) => `background run discarded: ${e.reason}`,
  job_queued: (e) =>
    `queued job ${e.key} (${e.runner}) from plan v${e.basedOnVersion} for v${e.replacesVersion}`,
  job_started: (e) => `started job ${e.key} (${e.runner}), attempt ${e.attempt}/${e.attempts}`,
  job_committed: (e) => `job ${e.key} committed plan v${e.planVersion} (${ms(e.durationMs)})`,
  job_discarded: (e) => `job ${e.key} discarded: ${e.reason} (${ms(e.durationMs)})`,
  job_failed: (e) =>
    `job ${e.key} attempt ${e.attempt}/${e.attempts} failed${e.final ? " for good" : ", to be retried"}: ${e.message}`,
  job_queue_depth: (e) => `jobs (${e.runner}): ${e.queued} queued, ${e.running} running, ${e.failed} failed`,
  rendered: (e) =>
    `rendered ${e.format}: ${e.messages} message(s), ${e.tokens} tokens, hash ${e.hash.slice(0, 12)}`,
  call_recorded: (e) =>
    `recorded call ${e.callId}: plan v${e.planVersion}, log ${e.logSeq}, estimate ${e.tokenEstimate}`,
  completed: (e) =>
    `${e.operation} done in ${ms(e.durationMs)}` +
    (e.tokens === undefined ? "" : `, ${e.tokens} tokens`) +
    (e.compacted === true ? ", compacted" : ""),
  usage_recorded: (e) =>
    `usage of ${e.callId}: ${e.inputTokens} input tokens vs estimate ${e.tokenEstimate}, ratio now ${e.ratio.toFixed(3)}`,
  replayed: (e) => `replay of ${e.callId}: ${e.ok ? "ok" : `MISMATCH — ${e.mismatch ?? "hash differs"}`}`,
  error: (e) => `${e.operation} failed [${e.code}]: ${e.message}`,
};

function actionLine(verb: string, e: EngineEventMap["cleared"]): string {
  return `${e.operation}: ${verb} ${e.messages} message(s) from ${e.firstId} by ${e.strategy} — ${e.reason}`;
}

function describe(event: EngineEvent): string {
  const line = (DESCRIBE[event.type] as Describe<EngineEventType>)(event as never);
  const call = event.callNumber === undefined ? "" : ` call=${event.callNumber}`;
  return `[context-ledger] ${new Date(event.at).toISOString()} thread=${JSON.stringify(event.threadId)}${call} ${line}`;
}

/**
 * A listener that writes one line per engine event (readable text or JSON) through `write`, e.g.
 * `createLoggingEmitter((line) => process.stderr.write(line + "\n"))`.
 */
export function createLoggingEmitter(
  write: (line: string) => void = (line) => console.log(line),
  options: LoggingEmitterOptions = {},
): EngineListener {
  const excluded = new Set(options.exclude ?? []);
  const json = options.format === "json";
  return (event) => {
    if (excluded.has(event.type)) return;
    write(json ? JSON.stringify(event) : describe(event));
  };
}
