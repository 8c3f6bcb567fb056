import { logGenesis, planGenesis } from "../ledger/ledger-chain.js";
import { type ChainCheck, type ChainFinding, checkLogChain, checkPlanChain } from "../ledger/verify-chain.js";
import { oneReadOf, type StoredMessage } from "../stores/log-store.js";
import type { ModelCallRecord } from "../stores/model-call-store.js";
import type { EngineCore } from "./engine-core.js";

/**
 * The chain heads a call record keeps (docs/decisions/0018): the log chain's after the `logSeq` rows the request
 * was rendered from and the plan chain's at its plan version, read from the stores (one row each). A store without
 * a ledger, or a thread whose rows predate it, gives no head.
 */
export async function chainHeads(
  core: EngineCore,
  threadId: string,
  logSeq: number,
  planVersion: number,
): Promise<{ logHead?: string; planHead?: string }> {
  const { log, plans } = core.stores;
  const key = core.settings.ledgerKey;
  const [logHead, planHead] = await Promise.all([
    log.chainHead === undefined
      ? undefined
      : logSeq === 0
        ? logGenesis(threadId, key)
        : log.chainHead(threadId, logSeq),
    plans.chainHead === undefined
      ? undefined
      : planVersion === 0
        ? planGenesis(threadId, key)
        : plans.chainHead(threadId, planVersion),
  ]);
  return {
    ...(logHead === undefined ? {} : { logHead }),
    ...(planHead === undefined ? {} : { planHead }),
  };
}

/** What the ledger check of one call found. */
export interface LedgerVerdict {
  /** False when the stores keep no ledger (nothing could be checked). */
  readonly checked: boolean;
  /** Whether the chains were verified with a ledger key. */
  readonly keyed: boolean;
  /** The log chain's head after the call's rows, recomputed from their stored content. */
  readonly logHead?: string;
  /** The plan chain's head at the call's plan version, recomputed from the stored versions. */
  readonly planHead?: string;
  /** Rows and versions below the call's position written before the ledger and never chained since. */
  readonly unchained: number;
  /** Each finding, naming the thread and the row (seq and message id, or plan version). */
  readonly findings: ReadonlyArray<ChainFinding & { readonly chain: "log" | "plan" }>;
}

/** Checks of a thread's chains, read once and shared by the calls replayed against them. */
export interface ThreadChains {
  readonly log?: ChainCheck;
  readonly plan?: ChainCheck;
}

/** A thread's stored log rows up to a length, as an audit reads them, and its chains checked up to there. */
export interface AuditedRows {
  /** The messages with seq below the length, as `LogStore.read` gives them. */
  readonly entries: ReadonlyArray<StoredMessage>;
  readonly chains: ThreadChains;
}

/**
 * Reads a thread's log rows below `logSeq` and its plan versions up to `planVersion`, and checks both chains. A
 * log store with `readWithChain` is read once, the messages and the chain from one scan, each body parsed once;
 * another (or one whose `read` or `chainRows` a wrapper replaced: `oneReadOf`) is read twice (`read`, then
 * `chainRows` when it keeps a chain), with the same outcome.
 */
