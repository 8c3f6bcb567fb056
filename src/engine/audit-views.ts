import { ValidationError } from "../errors/ledger-error.js";
import { ThreadLog } from "../log/thread-log.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import { diffPlans, formatPlanDiff, type PlanDiff } from "../plan/diff-plans.js";
import { describeFates, type FateCounts, finalStates } from "../plan/final-states.js";
import { type ProviderFormat, type ProviderRequestMap, toProviderRequest } from "../render/provider-rules.js";
import { type Injection, renderPrompt } from "../render/render-prompt.js";
import type { RenderedPrompt } from "../render/rendered-prompt.js";
import { observed, requireMessages } from "./compaction-steps.js";
import type { EngineCore } from "./engine-core.js";
import { type ExplainFilter, type Explanation, explainPlan } from "./explain.js";
import { readerView } from "./reader-view.js";
import { inputOf } from "./thread-cache.js";

/** Options of `render`. */
export interface RenderOptionsForThread<F extends ProviderFormat = ProviderFormat> {
  readonly format: F;
  /** Plan version to render (default: the latest). */
  readonly planVersion?: number;
  /** Render the log as it was at this length (default: the whole log). */
  readonly logSeq?: number;
  readonly injected?: ReadonlyArray<Injection | string>;
}

/** A committed plan rendered to a provider request. */
export interface RenderedThread<F extends ProviderFormat = ProviderFormat> {
  readonly request: ProviderRequestMap[F];
  readonly prompt: RenderedPrompt;
}

/** Two plan versions compared, as data and as readable text. */
export interface PlanDiffResult {
  readonly diff: PlanDiff;
  /** The diff, then a line with the messages per final state under each version (`explain`'s totals). */
  readonly text: string;
  /** Messages per final state under each version, on the whole log; each side adds up to its length. */
  readonly states: { readonly from: FateCounts; readonly to: FateCounts };
}

/** The log of a thread, whole (through the cache) or as it was at `logSeq` (from the store). */
/**
 * The log at `logSeq` messages (default: all) and the plan at `planVersion` (default: the latest). The whole log
 * comes with its plan from one load, so an audit of the current state reads the plan once.
 */
async function threadAt(
  core: EngineCore,
  threadId: string,
  logSeq: number | undefined,
  planVersion: number | undefined,
): Promise<{ readonly log: ThreadLog; readonly plan: CompactionPlan }> {
  if (logSeq === undefined) {
    // Audits read every message: never a checkpoint's projection.
    const state = await core.loader.whole(threadId);
    requireMessages(state, threadId);
    const plan =
      planVersion === undefined || planVersion === state.plan.version
        ? state.plan
        : await core.stores.plans.get(threadId, planVersion);
    return { log: state.log, plan };
  }
  const entries = await core.stores.log.read(threadId, 0, logSeq);
  if (entries.length < logSeq) {
    throw new ValidationError(`the log has only ${entries.length} messages, not ${logSeq}`, {
      threadId,
      field: "logSeq",
    });
  }
  const log = ThreadLog.empty(threadId).append(entries.map((e) => inputOf(e.message)));
  const plan =
    planVersion === undefined
      ? await core.stores.plans.latest(threadId)
      : await core.stores.plans.get(threadId, planVersion);
  return { log, plan };
}

/** Renders a committed plan version against the log (the CLI's `render --plan VERSION --format`). */
export function renderThread<F extends ProviderFormat>(
  core: EngineCore,
  threadId: string,
  options: RenderOptionsForThread<F>,
): Promise<RenderedThread<F>> {
  return observed(core, "render", threadId, async () => {
    const { log, plan } = await threadAt(core, threadId, options.logSeq, options.planVersion);
    const injections = (options.injected ?? []).map((i) => (typeof i === "string" ? { text: i } : i));
    const rendered = renderPrompt(log, plan, {
      counter: core.counter,
      injections,
      pendingCalls: core.pendingCalls,
    });
    const prompt = readerView(core, log, rendered, "render");
    return { request: toProviderRequest(options.format, prompt), prompt };
  });
}

/** Per message, what a plan version does with it (the CLI's `explain --plan VERSION`). */
export function explainThread(
  core: EngineCore,
  threadId: string,
  options: { readonly planVersion?: number } & ExplainFilter = {},
): Promise<Explanation> {
  return observed(core, "explain", threadId, async () => {
    const { planVersion, ...filter } = options;
    const { log, plan } = await threadAt(core, threadId, undefined, planVersion);
    const { clearance, aboveClearance: policy } = core.settings;
    return explainPlan(log, plan, core.counter, filter, { clearance, policy });
  });
}

/** What changed between two plan versions of a thread, in log order (the CLI's `diff FROM TO`). */
export function diffThread(
  core: EngineCore,
  threadId: string,
  fromVersion: number,
  toVersion: number,
): Promise<PlanDiffResult> {
  return observed(core, "diff", threadId, async () => {
    const [from, to, log] = await Promise.all([
      core.stores.plans.get(threadId, fromVersion),
      core.stores.plans.get(threadId, toVersion),
      // The state counts cover every message, as `explain`'s do: audits read the whole log (a thread with no
      // messages diffs as before, with zero counts, rather than failing).
      core.loader.whole(threadId).then((state) => state.log),
    ]);
    const plain = diffPlans(from, to, (id) => log.seqOf(id));
    // Each change with the message's own tokens: what the change moved in or out of the request.
    const changes = plain.changes.map((change) => {
      const seq = log.seqOf(change.messageId);
      const message = seq === undefined ? undefined : log.at(seq);
      return message === undefined
        ? change
        : { ...change, tokens: core.counter.countMessage(message, message.hash) };
    });
    const diff = { ...plain, changes };
    const states = { from: finalStates(log, from).counts, to: finalStates(log, to).counts };
    const footer = `  messages by state: v${from.version} ${describeFates(states.from)} → v${to.version} ${describeFates(states.to)} (${log.length} message(s))`;
    return { diff, text: `${formatPlanDiff(diff)}\n${footer}`, states };
  });
}
