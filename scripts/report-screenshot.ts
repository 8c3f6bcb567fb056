/**
 * Makes `docs/report.png`, the README's picture of `context-ledger report`: builds the report test's thread
 * (a seeded sample session, compacted at a tight budget), writes its report, opens it in headless Chromium
 * (Debian's `chromium`, or CHROMIUM_PATH), searches for the planted marker and photographs the page.
 *
 *   npx tsx scripts/report-screenshot.ts [OUT.png]
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import { runInProcess } from "../test/support/cli-run.js";
import { buildReportThread, REPORT_MARKER } from "../test/support/report-thread.js";

async function main(): Promise<void> {
  const target = resolve(process.argv[2] ?? "docs/report.png");
  const executablePath = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"].find(
    (p): p is string => p !== undefined && p !== "" && existsSync(p),
  );
  if (executablePath === undefined)
    throw new Error("no Chromium: apt-get install chromium, or set CHROMIUM_PATH");
  const dir = mkdtempSync(join(tmpdir(), "ledger-report-shot-"));
  try {
    const db = join(dir, "ledger.db");
    const { threadId } = await buildReportThread(db, { steps: 24 });
    const out = join(dir, "report.html");
    const run = await runInProcess(["report", "--db", db, "--thread", threadId, "--out", out]);
    if (run.code !== 0) throw new Error(run.stderr);
    const browser = await chromium.launch({ executablePath });
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 1500 }, deviceScaleFactor: 1 });
      await page.goto(pathToFileURL(out).href);
      await page.waitForSelector("body[data-ready=true]");
      await page.fill("#search", REPORT_MARKER.slice(0, 7));
      await page.waitForSelector("#search-results .result");
      await page.screenshot({ path: target, fullPage: false });
    } finally {
      await browser.close();
    }
    console.log(`wrote ${target}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
