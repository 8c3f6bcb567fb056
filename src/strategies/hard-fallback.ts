import * as z from "zod";
import { BudgetInfeasibleError } from "../errors/ledger-error.js";
import type { Group } from "../log/groups.js";
import { countBelow } from "../log/history-store.js";
import type { LogView } from "../log/log-view.js";
import { turnIndexOf } from "../log/turns.js";
import { type CompactionPlan, nextPlan, type PlanAction } from "../plan/compaction-plan.js";
import { decisionAt, resolveForLog } from "../plan/resolve-for-log.js";
import type { Decision } from "../plan/resolve-plan.js";
import { spanOfSeqs } from "../plan/span-seqs.js";
import { textTokenCounter } from "../texts/text-excerpt.js";
import { dropRank } from "./durability-classes.js";
import { classesOf, durableExcerpts, neverCleared, stampsSave } from "./durable-clears.js";
import { type ArtifactPort, type GroupStore, storeGroup } from "./externalization.js";
import { parseOptions } from "./options.js";
import { excerptsFor } from "./oversized-excerpt.js";
import { newestGroupOf, untouchableSeqs } from "./protected-core.js";
import type { Proposal, Strategy, StrategyContext } from "./strategy.js";
import { threadRarity } from "./thread-rarity.js";

/** JSON-shaped options of {@link createHardFallback}. */
export const hardFallbackOptionsSchema = z.strictObject({
  name: z
    .string()
    .trim()
    .min(1)
    .optional()
    .meta({ description: "Strategy name in plan actions and audit records.", default: "hardFallback" }),
  protect: z.enum(["lastTurn", "lastUserMessage"]).optional().meta({
    description:
      "What of the newest history is never dropped: `lastTurn` (the last user message and everything after it) or `lastUserMessage` (only that message; older calls of a long agent turn may go).",
    default: "lastTurn",
  }),
  markDrops: z.boolean().optional().meta({
    description:
      "Leave a marker where each dropped run begins: how many messages were left out, and that `recall` finds them by query.",
    defaultText: "`false`; `true` in a pipeline config that externalizes",
  }),
  startOn: z.literal("user").optional().meta({
    description:
      "`user`: drop whole turns (LangChain's `startOn`): every turn before the newest one goes with all of its unprotected groups or not at all, so what is kept of it starts at its user message and no answer stays whose question was dropped (protected messages of a dropped turn, such as the task, still stay). Turns go least durable first, oldest first within a class.",
    defaultText: "off",
  }),
});

/** Options of {@link createHardFallback}. */
export type HardFallbackOptions = z.infer<typeof hardFallbackOptionsSchema>;

/**
 * Group indices the fallback never drops: system prompts, `meta.pinned` messages, pending calls, the task's group
 * (`taskSeq`, -1 for none) and the last user message — with everything after it when `protect` is `lastTurn`
 * (the newest non-system group when there is no user message).
 */
export function protectedGroups(
  log: LogView,
  protect: "lastTurn" | "lastUserMessage",
  taskSeq = -1,
): Uint8Array {
  const keep = new Uint8Array(log.groupCount);
  for (const g of protectedGroupList(log, protect, taskSeq)) keep[g] = 1;
  return keep;
}

/**
 * The indices of `protectedGroups`, ascending, found from their sources (pinned seqs, pending calls, the task,
 * the last turn) without visiting every group: a turn on a long thread pays for what is protected, not for its
 * length.
 */
export function protectedGroupList(
  log: LogView,
  protect: "lastTurn" | "lastUserMessage",
  taskSeq = -1,
): number[] {
  const groups = new Set<number>();
  // System prompts are among the pinned seqs.
  for (const seq of log.pinnedSeqs) groups.add(log.groupIndexOf(seq));
  for (const call of log.pendingCalls.values()) groups.add(log.groupIndexOf(call.seq));
  if (taskSeq >= 0) groups.add(log.groupIndexOf(taskSeq));
  const lastUser = log.lastUserSeq;
  if (lastUser >= 0) {
    const end = protect === "lastTurn" ? log.length : lastUser + 1;
    for (let seq = lastUser; seq < end; seq++) groups.add(log.groupIndexOf(seq));
  }
  const newest = newestGroupOf(log);
  if (newest >= 0) groups.add(newest);
  return [...groups].sort((a, b) => a - b);
}

