/**
 * Bringing externalized content back (docs/decisions/0014). Before a turn compacts, the engine looks at what was
 * appended since the thread's previous call — user and assistant text, and tool-call arguments (strings at any
 * depth of their JSON are in the raw argument text) — for the ids of artifacts this thread's plan externalized.
 * Each one referred to is read under the engine's security context, cut to a per-artifact cap, and shown after
 * the last message of this turn's request; what cannot be shown is reported with its reason. The decisions are
 * recorded with the call, so replay shows the same bytes and the cooldown holds across workers.
 */

import { AccessDeniedError } from "../errors/ledger-error.js";
import type { LogView } from "../log/log-view.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import type { ProviderFormat } from "../render/provider-rules.js";
import { RECALL_TOOL } from "../render/recall-tool.js";
import type { RehydratedArtifact } from "../render/render-prompt.js";
import type { ModelCallRecord } from "../stores/model-call-store.js";
import { rehydratedText } from "../texts/placeholders.js";
import { excerptText, textTokenCounter } from "../texts/text-excerpt.js";
import type { TokenBudget } from "../tokens/token-budget.js";
import type { EngineCore } from "./engine-core.js";
import type { RehydrationBlock, RehydrationBlockReason, RehydrationNote, TurnInput } from "./turn-options.js";

/** What a turn brings back: the artifacts to render, the tokens they take, and the report. */
export interface RehydrationPlan {
  readonly artifacts: ReadonlyArray<RehydratedArtifact>;
  readonly tokens: number;
  readonly rehydrated: ReadonlyArray<RehydrationNote>;
  readonly blocked: ReadonlyArray<RehydrationBlock>;
}

/** Nothing to bring back. */
export const NO_REHYDRATION: RehydrationPlan = Object.freeze({
  artifacts: [],
  tokens: 0,
  rehydrated: [],
  blocked: [],
});

/** Tokens of the message the renderer shows for an artifact brought back (header, content and framing). */
function shownTokens(core: EngineCore, artifactId: string, content: string, truncated: boolean): number {
  const text = rehydratedText(artifactId, content, truncated);
  return core.counter.countMessage({ role: "user", parts: [{ type: "text", text }] });
}

/** The ids of the artifacts `plan` externalized, in plan order. */
export function externalizedIds(plan: CompactionPlan): ReadonlyArray<string> {
  return [...externalizedTenants(plan).keys()];
}

/** The artifacts the plan externalized, each with the tenant it was written for (undefined in older plans). */
function externalizedTenants(plan: CompactionPlan): ReadonlyMap<string, string | undefined> {
  const ids = new Map<string, string | undefined>();
  for (const action of plan.actions) {
    if (action.kind === "externalize" && action.record.kind === "externalize")
      ids.set(action.record.artifactId, action.record.tenant);
  }
  return ids;
}

/**
 * The externalized artifacts referred to in messages [from, log.length), in the order of their last reference
 * (the latest last; within a message, by where in it). Only user and assistant messages count: a tool result
 * naming an id is not the model or the user asking for it, and a call of the `recall` tool is answered by its own
 * result.
 */
export function referencedArtifacts(log: LogView, from: number, known: ReadonlyArray<string>): string[] {
  if (known.length === 0) return [];
  // Where each id was named last: seq, part, then position in the text (the order the reader met them in).
  const last = new Map<string, readonly [number, number, number]>();
  for (let seq = Math.max(0, from); seq < log.length; seq++) {
    const message = log.at(seq)!;
    if (message.role !== "user" && message.role !== "assistant") continue;
    message.parts.forEach((part, p) => {
      // A `recall` call's own arguments are not a reference: its answer brings the artifact back already.
      const args = part.type === "tool_call" && part.name !== RECALL_TOOL.name ? part.args : undefined;
      const text = part.type === "text" ? part.text : args;
      if (text === undefined) return;
      for (const id of known) {
        const at = text.lastIndexOf(id);
        if (at >= 0) last.set(id, [seq, p, at]);
      }
    });
  }
  const order = (a: readonly number[], b: readonly number[]) =>
    a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!;
  return [...last.entries()].sort((a, b) => order(a[1], b[1])).map(([id]) => id);
}