export async function readAudited(
  core: EngineCore,
  threadId: string,
  logSeq: number,
  planVersion: number,
): Promise<AuditedRows> {
  const { log, plans } = core.stores;
  const key = core.settings.ledgerKey;
  const oneRead = oneReadOf(log);
  if (oneRead !== undefined) {
    // Read side by side; a log that does not read is the error, as when it was read first.
    const [logRead, planRead] = await Promise.allSettled([
      oneRead.call(log, threadId, logSeq),
      plans.chainRows?.(threadId, planVersion),
    ]);
    if (logRead.status === "rejected") throw logRead.reason;
    if (planRead.status === "rejected") throw planRead.reason;
    const [read, planRows] = [logRead.value, planRead.value];
    // The bodies were parsed to give the messages: the walk takes the seq each says from them.
    const bodySeqs = read.entries.map((e) => e.message.seq);
    return {
      entries: read.entries,
      chains: {
        log: checkLogChain(threadId, read.chain, key, { bodySeqs }),
        ...(planRows === undefined ? {} : { plan: checkPlanChain(threadId, planRows, key) }),
      },
    };
  }
  const entries = await log.read(threadId, 0, logSeq);
  const [logRows, planRows] = await Promise.all([
    log.chainRows?.(threadId, logSeq),
    plans.chainRows?.(threadId, planVersion),
  ]);
  return {
    entries,
    chains: {
      ...(logRows === undefined ? {} : { log: checkLogChain(threadId, logRows, key) }),
      ...(planRows === undefined ? {} : { plan: checkPlanChain(threadId, planRows, key) }),
    },
  };
}

/**
 * Judges one call against its thread's checked chains: the findings below its position, the heads it recorded
 * against the heads recomputed there (which catches a chain recomputed from some row on, the rows after it
 * included), and, with a ledger key, rows left unchained (a keyed ledger accepts no row it cannot verify).
 */
export function judgeCall(core: EngineCore, record: ModelCallRecord, chains: ThreadChains): LedgerVerdict {
  const keyed = core.settings.ledgerKey !== undefined;
  if (chains.log === undefined && chains.plan === undefined) {
    return { checked: false, keyed, unchained: 0, findings: [] };
  }
  const findings: Array<ChainFinding & { chain: "log" | "plan" }> = [];
  const thread = JSON.stringify(record.threadId);
  const call = JSON.stringify(record.callId);
  let unchained = 0;
  let logHead: string | undefined;
  let planHead: string | undefined;
  if (chains.log !== undefined) {
    const mine = chains.log.findings.filter((f) => f.position < record.logSeq);
    findings.push(...mine.map((f) => ({ ...f, chain: "log" as const })));
    logHead = chains.log.heads[record.logSeq];
    unchained += Math.min(chains.log.unchained, record.logSeq);
    if (
      mine.length === 0 &&
      record.logHead !== undefined &&
      logHead !== undefined &&
      logHead !== record.logHead
    ) {
      findings.push({
        chain: "log",
        position: Math.max(0, record.logSeq - 1),
        text: `thread ${thread}: the log chain head after seq ${record.logSeq - 1} is not the one call ${call} recorded: rows up to it were rewritten and their chain hashes recomputed${keyed ? " (or the ledger key is not the one they were written with)" : ""}`,
      });
    }
  }
  if (chains.plan !== undefined) {
    const mine = chains.plan.findings.filter((f) => f.position <= record.planVersion);
    findings.push(...mine.map((f) => ({ ...f, chain: "plan" as const })));
    planHead = chains.plan.heads[record.planVersion];
    unchained += Math.min(chains.plan.unchained, record.planVersion);
    if (
      mine.length === 0 &&
      record.planHead !== undefined &&
      planHead !== undefined &&
      planHead !== record.planHead
    ) {
      findings.push({
        chain: "plan",
        position: record.planVersion,
        text: `thread ${thread}: the plan chain head at version ${record.planVersion} is not the one call ${call} recorded: versions up to it were rewritten and their chain hashes recomputed${keyed ? " (or the ledger key is not the one they were written with)" : ""}`,
      });
    }
  }
  if (keyed && unchained > 0 && findings.length === 0) {
    findings.push({
      chain: "log",
      position: 0,
      text: `thread ${thread}: ${unchained} rows the call saw have no chain hash (written before the ledger, or their hashes were removed); a ledger key accepts only chained rows: append to or compact the thread once to chain them`,
    });
  }
  return {
    checked: true,
    keyed,
    ...(logHead === undefined ? {} : { logHead }),
    ...(planHead === undefined ? {} : { planHead }),
    unchained,
    findings,
  };
}
