/**
 * Turns the retention benchmark's tallies into figures: one row per system and budget, the markdown table, and
 * per budget the ratio of each context-ledger system to the best peer that stayed within budget and valid.
 */

import type { QualitySystem } from "./quality-systems.js";
import type { RunTally, Share } from "./quality-tally.js";
import { summarize } from "./stats.js";

/** The figures of one system at one budget share, over every run. */
export interface QualityRow {
  readonly system: string;
  readonly label: string;
  readonly family: QualitySystem["family"];
  readonly share: number;
  readonly factsIdentifier: number;
  readonly factsWord: number;
  readonly factsIdentifierMean: number;
  readonly factsWordMean: number;
  readonly callsVisible: number;
  readonly callsVisibleFinal: number;
  readonly pinned: number;
  readonly task: number;
  readonly reuse: number;
  readonly fill: number;
  readonly calls: number;
  readonly overBudget: number;
  readonly invalid: number;
  readonly failed: number;
  readonly msMedian: number;
  readonly notes: ReadonlyArray<string>;
}

const ratio = (s: Share): number => (s.of === 0 ? Number.NaN : s.hit / s.of);

/** A row of figures from a system's tally at one share. */
export function rowOf(system: QualitySystem, share: number, t: RunTally): QualityRow {
  return {
    system: system.key,
    label: system.label,
    family: system.family,
    share,
    factsIdentifier: ratio({ hit: t.finalKept.identifier, of: t.finalPlanted.identifier }),
    factsWord: ratio({ hit: t.finalKept.word, of: t.finalPlanted.word }),
    factsIdentifierMean: ratio({ hit: t.meanKept.identifier, of: t.meanPlanted.identifier }),
    factsWordMean: ratio({ hit: t.meanKept.word, of: t.meanPlanted.word }),
    callsVisible: ratio(t.callsVisible),
    callsVisibleFinal: ratio(t.finalCalls),
    pinned: ratio(t.pinned),
    task: ratio(t.task),
    reuse: ratio(t.reuse),
    fill: ratio(t.fill),
    calls: t.calls,
    overBudget: t.overBudget,
    invalid: t.invalid,
    failed: t.failed,
    msMedian: t.ms.length === 0 ? Number.NaN : summarize(t.ms).median,
    notes: t.notes.slice(0, 6),
  };
}

const pct = (x: number): string => (Number.isNaN(x) ? "–" : `${(x * 100).toFixed(1)} %`);

/** The markdown table of every row. */
export function qualityTable(rows: ReadonlyArray<QualityRow>): string {
  const head =
    "| budget | system | facts kept, identifier | facts kept, word | mean over calls (id / word) | tool calls visible | pinned verbatim | task verbatim | leading tokens reused | fill | over budget | invalid | failed | calls | ms/call |";
  const lines = [head, `|${"---|".repeat(15)}`];
  for (const r of rows) {
    lines.push(
      `| ${r.share * 100} % | ${r.label} | ${pct(r.factsIdentifier)} | ${pct(r.factsWord)} | ${pct(r.factsIdentifierMean)} / ${pct(r.factsWordMean)} | ${pct(r.callsVisible)} | ${pct(r.pinned)} | ${pct(r.task)} | ${pct(r.reuse)} | ${pct(r.fill)} | ${r.overBudget} | ${r.invalid} | ${r.failed} | ${r.calls} | ${r.msMedian.toFixed(2)} |`,
    );
  }
  return lines.join("\n");
}

/** The measures the targets compare against the best valid peer. */
export const RATIO_MEASURES = [
  ["factsIdentifier", "facts kept, identifier"],
  ["factsWord", "facts kept, word"],
  ["callsVisible", "tool calls visible"],
  ["pinned", "pinned verbatim"],
  ["task", "task verbatim"],
  ["reuse", "leading tokens reused"],
] as const;

/** One context-ledger system against the best valid peer on one measure at one share. */
export interface RatioRow {
  readonly share: number;
  readonly system: string;
  readonly measure: string;
  readonly value: number;
  readonly bestPeer: string;
  readonly peerValue: number;
  readonly ratio: number;
}

/** Peers with no request over budget and none invalid at this share. */
function validPeers(rows: ReadonlyArray<QualityRow>): QualityRow[] {
  return rows.filter((r) => r.family === "peer" && r.overBudget === 0 && r.invalid === 0);
}

/** Per share and measure: each context-ledger system over the best valid peer. */
export function ratios(rows: ReadonlyArray<QualityRow>): RatioRow[] {
  const out: RatioRow[] = [];
  for (const share of [...new Set(rows.map((r) => r.share))]) {
    const at = rows.filter((r) => r.share === share);
    const peers = validPeers(at);
    for (const ours of at.filter((r) => r.family === "context-ledger")) {
      for (const [field, measure] of RATIO_MEASURES) {
        const best = peers.reduce<QualityRow | undefined>(
          (b, p) => (b === undefined || p[field] > b[field] ? p : b),
          undefined,
        );
        const peerValue = best?.[field] ?? Number.NaN;
        const value = ours[field];
        out.push({
          share,
          system: ours.label,
          measure,
          value,
          bestPeer: best?.label ?? "none valid",
          peerValue,
          ratio: value / peerValue,
        });
      }
    }
  }
  return out;
}

/** The ratio table in markdown. */
export function ratioTable(rows: ReadonlyArray<RatioRow>): string {
  const lines = [
    "| budget | context-ledger system | measure | ours | best valid peer | peer | ours / peer |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const r of rows) {
    const x = Number.isFinite(r.ratio) ? `${r.ratio.toFixed(2)}×` : "–";
    lines.push(
      `| ${r.share * 100} % | ${r.system} | ${r.measure} | ${pct(r.value)} | ${r.bestPeer} | ${pct(r.peerValue)} | ${x} |`,
    );
  }
  return lines.join("\n");
}