/**
 * The messages of unprotected groups that the plan does not drop yet, in log order, each with the position of its
 * group in the drop order; with `spareSynthetic`, messages under a summary or pointer stay too (a summary stands
 * for many messages at a small cost, so it goes last). The drop order is by durability class — groups holding
 * only ephemeral results first, then ordinary and replayable groups, then anchoring, then non-replayable — and
 * oldest first within a class. A message already under a summary or pointer is not classed (its verbatim form
 * is gone already, and a worker's partial log need not hold it). Found once per proposal: each bisection step
 * then only filters this list.
 */
function droppable(
  ctx: StrategyContext,
  keep: Uint8Array,
  spareSynthetic: boolean,
  turns = false,
): Droppable {
  const { log, plan } = ctx;
  const resolution = resolveForLog(plan, log);
  const groupOf = log.groupIndexTable();
  const classes = classesOf(ctx);
  const seqs: number[] = [];
  const groups: number[] = [];
  const rankOf = new Map<number, number>();
  for (let seq = 0; seq < log.length; seq++) {
    const g = groupOf[seq]!;
    if (keep[g] !== 0) continue;
    const kind = decisionAt(resolution, seq)?.kind;
    if (kind === "drop" || (spareSynthetic && (kind === "summarize" || kind === "externalize"))) continue;
    seqs.push(seq);
    groups.push(g);
    // A group's class is that of its most durable result (a call's class reaches its results, see
    // `DurabilityClasses`); groups without a classed result rank with the replayable ones.
    const folded = kind === "summarize" || kind === "externalize";
    const d = folded || log.at(seq)!.role !== "tool" ? undefined : classes.classOfMessage(log, seq);
    const rank = d === undefined ? -1 : dropRank(d);
    rankOf.set(g, Math.max(rankOf.get(g) ?? -1, rank));
  }
  for (const [g, rank] of rankOf) if (rank < 0) rankOf.set(g, dropRank(undefined));
  if (turns) return byTurn(log, seqs, groups, rankOf, keep);
  // In log order the groups need not ascend (a result can arrive after a later group: an assistant text between
  // a call and its result), and classes reorder them: the order is found by sorting.
  const order = [...rankOf.keys()].sort((x, y) => rankOf.get(x)! - rankOf.get(y)! || x - y);
  const position = new Map<number, number>();
  order.forEach((g, i) => {
    position.set(g, i);
  });
  const positions = Int32Array.from(groups, (g) => position.get(g)!);
  return { seqs, positions, sorted: Int32Array.from(positions).sort(), groups: order.length };
}

/**
 * The droppable list with whole turns as the unit (`startOn: "user"`): the groups of a turn before the newest
 * one (by the turn of the group's first message) share one position, ranked by their most durable group; groups
 * of the newest turn (after its protected user message) stay units of their own. A turn where an answer that
 * stays begins (a pending call, or the newest group when a result arrived after a later user message) is kept
 * whole: the answer's question stays with it, also once the call is answered.
 */
function byTurn(
  log: LogView,
  allSeqs: ReadonlyArray<number>,
  allGroups: ReadonlyArray<number>,
  rankOf: ReadonlyMap<number, number>,
  keep: Uint8Array,
): Droppable {
  const newest = log.turns.length - 1;
  const turnOfGroup = (g: number) => turnIndexOf(log.turns, log.groupAt(g).seqs[0]!);
  const held = new Set<number>();
  for (let g = 0; g < keep.length; g++) {
    if (keep[g] === 0) continue;
    const group = log.groupAt(g);
    if (group.kind !== "tool_call" && group.kind !== "assistant_text") continue;
    if (group.seqs.some((seq) => log.at(seq)!.meta.pinned === true)) continue;
    const first = turnIndexOf(log.turns, group.seqs[0]!);
    if (first >= 0 && first < newest) held.add(first);
  }
  const seqs: number[] = [];
  const groups: number[] = [];
  allSeqs.forEach((seq, i) => {
    if (held.size > 0 && held.has(turnOfGroup(allGroups[i]!))) return;
    seqs.push(seq);
    groups.push(allGroups[i]!);
  });
  const unitOf = new Map<number, string>();
  const rankOfUnit = new Map<string, number>();
  const firstOfUnit = new Map<string, number>();
  for (const [g, rank] of rankOf) {
    const turn = turnOfGroup(g);
    if (held.has(turn)) continue;
    const unit = turn >= 0 && turn < newest ? `t${turn}` : `g${g}`;
    unitOf.set(g, unit);
    rankOfUnit.set(unit, Math.max(rankOfUnit.get(unit) ?? -1, rank));
    firstOfUnit.set(unit, Math.min(firstOfUnit.get(unit) ?? g, g));
  }
  const order = [...rankOfUnit.keys()].sort(
    (x, y) => rankOfUnit.get(x)! - rankOfUnit.get(y)! || firstOfUnit.get(x)! - firstOfUnit.get(y)!,
  );
  const position = new Map(order.map((u, i) => [u, i] as const));
  const positions = Int32Array.from(groups, (g) => position.get(unitOf.get(g)!)!);
  return { seqs, positions, sorted: Int32Array.from(positions).sort(), groups: order.length };
}

