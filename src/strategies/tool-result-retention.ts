/**
 * The tool-result retention strategy: which tool results expired under their policy (see `tool-policy.ts`), and
 * the clear and drop actions that evict them.
 */
import type { Group } from "../log/groups.js";
import type { Message, ToolResultPart } from "../log/message.js";
import type { ThreadLog } from "../log/thread-log.js";
import type { ClearedItem, PlanAction } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog, type SeqResolution } from "../plan/resolve-for-log.js";
import { clearedArgsText, clearedResultText } from "../render/placeholders.js";
import { compactable } from "./group-accounting.js";
import { parseOptions } from "./options.js";
import { nothingToDo, type Proposal, type Strategy, type StrategyContext } from "./strategy.js";
import {
  type PolicyResolver,
  policyResolver,
  type ResolvedToolPolicy,
  type ToolResultRetentionOptions,
  toolResultRetentionOptionsSchema,
} from "./tool-policy.js";

export type { ResolvedToolPolicy, ToolPolicy, ToolResultRetentionOptions } from "./tool-policy.js";
export {
  DEFAULT_TOOL_POLICY,
  DURABILITY_POLICIES,
  toolPolicySchema,
  toolResultRetentionOptionsSchema,
} from "./tool-policy.js";

/** Tool results by tool-message seq. */
type ResultIndex = ReadonlyMap<number, ReadonlyArray<ResultRef>>;

/** One tool result of the log with what the policy says about it. */
interface ResultRef {
  readonly seq: number;
  readonly part: ToolResultPart;
  /** Seq of the assistant message holding the call. */
  readonly callSeq: number;
  readonly toolName: string;
  readonly policy: ResolvedToolPolicy;
  expired: boolean;
}

function toolNameOf(call: Message, callId: string): string {
  for (const p of call.parts) if (p.type === "tool_call" && p.callId === callId) return p.name;
  return "tool";
}

/** Every tool result of the log by tool-message seq, with its policy and whether it has expired. */
function collectResults(log: ThreadLog, policyOf: PolicyResolver): Map<number, ResultRef[]> {
  const bySeq = new Map<number, ResultRef[]>();
  const all: ResultRef[] = [];
  const turns = log.turns;
  const turnOf = new Int32Array(log.length);
  for (const t of turns) turnOf.fill(t.index, t.startSeq, t.endSeq);
  for (let seq = 0; seq < log.length; seq++) {
    const message = log.at(seq)!;
    if (message.role !== "tool") continue;
    const callSeqs = log.callSeqsOfParts(seq);
    const refs: ResultRef[] = [];
    message.parts.forEach((part, i) => {
      if (part.type !== "tool_result") return;
      const call = log.at(callSeqs[i]!)!;
      const toolName = toolNameOf(call, part.callId);
      const policy = policyOf(toolName, message.meta.durability ?? call.meta.durability);
      refs.push({ seq, part, callSeq: call.seq, toolName, policy, expired: false });
    });
    bySeq.set(seq, refs);
    all.push(...refs);
  }
  // Count ranks newest first: the last N results of a tool are ranks 0..N-1.
  const seen = new Map<string, number>();
  const lastTurn = turns.length - 1;
  for (let i = all.length - 1; i >= 0; i--) {
    const ref = all[i]!;
    const rank = seen.get(ref.toolName) ?? 0;
    seen.set(ref.toolName, rank + 1);
    const age = lastTurn - turnOf[ref.seq]!;
    ref.expired = !ref.policy.neverEvict && (age >= ref.policy.keepTurns || rank >= ref.policy.keepLast);
  }
  return bySeq;
}

/**
 * True when the plan does nothing to the group but clear (or include) messages. Clearing more of such a group
 * conflicts with no earlier decision, and lets parallel results that expire at different times be cleared one by
 * one; summaries, pointers and drops are left alone.
 */
function onlyCleared(group: Group, resolution: SeqResolution): boolean {
  for (const seq of group.seqs) {
    const kind = decisionAt(resolution, seq)?.kind;
    if (kind !== undefined && kind !== "include" && kind !== "clear") return false;
  }
  return true;
}

function undecided(resolution: SeqResolution, seq: number): boolean {
  const kind = decisionAt(resolution, seq)?.kind;
  return kind === undefined || kind === "include";
}

/** Result characters reach every policy's `minChars` (and, for a clear, exceed the stubs replacing them). */
function worthIt(refs: ReadonlyArray<ResultRef>, stubbed: boolean): boolean {
  let chars = 0;
  let need = 0;
  let stubs = 0;
  for (const r of refs) {
    chars += r.part.content.length;
    need = Math.max(need, r.policy.minChars);
    if (stubbed) stubs += clearedResultText(r.toolName, r.part.content.length).length;
  }
  return stubbed ? chars >= need && chars > stubs : chars >= need;
}

/** Seqs a proposal stubs, by the `clearArgs` value of their action, and the groups it drops whole. */
interface Collected {
  readonly clear: Map<boolean, number[]>;
  readonly drop: Group[];
}

