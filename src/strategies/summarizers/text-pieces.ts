/**
 * The pieces of message text the extractive summarizer weighs: prose cut into sentences (code blocks and markup
 * left out), a message's opening, the strings inside call arguments, and the references a text mentions (URLs,
 * file paths, artifact ids). Pure functions of the text.
 */
import { normalizeItem } from "./summary-format.js";

/** A markup tag (`<output>`, `</div>`): not prose. */
export const TAG = /<\/?[A-Za-z_][\w-]*(?:\s[^<>]*)?>/g;
/** File names of code and data, which a path-like token must end with to count as a file. */
const CODE_EXTENSIONS =
  /\.(?:py|js|mjs|ts|tsx|jsx|json|md|txt|ya?ml|toml|c|h|cc|cpp|hpp|go|rs|java|rb|sh|pony|csv|html|css|sql|ini|cfg|xml|log)$/;

/** Sentences of prose: code blocks and markup tags removed, one entry per sentence or line. */
export function sentences(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?(?:```|$)/g, "\n").replace(TAG, "\n");
  const out: string[] = [];
  for (const rawLine of prose.split(/\r?\n/)) {
    const line = rawLine
      .replace(/^\s*(?:[-*\u2022>]|\d+[.)])\s+/, "")
      .replace(/^(?:THOUGHT|Thought|DISCUSSION|Discussion):\s*/, "")
      .trim();
    for (const sentence of line.split(/(?<=[.!?])\s+(?=[A-Z0-9`"'([])/)) {
      const s = normalizeItem(sentence);
      if (s.length >= 8 && /[A-Za-z].*[A-Za-z].*[A-Za-z]/.test(s)) out.push(s);
    }
  }
  return out;
}

/** The opening of a message: its first one or two sentences, skipping lead-ins such as "Here is the issue:". */
export function firstSentences(found: ReadonlyArray<string>): string | undefined {
  const content = found.filter((s) => !s.endsWith(":"));
  const pool = content.length > 0 ? content : found;
  const first = pool[0];
  const second = pool[1];
  return second !== undefined && first !== undefined && first.length < 80 ? `${first} ${second}` : first;
}

/** The strings inside a call's JSON arguments; the whole text when it is not JSON. */
export function argStrings(args: string): string[] {
  try {
    const strings: string[] = [];
    const walk = (value: unknown): void => {
      if (typeof value === "string") strings.push(value);
      else if (value !== null && typeof value === "object") Object.values(value).forEach(walk);
    };
    walk(JSON.parse(args));
    return strings;
  } catch {
    return [args];
  }
}

/** URLs, file paths and artifact ids mentioned in a text, in order of first mention. */
export function referencesIn(text: string): string[] {
  const out: string[] = [];
  for (const match of text.matchAll(/\bartifact[ :]+((?=[\w:.-]*[\d_:-])[\w:.-]{3,}\w)/gi))
    out.push(`artifact ${match[1]}`);
  const urls = [...text.matchAll(/\bhttps?:\/\/[^\s"'`<>)\]}]+/g)].map((m) => m[0].replace(/[.,;:!?]+$/, ""));
  out.push(...urls);
  const rest = text.replace(/\bhttps?:\/\/[^\s"'`<>)\]}]+/g, " ");
  for (const raw of rest.split(/[\s"'`()<>[\]{},;=]+/)) {
    // Trailing punctuation and `:line[:column]` suffixes are not part of a path.
    const token = raw.replace(/[.:!?]+$/, "").replace(/:\d+(?::\d+)?$/, "");
    if (isPath(token)) out.push(token);
  }
  return out;
}

function isPath(token: string): boolean {
  if (token.length < 3 || token.length > 200 || !/[A-Za-z]/.test(token)) return false;
  if (/^(?:~|\.{1,2})?\/?[\w.@+-]+(?:\/[\w.@+-]+)+\/?$/.test(token)) {
    return /^(?:~|\.{1,2})?\//.test(token) || CODE_EXTENSIONS.test(token);
  }
  return /^[\w.-]+$/.test(token) && /^[A-Za-z_]/.test(token) && CODE_EXTENSIONS.test(token);
}
