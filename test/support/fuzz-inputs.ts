/**
 * Inputs of the fuzz campaign (`npm run fuzz`, `test/fuzz.test.ts`): a seed picks a source conversation (a window of
 * a real trajectory, or a sample session), a valid prefix that is appended first, and a mutated rest, delivered as
 * an API batch (`engine.append`), a JSONL text, or the bytes of a JSONL file. Every mutation is named so a finding
 * says what was done to the input.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { exportTranscript } from "../../src/log/import-jsonl.js";
import type { MessageInput } from "../../src/log/message.js";
import { ThreadLog } from "../../src/log/thread-log.js";
import { generateSampleSession } from "../../src/sample/sample-session.js";
import { SeededRandom } from "../../src/sample/seeded-random.js";
import { trajectoriesAvailable, trajectoriesDir } from "./trajectories.js";

/** How a case's mutated part reaches the ledger. */
export type FuzzPath = "api" | "jsonl" | "bytes";
export type FuzzBackend = "memory" | "sqlite";

/** The mutated part of a case, in the shape its path delivers. */
export type FuzzPayload =
  | { readonly kind: "api"; readonly batch: ReadonlyArray<unknown> }
  | { readonly kind: "jsonl"; readonly text: string }
  /** `cli`: through the CLI's `ingest` on the SQLite file (else `readTranscriptFile` and the CLI's decoding). */
  | { readonly kind: "bytes"; readonly bytes: Uint8Array; readonly cli?: boolean };

/** One fuzz case, fully determined by its seed. */
export interface FuzzCase {
  readonly seed: number;
  readonly backend: FuzzBackend;
  /** Where the conversation came from (a trajectory file name, or `sample`). */
  readonly source: string;
  /** Appended unmutated before the payload (so "nothing written" is checked on a non-empty log). */
  readonly prefix: ReadonlyArray<MessageInput>;
  readonly payload: FuzzPayload;
  /** The mutations applied, in order. */
  readonly mutations: ReadonlyArray<string>;
  /** The request budget of the turns rendered when the payload is accepted (undefined: the engine's). */
  readonly budget: number | undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// sources

interface SourceLines {
  readonly name: string;
  readonly lines: ReadonlyArray<string>;
}

let trajectoryCache: ReadonlyArray<SourceLines> | undefined;

function listJsonl(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listJsonl(full));
    else if (entry.isFile() && entry.name.endsWith(".jsonl")) out.push(full);
  }
  return out.sort();
}

/** The real trajectories, line by line (empty when the shared folder is absent). */
export function trajectorySources(): ReadonlyArray<SourceLines> {
  if (trajectoryCache === undefined) {
    trajectoryCache = trajectoriesAvailable
      ? listJsonl(trajectoriesDir).map((path) => ({
          name: path.slice(trajectoriesDir.length + 1),
          lines: readFileSync(path, "utf8")
            .split("\n")
            .filter((l) => l.trim() !== ""),
        }))
      : [];
  }
  return trajectoryCache;
}

/** Real lines are long (system prompts of 10,000 characters): cut string values so a case stays fast. */
function shorten(value: unknown, rng: SeededRandom): unknown {
  if (typeof value === "string") return value.length > 600 ? value.slice(0, rng.int(50, 600)) : value;
  if (Array.isArray(value)) return value.map((v) => shorten(v, rng));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = shorten(v, rng);
    return out;
  }
  return value;
}

/** A conversation as JSONL records (plain objects), from a trajectory window or a sample session. */
function sourceRecords(rng: SeededRandom): { name: string; records: unknown[] } {
  const trajectories = trajectorySources();
  if (trajectories.length > 0 && rng.chance(0.6)) {
    const file = rng.pick(trajectories);
    // Mostly from the start (a valid conversation), sometimes from the middle (orphaned results and all).
    const start = rng.chance(0.75) ? 0 : rng.int(0, Math.max(0, file.lines.length - 2));
    const count = rng.int(2, 14);
    const lines = file.lines.slice(start, start + count);
    return { name: file.name, records: lines.map((l) => shorten(JSON.parse(l), rng)) };
  }
  const session = generateSampleSession({
    messages: rng.int(2, 16),
    seed: rng.int(1, 1_000_000),
    endPending: rng.chance(0.3),
  });
  const log = ThreadLog.from("sample", session);
  const text = exportTranscript(log);
  return {
    name: "sample",
    records: text
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => shorten(JSON.parse(l), rng)),
  };
}

