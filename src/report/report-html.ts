/**
 * The report as one self-contained HTML page: inline style, inline script, the data as embedded JSON. Nothing
 * is fetched, so the page works offline from a file. A Content-Security-Policy allows only the page's own
 * script (by hash) and inline style: were log text ever to reach the page as markup, its handlers and images
 * would not run or load.
 */
import { createHash } from "node:crypto";
import type { ReportData } from "./report-data.js";
import { REPORT_SCRIPT } from "./report-script.js";
import { REPORT_STYLE } from "./report-style.js";

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Escapes text for an HTML text node or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/**
 * JSON that is safe inside a `<script>` element: no `<`, `>` or `&` can close the element or open a comment, and
 * U+2028/U+2029 are escaped too. `JSON.parse` reads the escapes back as the same characters.
 */
export function scriptSafeJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

function cspHash(script: string): string {
  return `'sha256-${createHash("sha256").update(script, "utf8").digest("base64")}'`;
}

/** The report page for the gathered data. */
export function reportHtml(data: ReportData): string {
  const title = `context-ledger audit report: thread ${data.threadId}`;
  const csp = `default-src 'none'; script-src ${cspHash(REPORT_SCRIPT)}; style-src 'unsafe-inline'; img-src data:`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${REPORT_STYLE}</style>
</head>
<body>
<header>
<h1>${escapeHtml(title)}</h1>
<p id="summary" class="muted"></p>
</header>
<section id="chart-section">
<h2>Tokens sent per model call</h2>
<div id="chart"></div>
<p class="legend muted"><span><i class="swatch" style="background:#6e7781"></i>prompt tokens sent</span><span><i class="swatch" style="background:#b8433a"></i>budget (available for the prompt)</span><span><i class="swatch" style="background:#c28a1e"></i>compaction target</span><span><i class="swatch" style="background:#3d6fb6"></i>call that committed a new plan version</span> Click a call to see it.</p>
</section>
<section id="search-section">
<h2>Where did it go?</h2>
<input id="search" type="search" placeholder="text in any log message (at least 2 characters)" aria-label="search the log">
<div id="search-results"></div>
</section>
<section id="call-section">
<h2>What the model saw</h2>
<div class="call-nav"><button id="prev" type="button">◀</button><select id="call-select" aria-label="model call"></select><button id="next" type="button">▶</button></div>
<div id="call-info"></div>
<div class="columns">
<div><h3>The request as sent <span id="request-count" class="muted"></span></h3><ol id="request" class="messages"></ol></div>
<div><h3>Log messages it did not show verbatim <span id="hidden-count" class="muted"></span></h3><ol id="hidden" class="messages"></ol></div>
</div>
</section>
<section id="plans-section">
<h2>Plan versions</h2>
<div id="plans"></div>
</section>
<script type="application/json" id="report-data">${scriptSafeJson(data)}</script>
<script>${REPORT_SCRIPT}</script>
</body>
</html>
`;
}