/** The calls of a thread recorded last (newest last), at most `limit`. */
async function recentCalls(core: EngineCore, threadId: string, limit: number): Promise<ModelCallRecord[]> {
  if (limit <= 0) return [];
  const calls = core.stores.calls;
  if (calls.recent !== undefined) return [...(await calls.recent(threadId, limit))];
  return (await calls.list(threadId)).slice(-limit);
}

/**
 * What this turn brings back of the artifacts referred to since the thread's previous call: gated like an artifact
 * read, spared when brought back within the cooldown, cut to the per-artifact cap, and held to the turn's room for
 * them (`budget.rehydrationReserve` less what the caller rehydrates itself, or the engine's `rehydration.maxTokens`
 * when the budget keeps no reserve): over that, the largest are cut first, then the latest references win.
 */
export async function planRehydration(
  core: EngineCore,
  log: LogView,
  plan: CompactionPlan,
  budget: TokenBudget,
  explicitTokens: number,
  reserve: number,
): Promise<RehydrationPlan> {
  const settings = core.settings.rehydration;
  if (!settings.detect) return NO_REHYDRATION;
  const tenants = externalizedTenants(plan);
  const known = [...tenants.keys()];
  if (known.length === 0) return NO_REHYDRATION;
  const recent = await recentCalls(core, log.threadId, Math.max(1, settings.cooldownCalls));
  const from = recent.at(-1)?.logSeq ?? 0;
  const referenced = referencedArtifacts(log, from, known);
  if (referenced.length === 0) return NO_REHYDRATION;
  const cooling = new Set(
    recent.slice(-settings.cooldownCalls).flatMap((c) => (c.rehydrated ?? []).map((r) => r.artifactId)),
  );
  const blocked: RehydrationBlock[] = [];
  const count = textTokenCounter(core.counter);
  const candidates: Array<{ artifactId: string; content: string; tokens: number; truncated: boolean }> = [];
  for (const artifactId of referenced) {
    if (cooling.has(artifactId)) {
      blocked.push({ artifactId, reason: "cooldown" });
      continue;
    }
    const read = await readArtifact(core, artifactId, log.threadId, tenants.get(artifactId));
    if ("blocked" in read) {
      blocked.push({ artifactId, reason: read.blocked });
      continue;
    }
    const cut = excerptText(read.content, { maxTokens: settings.maxTokensPerArtifact, countTokens: count });
    const truncated = cut.omitted !== undefined;
    candidates.push({
      artifactId,
      content: cut.text,
      tokens: shownTokens(core, artifactId, cut.text, truncated),
      truncated,
    });
  }
  const room =
    reserve > 0
      ? reserve - explicitTokens
      : (settings.maxTokens ?? Math.min(8_000, Math.floor(budget.contextWindow * 0.05)));
  const kept = fitRoom(candidates, room, count, blocked, (c) =>
    shownTokens(core, c.artifactId, c.content, c.truncated),
  );
  return {
    artifacts: kept.map((c) => ({ artifactId: c.artifactId, content: c.content, truncated: c.truncated })),
    tokens: kept.reduce((n, c) => n + c.tokens, 0),
    rehydrated: kept.map((c) => ({ artifactId: c.artifactId, tokens: c.tokens, truncated: c.truncated })),
    blocked,
  };
}

/** The artifact's content, or why it cannot be shown. */
async function readArtifact(
  core: EngineCore,
  artifactId: string,
  threadId: string,
  writtenFor: string | undefined,
): Promise<{ readonly content: string } | { readonly blocked: RehydrationBlockReason }> {
  const context = { tenant: core.settings.tenant, clearance: core.settings.clearance };
  try {
    const artifact = await core.stores.artifacts.get(artifactId, context);
    // A store answers another tenant's artifact as not found (it never says it exists); the plan knows whose it is.
    if (artifact === undefined) {
      return { blocked: writtenFor !== undefined && writtenFor !== context.tenant ? "tenant" : "missing" };
    }
    // Another thread's artifact (or another tenant's, which reads as not found) is not this thread's to show.
    if (artifact.meta.threadId !== undefined && artifact.meta.threadId !== threadId)
      return { blocked: "missing" };
    return { content: artifact.content };
  } catch (error) {
    if (error instanceof AccessDeniedError) return { blocked: "sensitivity" };
    throw error;
  }
}

