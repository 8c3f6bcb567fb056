/**
 * The tool-result retention strategy: which tool results expired under their policy (see `tool-policy.ts`), and
 * the clear and drop actions that evict them.
 */
import { canonicalJson } from "../log/canonical-json.js";
import type { Group } from "../log/groups.js";
import type { LogView } from "../log/log-view.js";
import {
  type ClearExcerpt,
  type ClearedItem,
  type CompactionPlan,
  extendPlan,
  type PlanAction,
} from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog, type SeqResolution } from "../plan/resolve-for-log.js";
import type { Decision } from "../plan/resolve-plan.js";
import {
  clearedArgsText,
  clearedResultText,
  keyLinesResultText,
  stampedResultText,
} from "../texts/placeholders.js";
import { textTokenCounter } from "../texts/text-excerpt.js";
import { DEFAULT_DURABILITY_CLASSES, type DurabilityClasses } from "./durability-classes.js";
import { determinismStamp, durableExcerpts, resultClass, stampsSave } from "./durable-clears.js";
import { messageTokens } from "./group-accounting.js";
import type { DecisionChange } from "./group-sweep.js";
import { parseOptions } from "./options.js";
import { salientLines } from "./salient-lines.js";
import { nothingToDo, type Proposal, type Strategy, type StrategyContext } from "./strategy.js";
import { threadRarity } from "./thread-rarity.js";
import { capToolResults } from "./tier-caps.js";
import {
  classedPolicies,
  DEFAULT_KEY_LINES,
  type KeyLinesOptions,
  policyResolver,
  type ToolResultRetentionOptions,
  toolResultRetentionOptionsSchema,
} from "./tool-policy.js";
import {
  Expiry,
  type ResultIndex,
  type ResultRef,
  type RetentionMemo,
  retentionMemo,
} from "./tool-result-facts.js";
import { retentionCheckpointMemo } from "./tool-result-memo.js";

/** How this strategy's memo travels in a thread checkpoint (`primeRetention` is hoisted). */
const checkpointMemo = retentionCheckpointMemo(primeRetention);

export type {
  KeyLinesOptions,
  ResolvedToolPolicy,
  ToolPolicy,
  ToolResultRetentionOptions,
} from "./tool-policy.js";
export {
  DEFAULT_KEY_LINES,
  DEFAULT_TOOL_POLICY,
  DURABILITY_POLICIES,
  toolPolicySchema,
  toolResultRetentionOptionsSchema,
} from "./tool-policy.js";

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

/** What retention tells apart in a decision: nothing or include, clear, anything stronger. */
function decisionClass(decision: Decision | undefined): number {
  const kind = decision?.kind ?? "include";
  return kind === "include" ? 0 : kind === "clear" ? 1 : 2;
}

const classChanged: DecisionChange = (_seq, before, after) => decisionClass(before) !== decisionClass(after);

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
    if (stubbed) stubs += clearedResultText(r.toolName, r.part.content.length, r.part.callId).length;
  }
  return stubbed ? chars >= need && chars > stubs : chars >= need;
}

/**
 * Seqs a proposal stubs, by the `clearArgs` value of their action; tool messages it stubs only some results of
 * (seq → every part index cleared then, those cleared before included); and the groups it drops whole.
 */
interface Collected {
  readonly clear: Map<boolean, number[]>;
  readonly partial: Map<number, number[]>;
  readonly drop: Group[];
}

/**
 * Part indices of a tool message its decision clears already: none when undecided, undefined when nothing more
 * can be cleared (cleared whole, or summarized, externalized or dropped).
 */
function clearedParts(log: LogView, res: SeqResolution, seq: number): ReadonlySet<number> | undefined {
  const decision = decisionAt(res, seq);
  if (decision === undefined || decision.kind === "include") return new Set();
  if (decision.action.kind !== "clear" || decision.action.record.onlyParts === undefined) return undefined;
  const id = log.at(seq)!.id;
  return new Set(decision.action.record.onlyParts.filter((r) => r.messageId === id).map((r) => r.partIndex));
}

