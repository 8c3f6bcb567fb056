/**
 * What a tool call was and what came of it, in one line each: the call actually made (tool name and its key
 * arguments, shortened) and its outcome (exit code, the error or exception, the test summary, else the first
 * meaningful line). Used by the extractive summarizer; pure and deterministic.
 */
import type { ToolCallPart } from "../../log/message.js";
import { normalizeItem } from "./summary-format.js";

/** The outcome of one call: its line, and whether it failed or reported tests. */
export interface CallOutcome {
  readonly text: string;
  readonly failed: boolean;
  /** The result reports test results (counts of passed / failed tests, `OK`, `FAILED`). */
  readonly tested: boolean;
}

const EXCEPTION_LINE = /^[\w.]*(?:Error|Exception|Failure)(?::|$)/;
const ERROR_LINE =
  /^(?:(?:error|fatal)\b\s*[:[]|(?:FAILED|ERROR)\b)|command not found|no such file or directory|permission denied|cannot find|not found:|segmentation fault/i;
const TEST_LINE =
  /\b\d+ (?:passed|failed|errors?|skipped|xfailed|passing|failing|tests? (?:passed|failed))\b|^Ran \d+ tests?\b|^(?:OK|FAILED)(?: \(.*\))?$|\btests? result: /i;
const EXIT_CODE = [
  /<returncode>\s*(-?\d+)\s*<\/returncode>/,
  /\bexit(?:ed with)? (?:code|status)[:= ]+(-?\d+)/i,
  /\breturn ?code[:= ]+(-?\d+)/i,
];
const TAG = /<\/?[A-Za-z_][\w-]*(?:\s[^<>]*)?>/g;

/** Shortens text to one line of at most `max` characters, with "…" when cut. */
export function clip(text: string, max: number): string {
  const one = normalizeItem(text);
  return one.length <= max ? one : `${one.slice(0, max - 1)}…`;
}

/**
 * `name(key=value, …)` with short values; a command shows its first line only, as that names what ran (a heredoc
 * shows the file it writes).
 */
export function callLabel(call: ToolCallPart): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(call.args);
  } catch {
    return `${call.name}(${clip(call.args, 100)})`;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    return `${call.name}(${clip(call.args, 100)})`;
  }
  const args = Object.entries(parsed).map(([key, value]) => {
    const text = typeof value === "string" ? firstLine(value) : JSON.stringify(value);
    return `${key}=${clip(text ?? "", 90)}`;
  });
  return `${call.name}(${clip(args.join(", "), 140)})`;
}

function firstLine(text: string): string {
  const lines = text.split(/\r?\n/).filter((line) => line.trim() !== "");
  const first = lines[0] ?? "";
  return lines.length > 1 ? `${first} …` : first;
}

/** Lines of a result that say something: markup removed, blank and punctuation-only lines skipped. */
function meaningful(content: string): string[] {
  return content
    .split(/\r?\n/)
    .map((line) => normalizeItem(line.replace(TAG, " ")))
    .filter((line) => /[A-Za-z0-9]/.test(line));
}

/** The outcome of a result: `exit N: error line; test line` when it failed or ran tests, else its first line. */
export function outcomeOf(content: string, isError = false): CallOutcome {
  const exit = EXIT_CODE.map((re) => re.exec(content)?.[1]).find((code) => code !== undefined);
  const lines = meaningful(content).filter((line) => line !== exit);
  // Python prints the exception last, after the traceback: the last such line is the one that matters.
  const errorLine =
    lines.findLast((line) => EXCEPTION_LINE.test(line)) ?? lines.find((l) => ERROR_LINE.test(l));
  const testLine = lines.findLast((line) => TEST_LINE.test(line));
  const failed =
    isError ||
    errorLine !== undefined ||
    (exit !== undefined && exit !== "0") ||
    /Traceback \(most recent call last\)/.test(content) ||
    jsonError(content);
  const said = [failed ? errorLine : undefined, testLine].filter((l): l is string => l !== undefined);
  const unique = [...new Set(said.map((l) => clip(l, 110)))];
  const body = unique.length > 0 ? unique.join("; ") : clip(lines[0] ?? "(empty result)", 90);
  const code = exit === undefined || exit === "0" ? "" : `exit ${exit}: `;
  return { text: `${failed ? "error: " : ""}${code}${body}`, failed, tested: testLine !== undefined };
}

/** True for a JSON result whose `error` field is set; a regex, since tools often cut their JSON short. */
function jsonError(content: string): boolean {
  const head = content.trimStart().slice(0, 300);
  return head.startsWith("{") && /"error"\s*:\s*(?:"[^"\s][^"]*"|true|\{)/.test(head);
}
