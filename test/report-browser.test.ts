/**
 * The audit report in a real browser (issue 17, item 9): the page written by `context-ledger report` loads in
 * headless Chromium with no console or page error, draws one chart mark per recorded call, shows a call's
 * request beside the messages it hid (checked against replay and explain), and its search follows a message
 * through every call. Log text holding markup stays text. Chromium is Debian's `chromium` package; without it
 * the test is skipped locally and fails in CI (`.ci/run` installs it).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createContextEngine } from "../src/context-engine.js";
import type { MessageFate } from "../src/index.js";
import { partsText } from "../src/report/index.js";
import { openSqliteStores } from "../src/stores/sqlite/index.js";
import { runInProcess } from "./support/cli-run.js";
import { buildReportThread, HOSTILE_TEXT, REPORT_MARKER } from "./support/report-thread.js";

const CANDIDATES = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"];
const executablePath = CANDIDATES.find((p): p is string => p !== undefined && p !== "" && existsSync(p));
const inCi = process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "false";

if (executablePath === undefined && !inCi) {
  console.warn(
    "report-browser.test.ts skipped: no Chromium found (install it with `apt-get install chromium`, or set CHROMIUM_PATH)",
  );
}

describe.runIf(executablePath === undefined && inCi)("the report's browser test in CI", () => {
  it("finds Chromium", () => {
    expect.fail("Chromium is not installed; CI must install Debian's chromium package (see .ci/run)");
  });
});

/** A text as the page's text block shows it before "show all": its first 600 characters. */
const shown = (text: string) => (text.length > 600 ? `${text.slice(0, 600)} …` : text);

/** Fate of one message at each call, as the engine's own explain says it. */
interface ExpectedCall {
  readonly planVersion: number;
  readonly logSeq: number;
  readonly requestMessages: number;
  readonly requestRoles: ReadonlyArray<string>;
  /** Each request message's text as the page shows it (the first 600 characters of a longer one). */
  readonly requestTexts: ReadonlyArray<string>;
  readonly hidden: ReadonlyArray<{ readonly seq: number; readonly state: MessageFate }>;
  readonly markerFate: MessageFate;
}

