/**
 * A small hand-written SVG for the retention benchmark: one panel per measure (facts kept with an identifier,
 * facts kept as a plain word, tool calls visible), in each a group of bars per budget, one bar per system.
 */
import type { QualityRow } from "./quality-report.js";

const PANELS = [
  ["factsIdentifier", "Facts kept at the final call: identifiers"],
  ["factsWord", "Facts kept at the final call: plain words"],
  ["callsVisible", "Tool calls still visible (mean over calls)"],
] as const;

const COLORS = ["#1f6feb", "#54aeff", "#8250df", "#d4a72c", "#bf8700", "#e16f24", "#cf222e", "#6e7781"];
const WIDTH = 960;
const PANEL_HEIGHT = 220;
const LEFT = 50;
const LEGEND_HEIGHT = 24;

const escapeXml = (s: string): string =>
  s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

function bars(rows: ReadonlyArray<QualityRow>, field: (typeof PANELS)[number][0], top: number): string[] {
  const shares = [...new Set(rows.map((r) => r.share))];
  const systems = [...new Set(rows.map((r) => r.system))];
  const plotHeight = PANEL_HEIGHT - 60;
  const groupWidth = (WIDTH - LEFT - 20) / shares.length;
  const barWidth = (groupWidth - 30) / systems.length;
  const base = top + 30 + plotHeight;
  const out: string[] = [];
  for (const tick of [0, 0.5, 1]) {
    const y = base - tick * plotHeight;
    out.push(`<line x1="${LEFT}" x2="${WIDTH - 20}" y1="${y}" y2="${y}" stroke="#d0d7de"/>`);
    out.push(`<text x="${LEFT - 6}" y="${y + 4}" text-anchor="end">${tick * 100} %</text>`);
  }
  shares.forEach((share, g) => {
    const x0 = LEFT + g * groupWidth + 15;
    out.push(
      `<text x="${x0 + (groupWidth - 30) / 2}" y="${base + 16}" text-anchor="middle">budget ${share * 100} %</text>`,
    );
    systems.forEach((system, s) => {
      const value = rows.find((r) => r.share === share && r.system === system)?.[field] ?? Number.NaN;
      if (Number.isNaN(value)) return;
      const h = value * plotHeight;
      const x = x0 + s * barWidth;
      out.push(
        `<rect x="${x.toFixed(1)}" y="${(base - h).toFixed(1)}" width="${(barWidth - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${COLORS[s % COLORS.length]}"><title>${escapeXml(system)}: ${(value * 100).toFixed(1)} %</title></rect>`,
      );
    });
  });
  return out;
}

function legend(rows: ReadonlyArray<QualityRow>, y: number): string[] {
  const labels = [...new Map(rows.map((r) => [r.system, r.label])).values()];
  const columns = 3;
  return labels.map((label, i) => {
    const x = LEFT + (i % columns) * 300;
    const yy = y + Math.floor(i / columns) * 18;
    return `<rect x="${x}" y="${yy - 10}" width="12" height="12" fill="${COLORS[i % COLORS.length]}"/><text x="${x + 18}" y="${yy}">${escapeXml(label)}</text>`;
  });
}

/** The chart as an SVG document. */
export function qualityChart(rows: ReadonlyArray<QualityRow>, title: string): string {
  const legendRows = Math.ceil(new Set(rows.map((r) => r.system)).size / 3);
  const height = 40 + PANELS.length * PANEL_HEIGHT + legendRows * 18 + LEGEND_HEIGHT;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${LEFT}" y="22" font-size="14" font-weight="bold">${escapeXml(title)}</text>`,
  ];
  PANELS.forEach(([field, name], i) => {
    const top = 40 + i * PANEL_HEIGHT;
    parts.push(
      `<text x="${LEFT}" y="${top + 16}" font-size="12" font-weight="bold">${escapeXml(name)}</text>`,
    );
    parts.push(...bars(rows, field, top));
  });
  parts.push(...legend(rows, 40 + PANELS.length * PANEL_HEIGHT + 10));
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}