/** The droppable messages of a proposal (see {@link droppable}). */
interface Droppable {
  /** Seqs in log order. */
  readonly seqs: ReadonlyArray<number>;
  /** Per seq (same index): the position of its group in the drop order. */
  readonly positions: Int32Array;
  /** `positions`, ascending. */
  readonly sorted: Int32Array;
  /** Number of droppable groups. */
  readonly groups: number;
}

/** Ids of the droppable messages whose group comes before position `cut` of the drop order, in log order. */
function idsBelow(log: LogView, list: Droppable, cut: number): string[] {
  const seqs: number[] = [];
  for (let i = 0; i < list.seqs.length; i++) if (list.positions[i]! < cut) seqs.push(list.seqs[i]!);
  return spanOfSeqs(log, seqs);
}

/** Who proposes: the strategy's name, and whether its drops leave a marker (see `proposeMarked`). */
interface Actor {
  readonly name: string;
  readonly marker: boolean;
  /** Drop whole turns (`startOn: "user"`). */
  readonly turns?: boolean;
}

function dropAction(span: ReadonlyArray<string>, as: Actor, target: number): PlanAction {
  return {
    kind: "drop",
    span,
    record: {
      kind: "drop",
      reason: "over budget: oldest unprotected groups, least durable first",
      ...(as.marker ? { marker: true } : {}),
    },
    strategy: as.name,
    reason: `${span.length} message(s) of the oldest unprotected groups (least durable class first) dropped to fit ${target} tokens`,
  };
}