describe.runIf(executablePath !== undefined)("the audit report in headless Chromium", () => {
  let dir: string;
  let browser: Browser;
  let page: Page;
  let calls: number;
  let markerSeq: number;
  let hostileSeq: number;
  let committed: ReadonlyArray<number> = [];
  const expected: ExpectedCall[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ledger-report-"));
    const db = join(dir, "ledger.db");
    const thread = await buildReportThread(db);
    calls = thread.calls;
    const out = join(dir, "report.html");
    const run = await runInProcess(["report", "--db", db, "--thread", thread.threadId, "--out", out]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    // What the page must show, from the engine itself.
    const stores = await openSqliteStores({ path: db });
    try {
      const engine = createContextEngine({ stores, budget: { contextWindow: 1_000_000 } });
      committed = await stores.plans.versions(thread.threadId);
      for (const record of await stores.calls.list(thread.threadId)) {
        const replay = await engine.replay(record.callId);
        const explanation = await engine.explain(thread.threadId, { planVersion: record.planVersion });
        const marker = explanation.rows.find((r) => r.preview.includes("QZ-4471"))!;
        markerSeq = marker.seq;
        hostileSeq = explanation.rows.find((r) => r.id === "hostile")!.seq;
        expected.push({
          planVersion: record.planVersion,
          logSeq: record.logSeq,
          requestMessages: replay.prompt!.messages.length,
          requestRoles: replay.prompt!.messages.map((m) => m.role),
          requestTexts: replay.prompt!.messages.map((m) => shown(partsText(m.parts))),
          hidden: explanation.rows
            .filter((r) => r.seq < record.logSeq && r.state !== "kept")
            .map((r) => ({ seq: r.seq, state: r.state })),
          markerFate: marker.seq < record.logSeq ? marker.state : "kept",
        });
      }
    } finally {
      await stores.close();
    }
    browser = await chromium.launch({ executablePath: executablePath! });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(`console: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("dialog", (d) => {
      problems.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
    await page.goto(pathToFileURL(out).href);
    await page.waitForSelector("body[data-ready=true]", { timeout: 15_000 });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("loads with no console error, page error or dialog", async () => {
    expect(calls).toBeGreaterThan(5);
    expect(problems).toEqual([]);
  });

  it("draws one chart mark per call, compactions marked, and the budget line", async () => {
    expect(await page.locator("#chart svg .call-mark").count()).toBe(calls);
    const planChanges = expected.filter(
      (c, i) => c.planVersion !== (i === 0 ? 0 : expected[i - 1]!.planVersion),
    ).length;
    expect(planChanges).toBeGreaterThan(1);
    expect(await page.locator("#chart svg .call-mark.compacted").count()).toBe(planChanges);
    expect(await page.locator("#chart svg .compaction-mark").count()).toBe(planChanges);
    expect(await page.locator("#chart svg .budget-line").count()).toBe(1);
  });

  it("shows a call's request beside the messages it hid, with fate, strategy and reason", async () => {
    // The last call that hides something, chosen with the selector.
    const index = expected.findLastIndex((c) => c.hidden.length > 0);
    expect(index).toBeGreaterThanOrEqual(0);
    const call = expected[index]!;
    await page.selectOption("#call-select", String(index));
    await expect.poll(() => page.locator("#request > li").count()).toBe(call.requestMessages);
    const roles = await page.locator("#request > li .head span:nth-child(2)").allTextContents();
    expect(roles).toEqual(call.requestRoles);
    const texts = await page.locator("#request > li pre.text").allTextContents();
    expect(texts).toEqual(call.requestTexts);
    expect(await page.locator("#request .badge.summary, #request .badge.cleared").count()).toBeGreaterThan(0);
    const hidden = page.locator("#hidden > li");
    expect(await hidden.count()).toBe(call.hidden.length);
    const seqs = await hidden.evaluateAll((items) => items.map((li) => Number(li.getAttribute("data-seq"))));
    expect(seqs).toEqual(call.hidden.map((h) => h.seq));
    const fates = await page.locator("#hidden > li .head .badge").allTextContents();
    expect(fates).toEqual(call.hidden.map((h) => h.state));
    for (const why of await page.locator("#hidden > li .why").allTextContents())
      expect(why).toMatch(/\w+: \S/);
    expect(await page.locator("#call-info").textContent()).toContain("Replay verified");
  });

  it("selects a call when its chart mark is clicked", async () => {
    await page.locator('#chart .call-mark[data-call="0"]').click();
    expect(await page.locator("#call-select").inputValue()).toBe("0");
    expect(await page.locator("#request > li").count()).toBe(expected[0]!.requestMessages);
  });

  it("shows every call's request as replay renders it, role and text", async () => {
    for (const [index, call] of expected.entries()) {
      await page.selectOption("#call-select", String(index));
      await expect.poll(() => page.locator("#request > li").count()).toBe(call.requestMessages);
      const roles = await page.locator("#request > li .head span:nth-child(2)").allTextContents();
      expect(roles, `call ${index}`).toEqual(call.requestRoles);
      expect(await page.locator("#request > li pre.text").allTextContents(), `call ${index}`).toEqual(
        call.requestTexts,
      );
    }
  });

  it("search finds the message and lists its fate at every call", async () => {
    await page.fill("#search", REPORT_MARKER.slice(0, 7).toLowerCase());
    const result = page.locator("#search-results .result");
    await expect.poll(() => result.count()).toBe(1);
    expect(await result.getAttribute("data-seq")).toBe(String(markerSeq));
    expect(await result.locator("mark").textContent()).toBe(REPORT_MARKER.slice(0, 7));
    // Runs of calls with the same fate, in call order, must spell out the engine's fate at every call.
    const runs = await result.locator(".fate-run").evaluateAll((items) =>
      items.map((li) => ({
        calls: [...li.querySelectorAll("a")].map((a) => a.textContent),
        fate: li.querySelector(".badge")!.textContent,
      })),
    );
    const perCall: string[] = [];
    for (const run of runs) {
      const from = Number(run.calls[0]!.slice(1));
      const to = Number((run.calls[1] ?? run.calls[0])!.slice(1));
      for (let n = from; n <= to; n++) perCall.push(run.fate!);
    }
    expect(perCall).toEqual(expected.map((c) => c.markerFate));
    expect(perCall.some((f) => f !== "kept")).toBe(true);
  });

  it("lists every committed plan version with what it changed", async () => {
    const summaries = await page.locator("#plans details > summary").allTextContents();
    expect(summaries.map((t) => Number(/^v(\d+):/.exec(t)?.[1]))).toEqual([...committed]);
    for (const t of summaries)
      expect(t).toMatch(
        /: \d+ messages? changed \(\d+ (cleared|summarized|externalized|dropped|back to kept)/,
      );
  });

  it("keeps markup in the log as text", async () => {
    await page.fill("#search", "onerror");
    // The results change after a short pause; wait for the hostile message's own result.
    const snippet = page.locator(`#search-results .result[data-seq="${hostileSeq}"] .snippet`);
    await expect.poll(() => snippet.count()).toBe(1);
    expect(await snippet.textContent()).toContain('<img src=x onerror="window.__pwned=1">');
    expect(await page.locator("#injected").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(HOSTILE_TEXT).toContain("</script>");
    expect(problems).toEqual([]);
  });
});
