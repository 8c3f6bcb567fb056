import type { ActionKind, CompactionPlan } from "./compaction-plan.js";
import { type Decision, resolvePlan } from "./resolve-plan.js";

/** The state of one message under one plan. */
export interface MessageState {
  readonly kind: ActionKind;
  /** Strategy and reason of the governing action; absent when the message is included by default. */
  readonly strategy?: string;
  readonly reason?: string;
}

/** One message whose treatment differs between two plans. */
export interface MessageChange {
  readonly messageId: string;
  /** The message's position in the log, when `diffPlans` was given an `order`. */
  readonly position?: number;
  readonly from: MessageState;
  readonly to: MessageState;
  /** The message's own tokens, when the caller counted them (the engine's `diff` does). */
  readonly tokens?: number;
}

/** The difference between two plan versions of a thread. */
export interface PlanDiff {
  readonly threadId: string;
  readonly fromVersion: number;
  readonly toVersion: number;
  /** In log order when `order` is given to `diffPlans`, otherwise in order of first mention. */
  readonly changes: ReadonlyArray<MessageChange>;
}

function stateOf(decision: Decision | undefined): MessageState {
  if (decision === undefined) return { kind: "include" };
  return { kind: decision.kind, strategy: decision.action.strategy, reason: decision.action.reason };
}

const actionKeys = new WeakMap<object, string>();

/** What a decision means for its message, without the span (spans of equal actions may differ in length). */
function actionKey(decision: Decision): string {
  let key = actionKeys.get(decision.action);
  if (key === undefined) {
    const { kind, strategy, reason, record } = decision.action;
    key = JSON.stringify([kind, strategy, reason, record]);
    actionKeys.set(decision.action, key);
  }
  return key;
}

function sameState(a: Decision | undefined, b: Decision | undefined): boolean {
  // An explicit include and the default include send the same thing: not a change worth an audit line.
  if ((a?.kind ?? "include") === "include" && (b?.kind ?? "include") === "include") return true;
  if (a === undefined || b === undefined) return false;
  return a.action === b.action || actionKey(a) === actionKey(b);
}

/**
 * Lists, per message, what changed between plans `a` and `b`: the action kind and the strategy and reason behind
 * each side. `order` (e.g. `id => log.seqOf(id)`) sorts the changes by log position.
 */
export function diffPlans(
  a: CompactionPlan,
  b: CompactionPlan,
  order?: (messageId: string) => number | undefined,
): PlanDiff {
  const ra = resolvePlan(a);
  const rb = resolvePlan(b);
  const ids = new Set([...ra.decisions.keys(), ...rb.decisions.keys()]);
  const changes: MessageChange[] = [];
  for (const messageId of ids) {
    const da = ra.decisions.get(messageId);
    const db = rb.decisions.get(messageId);
    if (sameState(da, db)) continue;
    const position = order?.(messageId);
    changes.push({
      messageId,
      ...(position === undefined ? {} : { position }),
      from: stateOf(da),
      to: stateOf(db),
    });
  }
  if (order !== undefined) {
    changes.sort(
      (x, y) =>
        (order(x.messageId) ?? Number.MAX_SAFE_INTEGER) - (order(y.messageId) ?? Number.MAX_SAFE_INTEGER),
    );
  }
  return { threadId: b.threadId, fromVersion: a.version, toVersion: b.version, changes };
}

function describe(state: MessageState): string {
  return state.strategy === undefined ? "default" : `${state.strategy}: ${state.reason}`;
}

/** Whether `b` continues a run ending in `a`: the same change, on the next message of the log. */
function continuesRun(a: MessageChange, b: MessageChange): boolean {
  if (a.position === undefined || b.position === undefined || b.position !== a.position + 1) return false;
  return JSON.stringify([a.from, a.to]) === JSON.stringify([b.from, b.to]);
}

/**
 * A readable rendering of a plan diff for audits: one line per run of messages that are consecutive in the log
 * (positions from `diffPlans`'s `order`) and changed the same way, with the action before and after and the
 * strategy and reason behind each side.
 */
export function formatPlanDiff(diff: PlanDiff): string {
  const head = `plan diff for thread ${diff.threadId}: v${diff.fromVersion} → v${diff.toVersion}, ${diff.changes.length} message(s) changed`;
  if (diff.changes.length === 0) return `${head}\n  (no changes)`;
  const runs: MessageChange[][] = [];
  for (const change of diff.changes) {
    const run = runs[runs.length - 1];
    if (run !== undefined && continuesRun(run[run.length - 1]!, change)) run.push(change);
    else runs.push([change]);
  }
  const labels = runs.map((run) =>
    run.length === 1
      ? run[0]!.messageId
      : `${run[0]!.messageId} … ${run[run.length - 1]!.messageId} (${run.length})`,
  );
  const width = Math.max(...labels.map((l) => l.length));
  const counted = diff.changes.every((c) => c.tokens !== undefined);
  const sizes = runs.map((run) => (counted ? `${run.reduce((n, c) => n + c.tokens!, 0)} tokens` : ""));
  const sizeWidth = Math.max(...sizes.map((t) => t.length));
  const lines = runs.map((run, i) => {
    const { from, to } = run[0]!;
    const arrow = `${from.kind} → ${to.kind}`.padEnd(24);
    const size = counted ? `${sizes[i]!.padStart(sizeWidth)}  ` : "";
    return `  ${labels[i]!.padEnd(width)}  ${size}${arrow} now: ${describe(to)}${from.strategy === undefined ? "" : `; was: ${describe(from)}`}`;
  });
  return [head, ...lines].join("\n");
}