/** The message input a JSONL record stands for (the API path mutates these), or the record when it is not one. */
function toInput(record: unknown, index: number): unknown {
  if (record === null || typeof record !== "object") return record;
  const r = record as Record<string, unknown>;
  const content = typeof r.content === "string" ? r.content : "";
  const id = `m${index}`;
  switch (r.role) {
    case "tool":
      return {
        id,
        role: "tool",
        parts: [{ type: "tool_result", callId: r.tool_call_id, content }],
        meta: { toolName: r.name ?? "tool" },
      };
    case "assistant": {
      const parts: unknown[] = [];
      if (typeof r.reasoning === "string") parts.push({ type: "reasoning", text: r.reasoning });
      const calls = Array.isArray(r.tool_calls) ? r.tool_calls : [];
      if (content !== "" || calls.length === 0) parts.push({ type: "text", text: content });
      for (const c of calls as Array<Record<string, unknown>>) {
        parts.push({ type: "tool_call", callId: c.id, name: c.name, args: c.arguments });
      }
      return { id, role: "assistant", parts };
    }
    default:
      return { id, role: r.role, parts: [{ type: "text", text: content }] };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// structural mutations (records and inputs alike)

type Path = ReadonlyArray<string | number>;

function pathsOf(value: unknown, path: Path = [], out: Path[] = [], depth = 0): Path[] {
  if (depth > 6) return out;
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      out.push([...path, i]);
      pathsOf(v, [...path, i], out, depth + 1);
    });
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      out.push([...path, k]);
      pathsOf(v, [...path, k], out, depth + 1);
    }
  }
  return out;
}

function getAt(root: unknown, path: Path): unknown {
  let v = root;
  for (const k of path) v = (v as Record<string | number, unknown>)[k];
  return v;
}

function setAt(root: unknown, path: Path, value: unknown): void {
  const parent = getAt(root, path.slice(0, -1)) as Record<string | number, unknown>;
  parent[path[path.length - 1]!] = value;
}

function deleteAt(root: unknown, path: Path): void {
  const parent = getAt(root, path.slice(0, -1));
  const key = path[path.length - 1]!;
  if (Array.isArray(parent) && typeof key === "number") parent.splice(key, 1);
  else delete (parent as Record<string | number, unknown>)[key];
}

const RETYPES: ReadonlyArray<readonly [string, () => unknown]> = [
  ["null", () => null],
  ["0", () => 0],
  ["-1", () => -1],
  ["1e308", () => 1e308],
  ["true", () => true],
  ['""', () => ""],
  ['"x"', () => "x"],
  ["[]", () => []],
  ["{}", () => ({})],
  ['[1,"a"]', () => [1, "a"]],
  ['{"type":"text"}', () => ({ type: "text" })],
];

/** Values only an API caller can pass (no JSON text holds them). */
const API_RETYPES: ReadonlyArray<readonly [string, () => unknown]> = [
  ["NaN", () => Number.NaN],
  ["Infinity", () => Number.POSITIVE_INFINITY],
  ["undefined", () => undefined],
  ["10n", () => 10n],
  ["a Date", () => new Date(0)],
  ["a function", () => () => 1],
  ["a symbol", () => Symbol("s")],
  ["a null-prototype object", () => Object.create(null)],
  [
    "a cycle",
    () => {
      const o: Record<string, unknown> = { type: "text", text: "x" };
      o.self = o;
      return o;
    },
  ],
  ["a long string", () => "y".repeat(70_000)],
  [
    "a sparse array",
    () => {
      const holes: unknown[] = [];
      holes[1] = 1;
      return holes;
    },
  ],
];

const ROLES: ReadonlyArray<unknown> = ["system", "user", "assistant", "tool", "developer", "function", "", 7];

const ODD_CHARS: ReadonlyArray<readonly [string, string]> = [
  ["NUL", "\u0000"],
  ["lone high surrogate", "\uD800"],
  ["lone low surrogate", "\uDFFF"],
  ["U+2028", "\u2028"],
  ["U+2029", "\u2029"],
  ["BOM", "\uFEFF"],
  ["CR", "\r"],
  ["LF", "\n"],
  ["astral", "\u{1F600}"],
];