/** Smallest `n` in [0, max] with `fits(n)`, for a monotone predicate (true from some point on); max if none. */
function bisect(max: number, fits: (n: number) => boolean): number {
  let lo = 0;
  let hi = max;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (fits(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * Seqs of messages inside the protected groups whose tool bodies may be stubbed as a last resort: tool results
 * and call arguments of answered calls, never a system prompt, a pinned message, a pending group or a message
 * the plan already compacts.
 */
/**
 * Whether a bare stub would still shrink a message under this decision: untouched, or cleared in a way that
 * leaves more than a stub (key lines or an excerpt kept, or the call's arguments). A later clear wins over an
 * earlier one.
 */
function stubbable(decision: Decision | undefined): boolean {
  if (decision === undefined || decision.kind === "include") return true;
  if (decision.action.kind !== "clear") return false;
  const record = decision.action.record;
  return (record.excerpts?.length ?? 0) > 0 || record.clearArgs !== true;
}

/**
 * Seqs of the protected groups' messages the stub phase may clear, oldest first — except that tool messages with
 * a non-replayable result come after all the others: they are stubbed only when nothing else makes the request
 * fit (the alternative is a failed turn).
 */
function clearableSeqs(
  ctx: StrategyContext,
  plan: CompactionPlan,
  keep: Uint8Array,
  bare: boolean,
): number[] {
  const { log } = ctx;
  const classes = classesOf(ctx);
  const resolution = resolveForLog(plan, log);
  const out: number[] = [];
  const last: number[] = [];
  for (let seq = 0; seq < log.length; seq++) {
    const group = log.groupAt(log.groupIndexOf(seq));
    if (keep[group.index] === 0 || group.kind !== "tool_call" || group.pending) continue;
    const message = log.at(seq)!;
    if (message.meta.pinned === true || !stubbable(decisionAt(resolution, seq))) continue;
    if (
      message.parts.some((p) => p.type === "tool_result" || (p.type === "tool_call" && p.args.length > 2))
    ) {
      // Stamped, a short replayable result would grow: it is left alone (a bare stub may still take it).
      if (!bare && !stampsSave(log, classes, seq)) continue;
      (neverCleared(log, classes, seq) ? last : out).push(seq);
    }
  }
  return [...out, ...last];
}

/**
 * Stubs the tool bodies at `seqs`; replayable results keep their stamp, anchoring ones their key lines — unless
 * `bare`, the last resort before giving up: plain placeholders, the smallest a stub can be.
 */
function clearAction(
  ctx: StrategyContext,
  seqs: ReadonlyArray<number>,
  name: string,
  bare: boolean,
): PlanAction {
  const { log } = ctx;
  const ordered = [...seqs].sort((a, b) => a - b);
  const excerpts = bare
    ? []
    : durableExcerpts(log, classesOf(ctx), ordered, { countTokens: textTokenCounter(ctx.counter) });
  return {
    kind: "clear",
    span: ordered.map((seq) => log.at(seq)!.id),
    record: { kind: "clear", clearArgs: true, ...(excerpts.length === 0 ? {} : { excerpts }) },
    strategy: name,
    reason: `tool bodies of ${seqs.length} message(s) of the protected last turn stubbed: dropping everything else did not fit ${ctx.target} tokens`,
  };
}

type Protect = "lastTurn" | "lastUserMessage";

/**
 * Drops the oldest groups not in `keep` until the request fits: the goal when dropping everything droppable
 * reaches it (chunked compaction), else the target; undefined when even dropping all of them does not fit.
 */
function dropToFit(
  ctx: StrategyContext,
  as: Actor,
  keep: Uint8Array,
  spares: ReadonlyArray<boolean>,
): PlanAction[] | undefined {
  const { log } = ctx;
  const withActions = (actions: ReadonlyArray<PlanAction>) =>
    nextPlan(ctx.plan, [...ctx.plan.actions, ...actions], log.length);
  const lists = new Map<boolean, Droppable>();
  const listOf = (spare: boolean): Droppable => {
    let list = lists.get(spare);
    if (list === undefined) {
      list = droppable(ctx, keep, spare, as.turns);
      lists.set(spare, list);
    }
    return list;
  };
  const dropBelow = (cut: number, spare: boolean): PlanAction[] => {
    const span = idsBelow(log, listOf(spare), cut);
    return span.length === 0 ? [] : [dropAction(span, as, ctx.target)];
  };
  // Each measurement renders a candidate plan. The bisections for the goal and for the target (and the checks
  // around them) probe many of the same cuts: a drop span is a prefix of the droppable list in drop order, so
  // its length identifies it, and each is measured once.
  const measured = new Map<number, number>();
  const measureCut = (cut: number, spare: boolean): number => {
    // How many droppable messages lie in groups before the cut: the length of its span.
    const length = countBelow(listOf(spare).sorted, cut);
    if (length === 0) return ctx.tokens;
    const key = spare ? -length : length;
    let tokens = measured.get(key);
    if (tokens === undefined) {
      tokens = ctx.measure(withActions(dropBelow(cut, spare)));
      measured.set(key, tokens);
    }
    return tokens;
  };
  for (const spare of spares) {
    const count = listOf(spare).groups;
    const all = measureCut(count, spare);
    if (all > ctx.target) continue;
    // Dropping more never costs more, so the smallest cut is found by bisection. Aim at the goal (chunked
    // compaction) unless that means dropping even the last droppable group while the target could keep it.
    const fits = (aim: number) => bisect(count, (cut) => measureCut(cut, spare) <= aim);
    let cut = all <= ctx.goal ? fits(ctx.goal) : fits(ctx.target);
    if (cut === count && count > 0 && measureCut(count - 1, spare) <= ctx.target) cut = fits(ctx.target);
    return dropBelow(cut, spare);
  }
  return undefined;
}

/**
 * Drops every unprotected group and stubs the oldest tool bodies of the protected ones (their calls and pairing
 * stay) until the request fits; throws `BudgetInfeasibleError` when even all of them stubbed does not.
 */
function stubToFit(ctx: StrategyContext, as: Actor, keep: Uint8Array, allowCut: boolean): PlanAction[] {
  const { log } = ctx;
  const withActions = (actions: ReadonlyArray<PlanAction>) =>
    nextPlan(ctx.plan, [...ctx.plan.actions, ...actions], log.length);
  const list = droppable(ctx, keep, false, as.turns);
  const all = idsBelow(log, list, list.groups);
  const drops = all.length === 0 ? [] : [dropAction(all, as, ctx.target)];
  const base = drops.length === 0 ? ctx.plan : withActions(drops);
  // Stubs keep what their class asks (stamps, key lines) when that fits; bare placeholders are the last resort.
  let bare = false;
  let clearable = clearableSeqs(ctx, base, keep, bare);
  const measureClear = (n: number): number =>
    ctx.measure(
      withActions(n === 0 ? drops : [...drops, clearAction(ctx, clearable.slice(0, n), as.name, bare)]),
    );
  let most = measureClear(clearable.length);
  if (most > ctx.target) {
    bare = true;
    clearable = clearableSeqs(ctx, base, keep, bare);
    most = measureClear(clearable.length);
  }
  if (most > ctx.target) {
    const cut = allowCut ? cutCore(ctx, as) : undefined;
    if (cut !== undefined) return cut;
    throw new BudgetInfeasibleError(
      "the protected core (system prompt, pinned messages, pending calls, the task and the newest user message; older tool bodies stubbed, everything else dropped) does not fit — raise the budget's contextWindow, lower reserveOutput or the reserves, or shorten the pinned content or the task",
      most,
      ctx.target,
      { threadId: log.threadId },
    );
  }
  const n = bisect(clearable.length, (k) => measureClear(k) <= ctx.target);
  if (n === 0) return drops;
  // With those bodies stubbed there may be room again (one huge result was the problem): bring back the newest
  // groups that fit, rather than sending a request that is nearly empty.
  const clears = [clearAction(ctx, clearable.slice(0, n), as.name, bare)];
  const plan = withActions(clears);
  const stubbed = { ...ctx, plan, tokens: ctx.measure(plan) };
  if (stubbed.tokens <= ctx.target) return clears;
  const fewer = dropToFit(stubbed, as, keep, [true, false]);
  return fewer === undefined ? [...drops, ...clears] : [...clears, ...fewer];
}

/** A core message is cut only when it alone is over this share of the target, to this share. */
const CORE_SHARE = 0.25;
const CORE_KEEP = 0.125;

/**
 * The last resort before giving up: the core's own oversized messages (system prompt, pinned messages, the task,
 * the newest user message — each over a quarter of the target) cut to head, key lines and tail, largest first, until the
 * rest of the fallback can fit; then the fallback runs again on top of those cuts. Undefined when cutting them
 * all does not make room.
 */
function cutCore(ctx: StrategyContext, as: Actor): PlanAction[] | undefined {
  const { log, counter, target } = ctx;
  const resolution = resolveForLog(ctx.plan, log);
  const oversized = [...untouchableSeqs(log, ctx.taskSeq ?? -1)]
    .filter((seq) => decisionAt(resolution, seq) === undefined)
    .map((seq) => ({ message: log.at(seq)!, tokens: counter.countMessage(log.at(seq)!) }))
    .filter((m) => m.tokens > CORE_SHARE * target)
    .sort((a, b) => b.tokens - a.tokens);
  const cuts: PlanAction[] = [];
  for (const { message, tokens } of oversized) {
    const excerpts = excerptsFor(
      message,
      tokens,
      Math.floor(CORE_KEEP * target),
      { headShare: 0.5 },
      counter,
      threadRarity(log, resolution),
    );
    if (excerpts === undefined) continue;
    cuts.push({
      kind: "clear",
      span: [message.id],
      record: { kind: "clear", excerpts },
      strategy: as.name,
      reason: `protected message of ${tokens} tokens cut to its head, key lines and tail: the protected core did not fit ${target} tokens`,
    });
    const plan = nextPlan(ctx.plan, [...ctx.plan.actions, ...cuts], log.length);
    try {
      // The cuts so far are kept and the next one added by this loop: the fallback on top of them may not cut
      // again (that would try every subset of the core's messages).
      const rest = propose({ ...ctx, plan, tokens: ctx.measure(plan) }, as, "lastUserMessage", false);
      return [...cuts, ...rest.actions];
    } catch (error) {
      if (!(error instanceof BudgetInfeasibleError)) throw error;
    }
  }
  return undefined;
}

function propose(ctx: StrategyContext, as: Actor, protect: Protect, allowCut = true): Proposal {
  if (ctx.tokens <= ctx.target) return { actions: [] };
  const taskSeq = ctx.taskSeq ?? -1;
  // The whole last turn stays when the rest can make room; in a single-task agent run the last turn is the
  // whole run, so then only the protected core (and the newest group) stays and the turn's oldest calls go first.
  const levels: ReadonlyArray<Protect> = protect === "lastTurn" ? ["lastTurn", "lastUserMessage"] : [protect];
  // A summary stands for many messages at a small cost: every level is tried sparing summaries before any
  // level may drop them.
  const keeps = levels.map((level) => protectedGroups(ctx.log, level, taskSeq));
  for (const spare of [true, false]) {
    for (const keep of keeps) {
      const actions = dropToFit(ctx, as, keep, [spare]);
      if (actions !== undefined) return { actions };
    }
  }
  return { actions: stubToFit(ctx, as, protectedGroups(ctx.log, "lastUserMessage", taskSeq), allowCut) };
}

/**
 * A drop re-naming the first message of every dropped run that shows a marker: as the later drop governing it, it
 * takes the marker away. Undefined when no marker shows.
 */
function silencing(ctx: StrategyContext, name: string): PlanAction | undefined {
  const resolution = resolveForLog(ctx.plan, ctx.log);
  const { dropRuns } = resolution;
  const span: string[] = [];
  for (let i = 0; i < dropRuns.length; i += 2) {
    const action = decisionAt(resolution, dropRuns[i]!)?.action;
    if (action?.kind === "drop" && action.record.marker === true) span.push(ctx.log.idAt(dropRuns[i]!)!);
  }
  if (span.length === 0) return undefined;
  return {
    kind: "drop",
    span,
    record: { kind: "drop", reason: "markers of dropped runs taken out to fit" },
    strategy: name,
    reason: `the markers of ${span.length} dropped run(s) taken out: the protected core did not fit ${ctx.target} tokens with them`,
  };
}

/**
 * The fallback's proposal with drop markers: where a dropped run begins, the request says how many messages were
 * left out and that `recall` finds them (every cut is measured by rendering, so the markers are paid for). When
 * markers are what keeps the protected core from fitting whole, the drops go without them and the markers earlier
 * drops left are taken out: the core verbatim and a turn that is never stuck matter more than a marker. Cutting
 * core messages to excerpts is the last resort, without markers.
 */
function proposeMarked(
  ctx: StrategyContext,
  name: string,
  protect: Protect,
  marks: boolean,
  turns: boolean,
): Proposal {
  if (!marks) return propose(ctx, { name, marker: false, turns }, protect);
  try {
    return propose(ctx, { name, marker: true, turns }, protect, false);
  } catch (error) {
    if (!(error instanceof BudgetInfeasibleError)) throw error;
  }
  const quiet = silencing(ctx, name);
  const plan =
    quiet === undefined ? ctx.plan : nextPlan(ctx.plan, [...ctx.plan.actions, quiet], ctx.log.length);
  const base = quiet === undefined ? ctx : { ...ctx, plan, tokens: ctx.measure(plan) };
  const unmarked = { name, marker: false, turns };
  let rest: Proposal;
  try {
    rest = propose(base, unmarked, protect, false);
  } catch (error) {
    if (!(error instanceof BudgetInfeasibleError)) throw error;
    rest = propose(base, unmarked, protect, true);
  }
  return quiet === undefined ? rest : { ...rest, actions: [quiet, ...rest.actions] };
}

/**
 * The hard fallback: drops the oldest unprotected groups (one drop action) until the renderer's count reaches
 * the goal, or at least the target; summarized and externalized spans go only when nothing else is enough, and
 * the goal never costs the newest droppable group when the target would keep it. Never dropped: system prompts,
 * pinned messages, pending calls, the task (`StrategyContext.taskSeq`), the newest group and the last user turn
 * (see `protect`) — when the rest cannot make room for the whole last turn, only its user message stays and the
 * turn's oldest calls go first. When dropping everything else is not enough, it stubs the oldest tool results and
 * call arguments that are left (a clear: the calls and their pairing stay). When even that does not fit, it
 * throws `BudgetInfeasibleError` saying by how much; the pipeline turns that into a failed run.
 */
export function createHardFallback(options: HardFallbackOptions & FallbackStore = {}): Strategy {
  const { artifacts, tenant, ...json } = options;
  const o = parseOptions(hardFallbackOptionsSchema, json, "hardFallback");
  const name = o.name ?? "hardFallback";
  const protect = o.protect ?? "lastTurn";
  const marks = o.markDrops === true;
  const turns = o.startOn === "user";
  if (artifacts === undefined) {
    return {
      name,
      cost: "free",
      kinds: ["drop", "clear"],
      propose: (ctx) => proposeMarked(ctx, name, protect, marks, turns),
    };
  }
  const to: GroupStore = { store: artifacts, tenant: tenant ?? "default", name };
  return {
    name,
    cost: "free",
    kinds: ["drop", "clear", "externalize"],
    propose: (ctx) => keepNonReplayable(ctx, proposeMarked(ctx, name, protect, marks, turns), to),
  };
}

/**
 * Where the fallback moves the non-replayable groups it would drop. Given only to a pipeline that externalizes
 * (`pipelineFromConfig` does so when the config has an `externalize` step): a turn that brings content back runs
 * without one, so it never writes new artifacts.
 */
export interface FallbackStore {
  readonly artifacts?: ArtifactPort;
  /** Tenant the artifacts belong to (default `default`). */
  readonly tenant?: string;
}

/**
 * The proposal with the non-replayable groups its drops give up moved to artifacts instead (a pointer each), when
 * the request with those pointers still fits the target; otherwise, or when the store fails, the drops stand
 * (a note says why).
 */
async function keepNonReplayable(
  ctx: StrategyContext,
  proposal: Proposal,
  to: GroupStore,
): Promise<Proposal> {
  const { log } = ctx;
  const classes = classesOf(ctx);
  const dropped = new Set<number>();
  for (const action of proposal.actions) {
    if (action.kind !== "drop") continue;
    for (const id of action.span) dropped.add(log.seqOf(id)!);
  }
  const groups = new Map<number, Group>();
  for (const seq of dropped) {
    const g = log.groupIndexOf(seq);
    if (groups.has(g)) continue;
    const group = log.groupAt(g);
    // Only whole groups the proposal drops entirely, still verbatim before it.
    if (!group.seqs.every((s) => dropped.has(s))) continue;
    if (classes.classOfGroup(log, group) === "non-replayable") groups.set(g, group);
  }
  if (groups.size === 0) return proposal;
  const moved = new Set<number>();
  const pointers: PlanAction[] = [];
  try {
    for (const group of [...groups.values()].sort((a, b) => a.index - b.index)) {
      pointers.push(await storeGroup(ctx, group, to));
      for (const seq of group.seqs) moved.add(seq);
    }
  } catch (cause) {
    const message = `could not store a non-replayable group: ${cause instanceof Error ? cause.message : String(cause)}; it is dropped`;
    return { ...proposal, notes: [{ level: "error", code: "artifact_store_failed", message, cause }] };
  }
  const actions: PlanAction[] = [];
  for (const action of proposal.actions) {
    if (action.kind !== "drop") {
      actions.push(action);
      continue;
    }
    const span = action.span.filter((id) => !moved.has(log.seqOf(id)!));
    if (span.length > 0) actions.push({ ...action, span });
  }
  actions.push(...pointers);
  actions.sort((a, b) => log.seqOf(a.span[0]!)! - log.seqOf(b.span[0]!)!);
  const tokens = ctx.measure(nextPlan(ctx.plan, [...ctx.plan.actions, ...actions], log.length));
  if (tokens > ctx.target) {
    const note = `${groups.size} non-replayable group(s) dropped: their pointers would bring the request to ${tokens} tokens, over the ${ctx.target}-token target`;
    return { ...proposal, notes: [{ level: "info", code: "pointers_do_not_fit", message: note }] };
  }
  return { actions };
}
