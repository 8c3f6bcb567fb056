import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { ReportData } from "./report-data.js";
import { escapeHtml, reportHtml, scriptSafeJson } from "./report-html.js";

const hostile = `</script><img src=x onerror=alert(1)><!-- & \u2028 \u2029 '"`;

function data(text: string): ReportData {
  return {
    threadId: `t<1>"&`,
    generatedAt: "2030-01-01T00:00:00.000Z",
    texts: [text],
    actions: [["cleared", "toolResultRetention", "older than 2 turns"]],
    messages: [["m1", "user", 0, 12]],
    requests: [],
    plans: [
      { version: 0, changes: [] },
      { version: 1, changes: [[0, 0]] },
    ],
    calls: [],
  };
}

describe("the report page's escaping", () => {
  it("embeds JSON no text can break out of, and that parses back to the same value", () => {
    const json = scriptSafeJson({ text: hostile });
    expect(json).not.toMatch(/[<>&\u2028\u2029]/);
    expect(JSON.parse(json)).toEqual({ text: hostile });
  });

  it("escapes the thread id in the title and puts log text only inside the data element", () => {
    const html = reportHtml(data(hostile));
    expect(html).not.toContain("<img");
    expect(html).not.toContain('t<1>"&');
    expect(html).toContain(`<title>${escapeHtml('context-ledger audit report: thread t<1>"&')}</title>`);
    // Exactly the two script elements the page is made of: the data and the code.
    expect(html.match(/<script/g)).toHaveLength(2);
    expect(html.match(/<\/script>/g)).toHaveLength(2);
  });

  it("allows only its own script by hash and fetches nothing", () => {
    const html = reportHtml(data("plain"));
    const csp = (/Content-Security-Policy" content="([^"]+)"/.exec(html)?.[1] ?? "").replaceAll("&#39;", "'");
    const script = /<script>([\s\S]*)<\/script>/.exec(html)?.[1] ?? "";
    const hash = createHash("sha256").update(script).digest("base64");
    expect(csp).toBe(
      `default-src 'none'; script-src 'sha256-${hash}'; style-src 'unsafe-inline'; img-src data:`,
    );
    expect(html).not.toMatch(/\b(src|href)=["']?(https?:|\/\/)/);
  });
});