/** A value nested `depth` deep (objects or arrays), built without recursion. */
export function deeplyNested(depth: number, arrays: boolean): unknown {
  let v: unknown = "leaf";
  for (let i = 0; i < depth; i++) v = arrays ? [v] : { d: v };
  return v;
}

/** A copy of the top levels of a value (deeper levels are shared; a 10,000-deep value would overflow a full clone). */
function cloneTop(value: unknown, depth = 0): unknown {
  if (depth > 6 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => cloneTop(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = cloneTop(v, depth + 1);
  return out;
}

/** A value in a mutation's name (any value: BigInt and cycles included). */
function show(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value).slice(0, 40);
  return typeof value === "bigint"
    ? `${value}n`
    : String(typeof value === "symbol" ? "a symbol" : typeof value);
}

const CALL_ID_KEYS = new Set(["tool_call_id", "callId", "id"]);

function callIdPaths(items: unknown[]): Path[] {
  return pathsOf(items).filter((p) => {
    const key = p[p.length - 1];
    if (typeof key !== "string" || !CALL_ID_KEYS.has(key)) return false;
    // A message's own `id` (depth 2) is not a call id; a tool call's `id` is deeper.
    return !(key === "id" && p.length === 2);
  });
}

/** Applies one random structural mutation to `items` (records or inputs) in place; returns its name. */
function mutateItems(items: unknown[], rng: SeededRandom, api: boolean): string {
  const op = rng.int(0, 10);
  const paths = pathsOf(items).filter((p) => p.length >= 2);
  switch (op) {
    case 0: {
      const p = paths.length > 0 ? rng.pick(paths) : undefined;
      if (p === undefined) return "none";
      deleteAt(items, p);
      return `delete ${p.join(".")}`;
    }
    case 1: {
      const p = paths.length > 0 ? rng.pick(paths) : undefined;
      if (p === undefined) return "none";
      const [name, make] = api && rng.chance(0.4) ? rng.pick(API_RETYPES) : rng.pick(RETYPES);
      setAt(items, p, make());
      return `retype ${p.join(".")} to ${name}`;
    }
    case 2: {
      if (items.length === 0) return "none";
      const i = rng.int(0, items.length - 1);
      const role = rng.pick(ROLES);
      const item = items[i];
      if (item !== null && typeof item === "object") (item as Record<string, unknown>).role = role;
      return `role of ${i} to ${JSON.stringify(role)}`;
    }
    case 3: {
      if (items.length < 2) return "none";
      const i = rng.int(0, items.length - 2);
      const j = rng.chance(0.5) ? i + 1 : rng.int(0, items.length - 1);
      [items[i], items[j]] = [items[j], items[i]];
      return `swap ${i} and ${j}`;
    }
    case 4: {
      if (items.length === 0) return "none";
      const i = rng.int(0, items.length - 1);
      items.splice(rng.int(0, items.length), 0, cloneTop(items[i]));
      return `duplicate ${i}`;
    }
    case 5:
    case 6: {
      const ids = callIdPaths(items);
      if (ids.length === 0) return "none";
      const p = rng.pick(ids);
      const other = rng.pick(ids);
      const value = rng.chance(0.5)
        ? getAt(items, other)
        : rng.pick(["unknown_call", "", "call_\u0000", "x".repeat(300)]);
      setAt(items, p, value);
      return `rewire ${p.join(".")} to ${show(value)}`;
    }
    case 7: {
      const strings = paths.filter((p) => typeof getAt(items, p) === "string");
      if (strings.length === 0) return "none";
      const p = rng.pick(strings);
      const s = getAt(items, p) as string;
      const [name, ch] = rng.pick(ODD_CHARS);
      const at = rng.int(0, s.length);
      setAt(items, p, s.slice(0, at) + ch + s.slice(at));
      return `insert ${name} into ${p.join(".")}`;
    }
    case 8: {
      if (items.length === 0) return "none";
      const i = rng.int(0, items.length - 1);
      const item = items[i];
      if (item === null || typeof item !== "object") return "none";
      const depth = rng.pick([50, 1_000, 10_000]);
      const arrays = rng.chance(0.3);
      const key = api ? "meta" : rng.pick(["meta", "content", "tool_calls", "extra"]);
      // JSON.stringify overflows long before 10,000 levels: JSONL records get a marker that toJsonl expands.
      (item as Record<string, unknown>)[key] = api
        ? arrays
          ? deeplyNested(depth, true)
          : { deep: deeplyNested(depth, false) }
        : `${DEEP_MARK}${depth}:${arrays ? "a" : "o"}`;
      return `nest ${key} of ${i} ${depth} deep`;
    }
    case 9: {
      if (items.length === 0) return "none";
      const i = rng.int(0, items.length - 1);
      if (api && rng.chance(0.4)) {
        // An id the thread already holds (the prefix's ids are m0, m1, …), or one at the length bound.
        const id = rng.pick(["m0", "m1", `m${i}`, "i".repeat(rng.pick([256, 257, 1_024, 100_000]))]);
        const item = items[i];
        if (item === null || typeof item !== "object") return "none";
        (item as Record<string, unknown>).id = id;
        return `id of ${i} to ${id.slice(0, 12)} (${id.length} chars)`;
      }
      items.splice(i, 1);
      return `drop ${i}`;
    }
    default: {
      if (items.length === 0) return "none";
      const i = rng.int(0, items.length - 1);
      const item = items[i];
      if (item === null || typeof item !== "object") return "none";
      const key = rng.pick(["surprise", "__proto__", "constructor", "toString"]);
      Object.defineProperty(item, key, {
        value: rng.pick(RETYPES)[1](),
        enumerable: true,
        configurable: true,
        writable: true,
      });
      return `add key ${key} to ${i}`;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// text and byte mutations

function mutateText(text: string, rng: SeededRandom): { text: string; name: string } {
  switch (rng.int(0, 4)) {
    case 0: {
      const at = rng.int(0, text.length);
      return { text: text.slice(0, at), name: `truncate at char ${at}` };
    }
    case 1: {
      const [name, ch] = rng.pick(ODD_CHARS);
      const at = rng.int(0, text.length);
      return { text: text.slice(0, at) + ch + text.slice(at), name: `raw ${name} at char ${at}` };
    }
    case 2:
      return { text: text.replaceAll("\n", rng.pick(["\r", "\r\n", "\n\n", "\u2028"])), name: "line breaks" };
    case 3: {
      const junk = rng.pick(["{", "}", "[]", "null", '{"role":', "\u0000", "garbage", '"\\ud800"']);
      const at = rng.int(0, text.length);
      return {
        text: text.slice(0, at) + junk + text.slice(at),
        name: `junk ${JSON.stringify(junk)} at ${at}`,
      };
    }
    default:
      return { text: `\uFEFF${text}`, name: "BOM" };
  }
}

const BAD_BYTES: ReadonlyArray<readonly [string, ReadonlyArray<number>]> = [
  ["0xFF", [0xff]],
  ["lone continuation", [0x80]],
  ["overlong NUL", [0xc0, 0x80]],
  ["encoded surrogate", [0xed, 0xa0, 0x80]],
  ["cut 3-byte sequence", [0xe2, 0x82]],
  ["past U+10FFFF", [0xf4, 0x90, 0x80, 0x80]],
  ["NUL byte", [0x00]],
];

function mutateBytes(bytes: Uint8Array, rng: SeededRandom): { bytes: Uint8Array; name: string } {
  const [name, bad] = rng.pick(BAD_BYTES);
  const at = rng.int(0, bytes.length);
  const out = new Uint8Array(bytes.length + bad.length);
  out.set(bytes.subarray(0, at), 0);
  out.set(bad, at);
  out.set(bytes.subarray(at), at + bad.length);
  return { bytes: out, name: `bytes ${name} at ${at}` };
}

const DEEP_MARK = "@@deep:";
const DEEP_MARKER = /"@@deep:(\d+):([ao])"/g;

function toJsonl(records: ReadonlyArray<unknown>): string {
  return records
    .map((r) => `${JSON.stringify(r) ?? "undefined"}\n`)
    .join("")
    .replace(DEEP_MARKER, (_, depth: string, kind: string) => {
      const n = Number(depth);
      return kind === "a" ? `${"[".repeat(n)}1${"]".repeat(n)}` : `${'{"d":'.repeat(n)}1${"}".repeat(n)}`;
    });
}

// ---------------------------------------------------------------------------------------------------------------
// cases

/** The case a seed stands for. */
export function generateCase(seed: number): FuzzCase {
  const rng = new SeededRandom(seed);
  const backend: FuzzBackend = rng.chance(0.5) ? "memory" : "sqlite";
  const { name, records } = sourceRecords(rng);
  const split = rng.chance(0.5) ? 0 : rng.int(0, Math.min(4, records.length - 1));
  const prefixRecords = records.slice(0, split);
  let prefix: MessageInput[] = [];
  try {
    // The prefix is what the log already holds; a window whose start is not a valid conversation has none.
    prefix = prefixRecords.map((r, i) => toInput(r, i) as MessageInput);
    ThreadLog.from("probe", prefix);
  } catch {
    prefix = [];
  }
  const rest = records.slice(prefix.length);
  const path: FuzzPath = rng.pick(["api", "api", "jsonl", "jsonl", "bytes"]);
  const mutations: string[] = [];
  const rounds = rng.chance(0.15) ? 0 : rng.int(1, 3);
  const budget = rng.pick([undefined, undefined, 800, 2_000, 6_000]);
  if (path === "api") {
    const batch = rest.map((r, i) => toInput(r, prefix.length + i));
    // The API takes ids from the caller; sometimes leave them to the log.
    if (rng.chance(0.3)) for (const item of batch) delete (item as Record<string, unknown>).id;
    for (let i = 0; i < rounds; i++) mutations.push(mutateItems(batch, rng, true));
    return { seed, backend, source: name, prefix, payload: { kind: "api", batch }, mutations, budget };
  }
  const items = [...rest];
  for (let i = 0; i < rounds; i++) mutations.push(mutateItems(items, rng, false));
  let text = toJsonl(items);
  if (rng.chance(0.5)) {
    const m = mutateText(text, rng);
    text = m.text;
    mutations.push(m.name);
  }
  if (path === "jsonl") {
    return { seed, backend, source: name, prefix, payload: { kind: "jsonl", text }, mutations, budget };
  }
  let bytes: Uint8Array = new TextEncoder().encode(text);
  if (rng.chance(0.7)) {
    const m = mutateBytes(bytes, rng);
    bytes = m.bytes;
    mutations.push(m.name);
  }
  // A fifth of the byte cases on SQLite go through the real CLI (in process) on the same database file.
  const cli = backend === "sqlite" && rng.chance(0.2);
  return { seed, backend, source: name, prefix, payload: { kind: "bytes", bytes, cli }, mutations, budget };
}

/** The payload with `keep` of its items (batch entries, or lines of text/bytes): what the shrinker tries. */
export function payloadItems(payload: FuzzPayload): number {
  if (payload.kind === "api") return payload.batch.length;
  if (payload.kind === "jsonl") return payload.text.split("\n").length;
  return splitBytes(payload.bytes).length;
}

function splitBytes(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let start = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0x0a) {
      out.push(bytes.subarray(start, i + 1));
      start = i + 1;
    }
  }
  out.push(bytes.subarray(start));
  return out;
}

/** The payload without its item at `index`. */
export function withoutItem(payload: FuzzPayload, index: number): FuzzPayload {
  if (payload.kind === "api") return { kind: "api", batch: payload.batch.filter((_, i) => i !== index) };
  if (payload.kind === "jsonl") {
    return {
      kind: "jsonl",
      text: payload.text
        .split("\n")
        .filter((_, i) => i !== index)
        .join("\n"),
    };
  }
  const parts = splitBytes(payload.bytes).filter((_, i) => i !== index);
  return { ...payload, bytes: Buffer.concat(parts) };
}

/** A short, printable form of a payload (for a finding's reproducer). */
export function describePayload(payload: FuzzPayload, max = 2_000): string {
  const cut = (s: string) => (s.length > max ? `${s.slice(0, max)}… (${s.length} chars)` : s);
  if (payload.kind === "api") {
    let json: string;
    try {
      json = JSON.stringify(payload.batch);
    } catch (error) {
      json = `(not serializable: ${(error as Error).message})`;
    }
    return `engine.append batch: ${cut(json)}`;
  }
  if (payload.kind === "jsonl") return `JSONL text: ${cut(JSON.stringify(payload.text))}`;
  return `${payload.cli === true ? "CLI ingest of " : ""}file bytes (base64): ${cut(Buffer.from(payload.bytes).toString("base64"))}`;
}
