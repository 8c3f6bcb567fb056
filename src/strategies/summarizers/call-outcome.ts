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

/** Characters of the main argument a call line shows: enough to tell one command from another. */
const MAIN_CHARS = 40;
/** Characters of each other argument, and of the whole argument list. */
const OTHER_CHARS = 24;
const ALL_CHARS = 100;

/**
 * `name(main, key=value, …)`: the main argument (the first non-blank string value, shown first and without its
 * key when it is the first argument) with whitespace collapsed and cut to 40 characters, so a multi-line command
 * shows how it starts rather than its first line alone; the other arguments shortened. Arguments that are not a
 * JSON object show as their raw text, shortened.
 */
export function callLabel(call: ToolCallPart): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(call.args);
  } catch {
    return `${call.name}(${clip(call.args, MAIN_CHARS)})`;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    return `${call.name}(${clip(call.args, MAIN_CHARS)})`;
  }
  const entries = Object.entries(parsed);
  const main = entries.findIndex(([, value]) => typeof value === "string" && value.trim() !== "");
  const shown =
    main < 0
      ? []
      : [`${main === 0 ? "" : `${entries[main]![0]}=`}${clip(String(entries[main]![1]), MAIN_CHARS)}`];
  entries.forEach(([key, value], i) => {
    if (i === main) return;
    const text = typeof value === "string" ? value : JSON.stringify(value);
    shown.push(`${key}=${clip(text ?? "", OTHER_CHARS)}`);
  });
  return `${call.name}(${clip(shown.join(", "), ALL_CHARS)})`;
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