function planGroup(
  log: ThreadLog,
  group: Group,
  res: SeqResolution,
  bySeq: ResultIndex,
  out: Collected,
): void {
  const refs = group.seqs.flatMap((seq) => bySeq.get(seq) ?? []);
  if (refs.length === 0) return;
  if (refs.every((r) => r.expired && r.policy.mode === "hard") && worthIt(refs, false)) {
    out.drop.push(group);
    return;
  }
  // A hard-mode result whose group cannot go whole yet is stubbed meanwhile: the pairing stays intact.
  const clearing = new Set<number>();
  const add = (seq: number, withArgs: boolean): void => {
    const list = out.clear.get(withArgs);
    if (list === undefined) out.clear.set(withArgs, [seq]);
    else list.push(seq);
  };
  for (const seq of group.seqs) {
    const own = bySeq.get(seq);
    if (own === undefined || !undecided(res, seq) || !own.every((r) => r.expired) || !worthIt(own, true))
      continue;
    clearing.add(seq);
    const withArgs = own.every((r) => r.policy.clearArgs);
    add(seq, withArgs);
  }
  for (const seq of group.seqs) {
    const call = log.at(seq)!.role === "assistant";
    if (call && undecided(res, seq) && argsClearable(log, seq, res, refs, clearing)) add(seq, true);
  }
}

/** A call message's arguments are stubbed once every result of its calls is cleared and asks for it. */
function argsClearable(
  log: ThreadLog,
  seq: number,
  res: SeqResolution,
  refs: ReadonlyArray<ResultRef>,
  clearing: ReadonlySet<number>,
): boolean {
  const own = refs.filter((r) => r.callSeq === seq);
  if (own.length === 0 || !own.every((r) => r.policy.clearArgs)) return false;
  const cleared = (s: number) => clearing.has(s) || decisionAt(res, s)?.kind === "clear";
  if (!log.resultsOf(seq).every(cleared)) return false;
  let chars = 0;
  let stubs = 0;
  for (const p of log.at(seq)!.parts) {
    if (p.type !== "tool_call") continue;
    chars += p.args.length;
    stubs += clearedArgsText(p.args.length).length;
  }
  return chars > stubs;
}

/** What a clear replaces in one message: its results, or (a call message) its arguments. */
function clearedItems(log: ThreadLog, seq: number, bySeq: ResultIndex): ClearedItem[] {
  const messageId = log.at(seq)!.id;
  const refs = bySeq.get(seq);
  const items = (callId: string, toolName: string, body: string) => ({
    messageId,
    callId,
    toolName,
    chars: body.length,
  });
  if (refs !== undefined) return refs.map((r) => items(r.part.callId, r.toolName, r.part.content));
  return log.at(seq)!.parts.flatMap((p) => (p.type === "tool_call" ? [items(p.callId, p.name, p.args)] : []));
}

function toActions(log: ThreadLog, out: Collected, bySeq: ResultIndex, name: string): PlanAction[] {
  const ids = (seqs: ReadonlyArray<number>) => [...seqs].sort((a, b) => a - b).map((seq) => log.at(seq)!.id);
  const actions: PlanAction[] = [];
  for (const [withArgs, seqs] of out.clear) {
    const cleared = ids(seqs).flatMap((id) => clearedItems(log, log.seqOf(id)!, bySeq));
    const results = seqs.filter((seq) => bySeq.has(seq)).length;
    actions.push({
      kind: "clear",
      span: ids(seqs),
      record: withArgs ? { kind: "clear", clearArgs: true, cleared } : { kind: "clear", cleared },
      strategy: name,
      reason: `${results} tool message(s) past their retention policy stubbed${withArgs ? " with their call arguments" : ""}`,
    });
  }
  if (out.drop.length > 0) {
    actions.push({
      kind: "drop",
      span: ids(out.drop.flatMap((g) => g.seqs)),
      record: { kind: "drop", reason: "tool results past their retention policy (hard mode)" },
      strategy: name,
      reason: `${out.drop.length} tool-call group(s) whose results all expired in hard mode dropped whole`,
    });
  }
  // Proposals list actions in log order of their first message.
  return actions.sort((a, b) => log.seqOf(a.span[0]!)! - log.seqOf(b.span[0]!)!);
}

/**
 * Creates the tool-result retention strategy (free; proposes `clear` and `drop`): per-tool age and count limits
 * over a global default and durability classes decide which results expired; expired result bodies are stubbed
 * (soft) or their whole tool-call groups dropped (hard). Groups the plan summarizes, externalizes or drops are
 * left alone, and so are system prompts, pending calls and pinned messages. Throws `ValidationError` naming the
 * field on bad options.
 *
 * @example
 * const retention = createToolResultRetention({
 *   default: { keepTurns: 2, keepLast: 5 },
 *   tools: { read_file: { keepLast: 3, clearArgs: true }, get_time: { mode: "hard", keepLast: 1 } },
 *   durability: { "non-replayable": { keepTurns: 6 } },
 * });
 */
export function createToolResultRetention(options: ToolResultRetentionOptions = {}): Strategy {
  const o = parseOptions(toolResultRetentionOptionsSchema, options, "toolResultRetention");
  const name = o.name ?? "toolResultRetention";
  const policyOf = policyResolver(o);
  const propose = ({ log, plan }: StrategyContext): Proposal => {
    const res = resolveForLog(plan, log);
    const bySeq = collectResults(log, policyOf);
    const out: Collected = { clear: new Map(), drop: [] };
    for (const group of log.groups) {
      if (group.kind === "tool_call" && compactable(log, group) && onlyCleared(group, res))
        planGroup(log, group, res, bySeq, out);
    }
    const actions = toActions(log, out, bySeq, name);
    return actions.length === 0 ? nothingToDo("no tool result is past its retention policy") : { actions };
  };
  return Object.freeze({ name, cost: "free", kinds: Object.freeze(["clear", "drop"] as const), propose });
}
