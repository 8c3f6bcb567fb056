/**
 * Writing the report file: the target is checked before the (possibly long) gathering, so a path that cannot
 * be written fails at once and names itself.
 */
import { accessSync, constants, statSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { ValidationError } from "../index.js";
import { gatherReport, type ReportSource } from "./report-data.js";
import { reportHtml } from "./report-html.js";

/** What `writeReport` wrote. */
export interface WrittenReport {
  readonly path: string;
  readonly bytes: number;
  readonly calls: number;
  readonly planVersions: number;
  readonly messages: number;
}

function unwritable(path: string, why: string, field: string): ValidationError {
  return new ValidationError(`cannot write the report to ${path}: ${why}`, { field });
}

/** Throws `ValidationError` naming `path` unless a file can be written there. */
export function checkWritable(path: string, field = "--out"): void {
  const full = resolve(path);
  const existing = statSync(full, { throwIfNoEntry: false });
  if (existing?.isDirectory() === true) throw unwritable(path, "it is a directory", field);
  const target = existing === undefined ? dirname(full) : full;
  const parent = statSync(dirname(full), { throwIfNoEntry: false });
  if (parent === undefined) throw unwritable(path, `the directory ${dirname(full)} does not exist`, field);
  if (!parent.isDirectory()) throw unwritable(path, `${dirname(full)} is not a directory`, field);
  try {
    accessSync(target, constants.W_OK);
  } catch (error) {
    throw unwritable(
      path,
      `${target} is not writable (${(error as NodeJS.ErrnoException).code ?? "EACCES"})`,
      field,
    );
  }
}

/** Gathers the thread's report and writes it as one HTML file. */
export async function writeReport(
  source: ReportSource,
  threadId: string,
  path: string,
): Promise<WrittenReport> {
  checkWritable(path);
  const data = await gatherReport(source, threadId);
  const html = reportHtml(data);
  try {
    writeFileSync(path, html, "utf8");
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    throw unwritable(path, e.code ?? e.message, "--out");
  }
  return {
    path,
    bytes: Buffer.byteLength(html, "utf8"),
    calls: data.calls.length,
    planVersions: data.plans.filter((p) => p.version > 0).length,
    messages: data.messages.length,
  };
}
