import type { LogView } from "../log/log-view.js";
import { parentOf } from "../plan/compaction-plan.js";
import { resolveForLog, type SeqResolution } from "../plan/resolve-for-log.js";

/**
 * The source ids of one synthetic message: how many, and the list itself — already at hand, or (seeded from a
 * thread checkpoint, docs/decisions/0009) built from the log the first time something reads it, with the
 * digest the prompt hash takes of a long list known in advance.
 */
export interface SpanSources {
  readonly count: number;
  /** The prompt hash's digest of the list when it is known without the list (see `sourcesDigest`). */
  readonly digest?: string;
  /** The ids, built once when first asked for. */
  ids(): ReadonlyArray<string>;
  /** True once `ids()` needs no work. */
  readonly ready: boolean;
}

// Source lists per resolution and action: a summary can stand for tens of thousands of messages, and a warm
// render must not walk its span again.
const sourcesMemo = new WeakMap<SeqResolution, Map<number, SpanSources>>();

function memoOf(resolved: SeqResolution): Map<number, SpanSources> {
  let perAction = sourcesMemo.get(resolved);
  if (perAction === undefined) {
    perAction = new Map();
    sourcesMemo.set(resolved, perAction);
  }
  return perAction;
}

function known(ids: ReadonlyArray<string>): SpanSources {
  return { count: ids.length, ids: () => ids, ready: true };
}

/**
 * Records the source list of action `actionIndex` under a resolution without building it: `count` ids whose
 * prompt-hash digest is `digest`, built by `build` when first read (a checkpoint restore seeds the summary in
 * force this way, so a cold turn never lists the ids it stands for).
 */
export function seedSpanSources(
  resolved: SeqResolution,
  actionIndex: number,
  seed: { readonly count: number; readonly digest?: string; readonly build: () => ReadonlyArray<string> },
): void {
  let ids: ReadonlyArray<string> | undefined;
  const sources: SpanSources = {
    count: seed.count,
    ...(seed.digest === undefined ? {} : { digest: seed.digest }),
    ids: () => {
      ids ??= seed.build();
      return ids;
    },
    get ready() {
      return ids !== undefined;
    },
  };
  memoOf(resolved).set(actionIndex, sources);
}

/** The source list of an action under a resolution (see `spanSources`), possibly not built yet. */
export function spanSourcesOf(log: LogView, resolved: SeqResolution, actionIndex: number): SpanSources {
  const perAction = memoOf(resolved);
  const hit = perAction.get(actionIndex) ?? inherited(log, resolved, actionIndex);
  if (hit !== undefined) {
    perAction.set(actionIndex, hit);
    return hit;
  }
  const sources = known(governedIds(log, resolved, actionIndex));
  perAction.set(actionIndex, sources);
  return sources;
}

/**
 * The ids an action governs after precedence, each once, in log order. Spans list ids in log order, so each
 * seq is found by checking the next slot of the id table before falling back to the id index.
 */
export function spanSources(
  log: LogView,
  resolved: SeqResolution,
  actionIndex: number,
): ReadonlyArray<string> {
  return spanSourcesOf(log, resolved, actionIndex).ids();
}

/** `spanSources` computed from the span and the resolution's table, without the memo. */
export function governedIds(
  log: LogView,
  resolved: SeqResolution,
  actionIndex: number,
): ReadonlyArray<string> {
  const span = resolved.plan.actions[actionIndex]!.span;
  // A projected log fills in the ids it does not hold: the list names every governed message.
  const ids = log.fullIdTable();
  const { actionAt } = resolved;
  const seqs: number[] = [];
  let hint = -1;
  let sorted = true;
  for (let i = 0; i < span.length; i++) {
    const id = span[i]!;
    const seq = hint + 1 < log.length && ids[hint + 1] === id ? hint + 1 : log.seqOf(id);
    if (seq === undefined) continue;
    if (seq < hint) sorted = false;
    hint = seq;
    if (seq < actionAt.length && actionAt[seq] === actionIndex) seqs.push(seq);
  }
  if (!sorted) seqs.sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < seqs.length; i++) if (i === 0 || seqs[i] !== seqs[i - 1]) out.push(ids[seqs[i]!]!);
  return Object.freeze(out);
}

/**
 * The parent plan's source list of an action, when the actions the plan added take none of them away: a plan
 * that only extends its parent (the pipeline's candidates, each turn's commit) keeps a summary's ids without
 * walking its span again.
 */
function inherited(log: LogView, resolved: SeqResolution, actionIndex: number): SpanSources | undefined {
  const parent = parentOf(resolved.plan);
  if (parent === undefined || actionIndex >= parent.actions.length) return undefined;
  const parentResolution = resolveForLog(parent, log);
  const known = sourcesMemo.get(parentResolution)?.get(actionIndex);
  if (known === undefined) return undefined;
  const ids = log.idTable();
  for (let a = parent.actions.length; a < resolved.plan.actions.length; a++) {
    const span = resolved.plan.actions[a]!.span;
    let hint = -1;
    for (let i = 0; i < span.length; i++) {
      const id = span[i]!;
      const seq = hint + 1 < log.length && ids[hint + 1] === id ? hint + 1 : log.seqOf(id);
      if (seq === undefined) continue;
      hint = seq;
      if (parentResolution.actionAt[seq] === actionIndex && resolved.actionAt[seq] !== actionIndex)
        return undefined;
    }
  }
  return known;
}
