/**
 * What a run of the agent harness did, and how it is printed: the figures the harness exits on (rejections,
 * turns, replays) and the ones that show how compaction and calibration went.
 */
import type { Calibration, MessageFate } from "../src/index.js";
import type { ReferenceFigures } from "./reference-tally.js";

/** What a run of the agent harness did. */
export interface HarnessSummary {
  /** Turns answered by the server. */
  readonly turns: number;
  readonly requests: number;
  /** Requests the server turned away, each with its error; must be empty. */
  readonly rejections: ReadonlyArray<string>;
  readonly userMessages: number;
  readonly toolCalls: number;
  readonly messagesLogged: number;
  /** Turns whose `prepareTurn` committed a new plan. */
  readonly compactedTurns: number;
  /** The last plan version: plans committed by turns and by background summarization. */
  readonly planVersion: number;
  /** What the last plan does with the logged messages. */
  readonly fates: Readonly<Record<MessageFate, number>>;
  readonly contextWindow: number;
  /** Largest request (prompt + requested output) by the server's own count. */
  readonly maxRequestTokens: number;
  /** Largest request by the engine's count, before calibration. */
  readonly maxEngineTokens: number;
  readonly calibration: Calibration;
  /** Range of the per-call ratio of the server's prompt tokens to the engine's estimate. */
  readonly observedRatio: Readonly<{ min: number; max: number }>;
  /** Requests after tool calls, and those that carried all of the newest results unchanged. */
  readonly latestResults: Readonly<{ checked: number; intact: number }>;
  readonly replays: Readonly<{ checked: number; ok: number }>;
  /** The model's references back to compacted content (recall calls, ids it named) and what came of them. */
  readonly references: ReferenceFigures;
  readonly durationMs: number;
}

/** The summary as a few readable lines. */
export function formatSummary(s: HarnessSummary): string {
  const pct = ((100 * s.maxRequestTokens) / s.contextWindow).toFixed(1);
  const f = s.fates;
  return [
    `turns        ${s.turns} (${s.userMessages} user messages, ${s.toolCalls} tool calls, ${s.messagesLogged} messages logged)`,
    `requests     ${s.requests}, rejections ${s.rejections.length}`,
    ...s.rejections.map((r) => `  rejected   ${r}`),
    `compactions  ${s.compactedTurns} turns compacted; plan v${s.planVersion} in the end (kept ${f.kept}, cleared ${f.cleared}, summarized ${f.summarized}, externalized ${f.externalized}, dropped ${f.dropped})`,
    `largest      ${s.maxRequestTokens} of ${s.contextWindow} tokens by the server's count (${pct}%, reply reserve included); ${s.maxEngineTokens} by the engine's`,
    `calibration  ratio ${s.calibration.ratio.toFixed(3)} over the last ${s.calibration.samples} calls (per call ${s.observedRatio.min.toFixed(3)}–${s.observedRatio.max.toFixed(3)})`,
    `newest       ${s.latestResults.intact}/${s.latestResults.checked} requests carried the newest tool results unchanged`,
    ...referenceLines(s.references),
    `replay       ${s.replays.ok}/${s.replays.checked} ok`,
    `time         ${(s.durationMs / 1000).toFixed(1)} s`,
  ].join("\n");
}

/** The references' lines: how many were honoured, by channel, and what held the others back. */
function referenceLines(r: ReferenceFigures): string[] {
  const pct = r.honourable === 0 ? "-" : `${((100 * r.honoured) / r.honourable).toFixed(1)}%`;
  const c = r.byChannel;
  const held = Object.entries(r.outcomes)
    .filter(([outcome]) => outcome !== "honoured")
    .map(([outcome, n]) => `${outcome} ${n}`)
    .join(", ");
  return [
    `references   ${r.made} made, ${r.honoured} honoured: ${r.honoured}/${r.honourable} of those the engine should honour (${pct})`,
    `  by kind    recall by id ${c.recallId.honoured}/${c.recallId.made}, recall by query ${c.recallQuery.honoured}/${c.recallQuery.made}, id named in text or arguments ${c.named.honoured}/${c.named.made}`,
    `  held back  ${held === "" ? "none" : held}; ${r.rehydratedAfterRecall} recalled ids also rehydrated on the next call`,
    ...r.failures.map((f) => `  FAILED     ${f}`),
  ];
}

/**
 * True when the run failed: a rejection, too few turns, a replay that did not match, or a reference the engine
 * should have honoured that got nothing.
 */
export function harnessFailed(s: HarnessSummary, turns: number): boolean {
  return (
    s.rejections.length > 0 ||
    s.turns < turns ||
    s.replays.ok !== s.replays.checked ||
    s.references.failures.length > 0
  );
}