/**
 * The results of one tool message to stub now: the expired ones not stubbed yet. A message answering parallel
 * calls is stubbed result by result (the unit of a clear is a call) when an expired result sits beside results
 * of another tool that has not expired (a noisy tool among others); results of one tool expire a few calls
 * apart, so they wait for each other and the message changes once, which keeps the cached prefix stable.
 */
function resultsToStub(
  own: ReadonlyArray<ResultRef>,
  done: ReadonlySet<number>,
  expired: (r: ResultRef) => boolean,
  indexOf: (r: ResultRef) => number,
): ReadonlyArray<ResultRef> {
  const fresh = own.filter((r) => expired(r) && !done.has(indexOf(r)));
  if (fresh.length === 0) return fresh;
  const kept = own.filter((r) => !expired(r));
  if (kept.length === 0) return fresh;
  const tools = new Set(fresh.map((r) => r.toolName));
  return kept.some((r) => tools.has(r.toolName)) ? [] : fresh;
}

/** Adds what retention does to one compactable, only-cleared tool-call group; returns whether it added any. */
function planGroup(
  log: LogView,
  group: Group,
  res: SeqResolution,
  refs: ReadonlyArray<ResultRef>,
  ctx: { readonly bySeq: ResultIndex; readonly expiry: Expiry },
  out: Collected,
): boolean {
  const { bySeq, expiry } = ctx;
  const expired = (r: ResultRef) => expiry.expired(r);
  if (refs.every((r) => expired(r) && r.policy.mode === "hard") && worthIt(refs, false)) {
    out.drop.push(group);
    return true;
  }
  let added = false;
  // A hard-mode result whose group cannot go whole yet is stubbed meanwhile: the pairing stays intact.
  const clearing = new Set<number>();
  const add = (seq: number, withArgs: boolean): void => {
    added = true;
    const list = out.clear.get(withArgs);
    if (list === undefined) out.clear.set(withArgs, [seq]);
    else list.push(seq);
  };
  for (const seq of group.seqs) {
    const own = bySeq.get(seq);
    const done = own === undefined ? undefined : clearedParts(log, res, seq);
    if (own === undefined || done === undefined) continue;
    const parts = log.at(seq)!.parts;
    const indexOf = (r: ResultRef) => parts.indexOf(r.part);
    const stub = resultsToStub(own, done, expired, indexOf);
    if (stub.length === 0 || !worthIt(stub, true)) continue;
    if (done.size === 0 && stub.length === own.length) {
      clearing.add(seq);
      add(
        seq,
        own.every((r) => r.policy.clearArgs),
      );
      continue;
    }
    added = true;
    const all = new Set([...done, ...stub.map(indexOf)]);
    if (own.every((r) => all.has(indexOf(r)))) clearing.add(seq);
    out.partial.set(
      seq,
      [...all].sort((a, b) => a - b),
    );
  }
  for (const seq of group.seqs) {
    const call = log.at(seq)!.role === "assistant";
    if (call && undecided(res, seq) && argsClearable(log, seq, res, refs, clearing)) add(seq, true);
  }
  return added;
}

/**
 * Plans one group and says whether it is settled: retention's answer for it cannot change while the log grows
 * under this plan. A pending group is not (its results may arrive, or calls may join its reasoning); groups
 * that are not tool calls, pinned, or already summarized, externalized or dropped are; otherwise it is once
 * nothing was added for it and the expiry of each of its results is final (the group is complete, so only the
 * plan could change the answer).
 */
