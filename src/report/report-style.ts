/** The report page's style sheet, inlined in the page (no external resource, so it works offline). */
export const REPORT_STYLE = `
:root { --kept: #4a7c59; --cleared: #c28a1e; --summarized: #3d6fb6; --externalized: #8a4fb0; --dropped: #b8433a;
  --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --panel: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); margin: 0; padding: 16px 24px 40px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 24px 0 8px; } h3 { font-size: 14px; margin: 0 0 6px; }
.muted { color: var(--muted); }
section { border-top: 1px solid var(--line); }
#chart svg { width: 100%; height: auto; display: block; cursor: pointer; }
.axis { stroke: var(--line); } .tick-label { font-size: 11px; fill: var(--muted); }
.tokens-line { fill: none; stroke: #6e7781; stroke-width: 1; }
.budget-line { fill: none; stroke: var(--dropped); stroke-width: 1.5; }
.target-line { fill: none; stroke: var(--cleared); stroke-width: 1; stroke-dasharray: 5 4; }
.call-mark { fill: #57606a; } .call-mark.compacted { fill: var(--summarized); }
.call-mark.selected { stroke: #000; stroke-width: 2; r: 6; }
.compaction-mark { stroke: var(--summarized); stroke-width: 1; stroke-dasharray: 2 3; opacity: 0.55; }
.legend span { margin-right: 16px; } .swatch { display: inline-block; width: 18px; height: 3px; vertical-align: middle; margin-right: 4px; }
.call-nav { display: flex; gap: 8px; align-items: center; margin-bottom: 8px; }
.call-nav select { max-width: 60ch; }
#call-info { margin-bottom: 10px; }
.columns { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; align-items: start; }
.messages { list-style: none; margin: 0; padding: 0; }
.messages li { border: 1px solid var(--line); border-radius: 6px; margin-bottom: 6px; background: #fff; }
.messages .head { display: flex; flex-wrap: wrap; gap: 6px; align-items: baseline; padding: 4px 8px; background: var(--panel); border-radius: 6px 6px 0 0; font-size: 12px; }
.messages .why { padding: 2px 8px; font-size: 12px; color: var(--muted); }
pre.text { margin: 0; padding: 6px 8px; white-space: pre-wrap; word-break: break-word; font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; max-height: 420px; overflow: auto; }
button.more { margin: 0 8px 6px; font-size: 12px; }
.badge { display: inline-block; padding: 0 6px; border-radius: 10px; font-size: 11px; color: #fff; background: #6e7781; }
.badge.kept, .badge.original { background: var(--kept); } .badge.cleared { background: var(--cleared); }
.badge.summarized, .badge.summary { background: var(--summarized); } .badge.externalized, .badge.pointer { background: var(--externalized); }
.badge.dropped { background: var(--dropped); } .badge.absent { background: #afb8c1; }
.ok { color: var(--kept); } .bad { color: var(--dropped); font-weight: 600; }
#search { width: 100%; max-width: 520px; padding: 6px 8px; font-size: 14px; }
.result { border: 1px solid var(--line); border-radius: 6px; padding: 6px 8px; margin: 8px 0; }
.result mark { background: #fff3a3; }
.fate-runs { margin: 4px 0 0; padding-left: 18px; font-size: 12px; }
.fate-runs a, .plan-changes a { cursor: pointer; color: #0969da; }
.plan { margin: 6px 0; } .plan summary { cursor: pointer; }
.plan-changes { font-size: 12px; margin: 4px 0 8px 18px; padding: 0; }
@media (max-width: 900px) { .columns { grid-template-columns: 1fr; } }
`;