type Candidate = { artifactId: string; content: string; tokens: number; truncated: boolean };

/**
 * Holds the candidates (in reference order) to `room` tokens: while over, the largest is cut to half its size
 * (not below a useful 256 tokens); then the earliest references are left out until the rest fit.
 */
function fitRoom(
  candidates: Candidate[],
  room: number,
  count: (text: string) => number,
  blocked: RehydrationBlock[],
  shown: (c: Candidate) => number,
): Candidate[] {
  const total = () => candidates.reduce((n, c) => n + c.tokens, 0);
  for (let round = 0; round < 32 && total() > room; round++) {
    const largest = candidates.reduce<Candidate | undefined>(
      (a, c) => (a === undefined || c.tokens > a.tokens ? c : a),
      undefined,
    );
    if (largest === undefined || count(largest.content) <= 256) break;
    const target = Math.max(256, Math.floor(count(largest.content) / 2));
    const cut = excerptText(largest.content, { maxTokens: target, countTokens: count });
    largest.content = cut.text;
    largest.truncated = largest.truncated || cut.omitted !== undefined;
    largest.tokens = shown(largest);
  }
  while (candidates.length > 0 && total() > room) {
    blocked.push({ artifactId: candidates.shift()!.artifactId, reason: "budget" });
  }
  return candidates;
}

/** Tokens the caller's own rehydrated artifacts take (content and header). */
export function rehydratedTokens(core: EngineCore, artifacts: ReadonlyArray<RehydratedArtifact>): number {
  return artifacts.reduce((n, a) => n + shownTokens(core, a.artifactId, a.content, a.truncated === true), 0);
}

/**
 * The turn with what it brings back: the caller's artifacts then the referred ones, and, when the budget keeps no
 * reserve for them, their room taken from the history (a larger `rehydrationReserve` on this turn only).
 */
export function withRehydration<F extends ProviderFormat>(
  input: TurnInput<F>,
  budget: TokenBudget,
  plan: RehydrationPlan,
): { readonly input: TurnInput<F>; readonly budget: TokenBudget } {
  if (plan.artifacts.length === 0) return { input, budget };
  const rehydrated = [...input.inputs.rehydrated, ...plan.artifacts];
  return {
    input: { ...input, inputs: { ...input.inputs, rehydrated } },
    budget:
      input.rehydrationReserve > 0
        ? budget
        : Object.freeze({ ...budget, rehydrationReserve: budget.rehydrationReserve + plan.tokens }),
  };
}

/** `plan` with every artifact it would bring back left out for want of room. */
export function leftOut(plan: RehydrationPlan): RehydrationPlan {
  const blocked = [
    ...plan.blocked,
    ...plan.rehydrated.map((r) => ({ artifactId: r.artifactId, reason: "budget" as const })),
  ];
  return { ...NO_REHYDRATION, blocked };
}

/** Emits `rehydrated` for each artifact the request shows and `rehydration_blocked` for each one left out. */
export function announceRehydration(
  core: EngineCore,
  threadId: string,
  explicit: ReadonlyArray<RehydratedArtifact>,
  plan: RehydrationPlan,
): void {
  for (const a of explicit) {
    core.events.emit("rehydrated", threadId, { artifactId: a.artifactId, chars: a.content.length });
  }
  for (const a of plan.artifacts) {
    core.events.emit("rehydrated", threadId, {
      artifactId: a.artifactId,
      chars: a.content.length,
      detected: true,
      truncated: a.truncated === true,
    });
  }
  for (const b of plan.blocked) core.events.emit("rehydration_blocked", threadId, b);
}