function visitGroup(
  log: LogView,
  group: Group,
  res: SeqResolution,
  ctx: { readonly bySeq: ResultIndex; readonly expiry: Expiry },
  out: Collected,
): boolean {
  // Pending first: a reasoning-only group ending the log is pending and may still become a tool-call group.
  if (group.pending) return false;
  if (group.kind !== "tool_call") return true;
  if (!onlyCleared(group, res)) return true;
  for (const seq of group.seqs) if (log.at(seq)!.meta.pinned === true) return true;
  const refs: ResultRef[] = [];
  for (const seq of group.seqs) {
    const own = ctx.bySeq.get(seq);
    if (own !== undefined) refs.push(...own);
  }
  if (refs.length === 0) return true;
  const added = planGroup(log, group, res, refs, ctx, out);
  return !added && refs.every((r) => ctx.expiry.final(r));
}

/** A call message's arguments are stubbed once every result of its calls is cleared and asks for it. */
function argsClearable(
  log: LogView,
  seq: number,
  res: SeqResolution,
  refs: ReadonlyArray<ResultRef>,
  clearing: ReadonlySet<number>,
): boolean {
  const own = refs.filter((r) => r.callSeq === seq);
  if (own.length === 0 || !own.every((r) => r.policy.clearArgs)) return false;
  const cleared = (s: number) => {
    if (clearing.has(s)) return true;
    const decision = decisionAt(res, s);
    if (decision?.action.kind !== "clear") return false;
    const only = decision.action.record.onlyParts;
    // A clear of only some parts covers the message once it lists every result.
    return (
      only === undefined ||
      log
        .at(s)!
        .parts.every(
          (p, i) =>
            p.type !== "tool_result" || only.some((r) => r.partIndex === i && r.messageId === log.at(s)!.id),
        )
    );
  };
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
function clearedItems(log: LogView, seq: number, bySeq: ResultIndex): ClearedItem[] {
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

/** The key lines of the results a clear stubs, as excerpts (a result whose lines save too little keeps none). */
type KeyLinesOf = (seq: number) => ReadonlyArray<ClearExcerpt>;

function toActions(
  log: LogView,
  out: Collected,
  bySeq: ResultIndex,
  name: string,
  excerptsOf: KeyLinesOf,
  worthClearing: (seq: number) => boolean,
): PlanAction[] {
  const ids = (seqs: ReadonlyArray<number>) => [...seqs].sort((a, b) => a - b).map((seq) => log.at(seq)!.id);
  const actions: PlanAction[] = [];
  for (const [withArgs, all] of out.clear) {
    const seqs = all.filter(worthClearing);
    if (seqs.length === 0) continue;
    const cleared = ids(seqs).flatMap((id) => clearedItems(log, log.seqOf(id)!, bySeq));
    const results = seqs.filter((seq) => bySeq.has(seq)).length;
    const excerpts = ids(seqs).flatMap((id) => excerptsOf(log.seqOf(id)!));
    const record = {
      kind: "clear" as const,
      ...(withArgs ? { clearArgs: true } : {}),
      cleared,
      ...(excerpts.length > 0 ? { excerpts } : {}),
    };
    const lined = excerpts.filter((e) => e.text.includes("key lines:]")).length;
    const kept = lined > 0 ? `, ${lined} keeping key lines` : "";
    actions.push({
      kind: "clear",
      span: ids(seqs),
      record,
      strategy: name,
      reason: `${results} tool message(s) past their retention policy stubbed${withArgs ? " with their call arguments" : ""}${kept}`,
    });
  }
  const partial = [...out.partial.keys()].filter(worthClearing).sort((a, b) => a - b);
  if (partial.length > 0) {
    const onlyParts = partial.flatMap((seq) =>
      out.partial.get(seq)!.map((partIndex) => ({ messageId: log.at(seq)!.id, partIndex })),
    );
    const listed = new Set(onlyParts.map((r) => `${r.partIndex}\u0000${r.messageId}`));
    const isListed = (messageId: string, partIndex: number) => listed.has(`${partIndex}\u0000${messageId}`);
    const cleared = partial.flatMap((seq) =>
      (bySeq.get(seq) ?? [])
        .filter((r) => isListed(log.at(seq)!.id, log.at(seq)!.parts.indexOf(r.part)))
        .map((r) => ({
          messageId: log.at(seq)!.id,
          callId: r.part.callId,
          toolName: r.toolName,
          chars: r.part.content.length,
        })),
    );
    const excerpts = partial
      .flatMap((seq) => excerptsOf(seq))
      .filter((e) => isListed(e.messageId, e.partIndex ?? 0));
    actions.push({
      kind: "clear",
      span: partial.map((seq) => log.at(seq)!.id),
      record: { kind: "clear", cleared, onlyParts, ...(excerpts.length > 0 ? { excerpts } : {}) },
      strategy: name,
      reason: `${cleared.length} result(s) past their retention policy stubbed one by one beside results kept in the same message`,
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
  return inLogOrder(log, actions);
}

/** Proposals list actions in log order of their first message. */
function inLogOrder(log: LogView, actions: PlanAction[]): PlanAction[] {
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
  // A turn looks only at the groups left open for the plan (or its parent), new groups and groups whose
  // decisions the plan's new actions changed: per-result facts live in the history's store, and expiry only ever
  // becomes true.
  const key = retentionKey(o);
  const keyLines = o.keyLines === false ? undefined : { ...DEFAULT_KEY_LINES, ...o.keyLines };
  const propose = (ctx: StrategyContext): Proposal => {
    const { log, plan } = ctx;
    const classes = ctx.durability ?? DEFAULT_DURABILITY_CLASSES;
    const memo = retentionMemo(log, `[${key},${classes.key}]`, classedPolicies(policyOf, classes));
    const resolution = resolveForLog(plan, log);
    const out = sweepRetention(log, resolution, memo);
    const stamps: KeyLinesOf = (seq) => durableExcerpts(log, classes, [seq]);
    const worth = (seq: number) => stampsSave(log, classes, seq);
    const plain = toActions(log, out, memo.facts.bySeq, name, stamps, worth);
    // Over the tool-result tier's cap (`tierCaps.toolResults`), the oldest results shown go too, whatever the total.
    const capped = capToolResults(ctx, plain, name);
    if (capped.length > 0) return { actions: inLogOrder(log, [...plain, ...capped]), binding: true };
    if (plain.length === 0) return nothingToDo("no tool result is past its retention policy");
    if (keyLines === undefined || out.clear.size + out.partial.size === 0) return { actions: plain };
    // Finding key lines reads every message the plan still renders (for word rarity) and renders the request
    // once more; it is in vain when the pipeline cannot take them. They stay only while the request with them is
    // under target (`roomFor`): not when it would be over even if the stubbed messages cost nothing (an
    // uncompacted thread's first turn). Under target, a proposal saving less than the pipeline's minimum gain
    // waits, whatever the stubs show (the gain with key lines is at most the gain without).
    const floor = floorAfter(ctx, resolution, out);
    if (floor > ctx.target) return { actions: plain };
    if (ctx.tokens <= ctx.target && ctx.tokens - floor < (ctx.minGain ?? 0)) return { actions: plain };
    const keyLinesOf = keyLinesFinder(ctx, resolution, memo.facts.bySeq, keyLines, classes);
    const actions = toActions(log, out, memo.facts.bySeq, name, keyLinesOf, worth);
    return { actions: roomFor(ctx, actions) ? actions : plain };
  };
  return Object.freeze({
    name,
    cost: "free",
    kinds: Object.freeze(["clear", "drop"] as const),
    propose,
    memo: checkpointMemo,
  });
}

/**
 * Finds the key lines of each result a clear stubs: its most telling lines by rarity over the messages the plan
 * still renders, under the placeholder. A result keeps none when its lines would not halve it.
 */
function keyLinesFinder(
  ctx: StrategyContext,
  resolution: ReturnType<typeof resolveForLog>,
  bySeq: ResultIndex,
  options: Required<KeyLinesOptions>,
  classes: DurabilityClasses,
): KeyLinesOf {
  const rarity = threadRarity(ctx.log, resolution);
  const countTokens = textTokenCounter(ctx.counter);
  return (seq) => {
    const refs = bySeq.get(seq);
    if (refs === undefined) return [];
    const message = ctx.log.at(seq)!;
    return refs.flatMap((r) => {
      const partIndex = message.parts.indexOf(r.part);
      const replayable = resultClass(ctx.log, classes, seq, partIndex) === "replayable";
      const stamped = (lines: ReadonlyArray<string>) =>
        stampedResultText(r.toolName, r.part.content.length, determinismStamp(message, r.part), lines);
      const lines = salientLines(r.part.content, rarity, { ...options, countTokens });
      const text =
        lines.length === 0
          ? ""
          : replayable
            ? stamped(lines)
            : keyLinesResultText(r.toolName, r.part.content.length, lines);
      // Lines that would not halve the result are not worth keeping; a replayable result keeps its stamp anyway.
      if (lines.length === 0 || text.length * 2 > r.part.content.length) {
        return replayable ? [{ messageId: message.id, partIndex, text: stamped([]) }] : [];
      }
      return [{ messageId: message.id, partIndex, text }];
    });
  };
}

/**
 * The fewest tokens the request can have once `out` is applied, whatever the stubs show: its tokens now less
 * what the messages it stubs or drops cost now (only undecided ones, sent unchanged: a message already cleared
 * makes the floor unknown, -Infinity).
 */
function floorAfter(ctx: StrategyContext, res: SeqResolution, out: Collected): number {
  let saved = 0;
  const add = (seq: number): boolean => {
    if (!undecided(res, seq)) return false;
    saved += messageTokens(ctx.log, seq, ctx.counter);
    return true;
  };
  for (const seqs of out.clear.values()) for (const seq of seqs) if (!add(seq)) return -Infinity;
  for (const seq of out.partial.keys()) if (!add(seq)) return -Infinity;
  for (const group of out.drop) for (const seq of group.seqs) if (!add(seq)) return -Infinity;
  return ctx.tokens - saved;
}

/** Key lines are kept while room allows: the request with them stays under the target. */
function roomFor(ctx: StrategyContext, actions: ReadonlyArray<PlanAction>): boolean {
  if (!actions.some((a) => a.kind === "clear" && a.record.excerpts !== undefined)) return true;
  const plan: CompactionPlan = extendPlan(ctx.plan, actions, ctx.log.length);
  return ctx.measure(plan) <= ctx.target;
}

/** The groups to evict under a plan, visiting only what the memo's sweep left open or what changed since. */
function sweepRetention(log: LogView, res: SeqResolution, memo: RetentionMemo): Collected {
  const { facts, sweep } = memo;
  const ctx = { bySeq: facts.bySeq, expiry: new Expiry(log, facts) };
  const out: Collected = { clear: new Map(), partial: new Map(), drop: [] };
  const open: number[] = [];
  for (const g of sweep.groupsToVisit(log, res, sweep.base(log, res.plan), classChanged)) {
    if (!visitGroup(log, log.groupAt(g), res, ctx, out)) open.push(g);
  }
  sweep.remember(log, res, open, undefined);
  return out;
}

function retentionKey(options: ToolResultRetentionOptions): string {
  return canonicalJson(options);
}

/**
 * Brings the retention memo under history-memo key `memoKey` up to `resolution`'s plan on `log` (a sweep, as a
 * turn's proposal makes), so a checkpoint can carry the sweep of exactly that plan. False when the history has
 * no such memo.
 */
export function primeRetention(log: LogView, resolution: SeqResolution, memoKey: string): boolean {
  const memo = log.peekHistoryMemo(memoKey) as RetentionMemo | undefined;
  if (memo === undefined) return false;
  memo.facts.extend(log);
  sweepRetention(log, resolution, memo);
  return true;
}
