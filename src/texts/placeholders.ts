import { hashMessageContent } from "../log/canonical-json.js";
import type { LogView } from "../log/log-view.js";
import type { Message, Part, ToolResultPart } from "../log/message.js";
import type { ClearRecord, ExternalizationRecord, SummarizationRecord } from "../plan/compaction-plan.js";

/**
 * Versions of the placeholder and synthetic-message texts, newest first; the version is part of every render hash.
 * `cl-render/4`: a pointer tells the model to call `recall` with the artifact id (or to name it). `cl-render/5`: a
 * cleared tool result names its call id for `recall`, and a summary says `recall` finds its messages by query.
 * The renderer can still render the versions listed, so replay verifies calls recorded under them.
 */
export const RENDER_FORMAT_VERSIONS = ["cl-render/5", "cl-render/4", "cl-render/3"] as const;

/** A render format version the renderer can produce. */
export type RenderFormatVersion = (typeof RENDER_FORMAT_VERSIONS)[number];

/** The version new renders use. */
export const RENDER_FORMAT_VERSION: RenderFormatVersion = RENDER_FORMAT_VERSIONS[0];

/** A human-readable size: `812 chars`, `48 KB`, `1.2 MB` (characters, 1 KB = 1024). */
export function formatSize(chars: number): string {
  if (chars < 1024) return `${chars} chars`;
  if (chars < 1024 * 1024) return `${Math.round(chars / 1024)} KB`;
  return `${(chars / (1024 * 1024)).toFixed(1)} MB`;
}

/** Whether a render format's placeholders name the way back (`recall` by call id or by query). */
export function namesWayBack(version: RenderFormatVersion): boolean {
  return version !== "cl-render/4" && version !== "cl-render/3";
}

/** How the model asks for a cleared result again: the `recall` tool with the call's id. */
export function recallCallHint(callId: string): string {
  return `recall callId ${JSON.stringify(callId)}`;
}

/** How a placeholder's first line ends when key lines follow it. */
const KEY_LINES_CLOSE = "; key lines:]";

function clearedHead(toolName: string, chars: number, callId: string | undefined): string {
  const way = callId === undefined ? "" : `; ${recallCallHint(callId)}`;
  return `[result cleared: ${toolName}, ${formatSize(chars)}${way}`;
}

/**
 * The body a cleared tool result gets: it keeps the tool name and the size of what was there and, given the call
 * id (as the renderer gives it from `cl-render/5` on), how to recall it. Without `callId` it is the text of
 * `cl-render/3` and `/4`, a few tokens shorter than the current one.
 */
export function clearedResultText(toolName: string, chars: number, callId?: string): string {
  return `${clearedHead(toolName, chars, callId)}]`;
}

/** The arguments a cleared tool call gets: still a JSON object, as providers require. */
export function clearedArgsText(chars: number): string {
  return JSON.stringify({ _cleared: `arguments, ${formatSize(chars)}` });
}

/**
 * The body a cleared tool result gets when some of its lines are kept: the placeholder, then the lines. Clear
 * records store it without `callId`; the renderer adds the call id to that header from `cl-render/5` on.
 */
export function keyLinesResultText(
  toolName: string,
  chars: number,
  lines: ReadonlyArray<string>,
  callId?: string,
): string {
  return `${clearedHead(toolName, chars, callId)}${KEY_LINES_CLOSE}\n${lines.join("\n")}`;
}

/**
 * A cleared result's excerpt as `cl-render/5` shows it: as recorded when it is the whole result or names the call
 * id already (the marker of an oversized result's head and tail does); a placeholder stored without the call id
 * (a clear record's key lines or replayable stamp start with `[result cleared: name, size`) with the call id put
 * in its first line, before `; key lines:]` or its closing bracket; any other excerpt with a line after it saying
 * how to recall the whole result.
 */
function excerptWithWayBack(excerpt: string, toolName: string, part: ToolResultPart): string {
  const hint = recallCallHint(part.callId);
  // An excerpt that is the whole result (a small part beside an oversized one) left nothing out.
  if (excerpt === part.content || excerpt.includes(hint)) return excerpt;
  const head = clearedHead(toolName, part.content.length, undefined);
  const lineEnd = excerpt.indexOf("\n") < 0 ? excerpt.length : excerpt.indexOf("\n");
  const first = excerpt.slice(0, lineEnd);
  if (first.startsWith(head) && first.endsWith("]")) {
    const close = first.endsWith(KEY_LINES_CLOSE) ? first.length - KEY_LINES_CLOSE.length : first.length - 1;
    return `${first.slice(0, close)}; ${hint}${excerpt.slice(close)}`;
  }
  return `${excerpt}\n[${hint} for the whole result]`;
}

/**
 * The body a cleared replayable result gets: the placeholder with the determinism stamp of what was there (a
 * version, etag, mtime or content hash) and how to get it back, then any key lines. It reaches the request as a
 * clear record's excerpt (plan data), so it is not part of the render format.
 */
export function stampedResultText(
  toolName: string,
  chars: number,
  stamp: string,
  lines: ReadonlyArray<string> = [],
): string {
  const head = `[result cleared: ${toolName}, ${formatSize(chars)}; replayable, ${stamp}: call again to see it`;
  return lines.length === 0 ? `${head}]` : `${head}; key lines:]\n${lines.join("\n")}`;
}

/** Per clear record (frozen plan data): its excerpts by message id, then by part index. */
const excerptIndex = new WeakMap<ClearRecord, ReadonlyMap<string, ReadonlyMap<number, string>>>();

function indexOf(record: ClearRecord): ReadonlyMap<string, ReadonlyMap<number, string>> {
  let index = excerptIndex.get(record);
  if (index === undefined) {
    const built = new Map<string, Map<number, string>>();
    for (const e of record.excerpts ?? []) {
      const byPart = built.get(e.messageId) ?? new Map<number, string>();
      byPart.set(e.partIndex ?? 0, e.text);
      built.set(e.messageId, byPart);
    }
    index = built;
    excerptIndex.set(record, index);
  }
  return index;
}

/** Per clear record with `onlyParts` (frozen plan data): the part indices it clears, by message id. */
const onlyIndex = new WeakMap<ClearRecord, ReadonlyMap<string, ReadonlySet<number>>>();

/** The part indices a clear record clears in one message; undefined when it clears every part. */
function onlyPartsOf(message: Message, record: ClearRecord): ReadonlySet<number> | undefined {
  if (record.onlyParts === undefined) return undefined;
  let index = onlyIndex.get(record);
  if (index === undefined) {
    const built = new Map<string, Set<number>>();
    for (const ref of record.onlyParts) {
      const set = built.get(ref.messageId) ?? new Set<number>();
      set.add(ref.partIndex);
      built.set(ref.messageId, set);
    }
    index = built;
    onlyIndex.set(record, index);
  }
  return index.get(message.id) ?? new Set();
}

/**
 * The excerpts a clear record gives one message, by part index (undefined when it gives none). A record can hold
 * thousands of excerpts (one retention step clears many results): they are indexed once per record, not searched
 * per message.
 */
function excerptsOf(message: Message, record: ClearRecord): ReadonlyMap<number, string> | undefined {
  if (record.excerpts === undefined || record.excerpts.length === 0) return undefined;
  return indexOf(record).get(message.id);
}

/**
 * Applies a clear record to one message. `toolNameOf` names the tool whose call a result part answers. `parts`
 * (default: all of the message's) are the parts rendered here, in order: a tool message answering calls of
 * several assistant messages is rendered in pieces, and excerpts name parts by their index in the whole message.
 * A `tool_result` or `text` part the record has an excerpt for shows the excerpt's text; other parts get their
 * placeholder, so a record without excerpts renders exactly as before excerpts existed. From `cl-render/5` on
 * (`version`), a result's placeholder or excerpt names its call id for `recall`. A record with `onlyParts`
 * changes only the parts it lists (a listed call loses its arguments, a listed reasoning part is left out).
 */
export function clearMessage(
  message: Message,
  record: ClearRecord,
  toolNameOf: (part: ToolResultPart) => string,
  parts: ReadonlyArray<Part> = message.parts,
  version: RenderFormatVersion = RENDER_FORMAT_VERSION,
): ReadonlyArray<Part> {
  const excerpts = excerptsOf(message, record);
  const hasCalls = message.parts.some((p) => p.type === "tool_call");
  const wayBack = namesWayBack(version);
  const only = onlyPartsOf(message, record);
  const indexOfPart = (part: Part, i: number) => (parts === message.parts ? i : message.parts.indexOf(part));
  const cleared = parts.map((part, i): Part | undefined => {
    const at = indexOfPart(part, i);
    if (only !== undefined) {
      if (!only.has(at)) return part;
      if (part.type === "reasoning") return undefined;
      if (part.type === "tool_call") return { ...part, args: clearedArgsText(part.args.length) };
    }
    const excerpt = excerpts?.get(at);
    switch (part.type) {
      case "tool_result": {
        const name = toolNameOf(part);
        const chars = part.content.length;
        if (excerpt !== undefined) {
          return { ...part, content: wayBack ? excerptWithWayBack(excerpt, name, part) : excerpt };
        }
        return { ...part, content: clearedResultText(name, chars, wayBack ? part.callId : undefined) };
      }
      case "tool_call":
        return record.clearArgs === true ? { ...part, args: clearedArgsText(part.args.length) } : part;
      case "text":
        if (excerpt !== undefined) return { type: "text", text: excerpt };
        // Text next to tool calls is the model's own narration; only messages without calls lose their text
        // (unless a record listing parts names it).
        return hasCalls && only === undefined
          ? part
          : { type: "text", text: `[message cleared: ${formatSize(part.text.length)}]` };
      default:
        // Reasoning is never edited (signed blocks must stay byte-identical); media references are tiny.
        return part;
    }
  });
  return only === undefined ? (cleared as Part[]) : cleared.filter((p): p is Part => p !== undefined);
}

/**
 * The text of the synthetic message standing for a summarized span; from `cl-render/5` on its header says that
 * `recall` finds the summarized messages by query.
 */
export function summaryText(
  record: SummarizationRecord,
  messageCount: number,
  version: RenderFormatVersion = RENDER_FORMAT_VERSION,
): string {
  const what = `${messageCount} earlier message${messageCount === 1 ? "" : "s"}`;
  const way = namesWayBack(version) ? "; recall by query" : "";
  return `[Summary of ${what}${way}]\n${record.summary}`;
}

/**
 * The text of the marker standing for a run of dropped messages (`cl-render/5` on; earlier formats leave a drop
 * without a trace): how many were left out, and that `recall` finds them by query.
 */
export function droppedText(messageCount: number): string {
  return `[${messageCount} earlier message${messageCount === 1 ? "" : "s"} left out; recall by query]`;
}

/** The text of the synthetic message standing for an externalized span. */
export function pointerText(
  record: ExternalizationRecord,
  messageCount: number,
  version: RenderFormatVersion = RENDER_FORMAT_VERSION,
): string {
  const size = record.sizeChars === undefined ? "" : `, ${formatSize(record.sizeChars)}`;
  const head = `[Externalized: ${messageCount} message${messageCount === 1 ? "" : "s"} stored as artifact ${record.artifactId}${size}]`;
  const body = record.summary === "" ? "" : `\n${record.summary}`;
  const id = record.artifactId;
  const hint =
    version === "cl-render/3"
      ? `(Reference artifact ${id} to bring the full content back.)`
      : `(To see the full content, call the recall tool with artifactId "${id}", or name ${id} in your reply.)`;
  return `${head}${body}\n${hint}`;
}

/** The body of a stub result for a call that has no result yet. */
export function pendingResultText(toolName: string): string {
  return `[result pending: ${toolName} has not returned yet]`;
}

/**
 * The stub results the renderer sends right after a message whose calls have no result yet (empty when none is
 * pending). Strategies use the same function to count what the stubs will cost.
 */
export function pendingStubParts(
  message: Message,
  pendingCalls: ReadonlyMap<string, { readonly seq: number }>,
): ToolResultPart[] {
  const stubs: ToolResultPart[] = [];
  for (const part of message.parts) {
    if (part.type === "tool_call" && pendingCalls.get(part.callId)?.seq === message.seq) {
      stubs.push({ type: "tool_result", callId: part.callId, content: pendingResultText(part.name) });
    }
  }
  return stubs;
}

/** The stub result message of a call message's pending calls: its parts and content hash. */
export interface PendingStub {
  readonly parts: ReadonlyArray<ToolResultPart>;
  readonly hash: string;
}

// Per call message, its stub, the history it was made in (a message object can be shared by two histories forked
// from one log) and the number of result messages answering it then. Within one history results only ever
// arrive, so that number moving is exactly when the set of pending calls of the message can have changed. Like a
// log message's own hash, the stub is derived from the log alone, so the renderer and the strategies' accounting
// (whatever their counter) share it and it is hashed once.
const stubs = new WeakMap<
  Message,
  { readonly history: ArrayLike<string>; readonly answered: number; readonly stub: PendingStub | undefined }
>();

/**
 * The stub for the pending calls of the message at `seq` (as `pendingStubParts` builds it), or undefined when
 * none of its calls is pending.
 */
export function pendingStub(log: LogView, seq: number): PendingStub | undefined {
  const message = log.at(seq)!;
  const answered = log.resultsOf(seq).length;
  const history = log.idTable();
  const known = stubs.get(message);
  if (known !== undefined && known.answered === answered && known.history === history) return known.stub;
  const parts = pendingStubParts(message, log.pendingCalls);
  const stub =
    parts.length === 0 ? undefined : Object.freeze({ parts, hash: hashMessageContent("tool", parts) });
  stubs.set(message, { history, answered, stub });
  return stub;
}

/** The message text of an artifact brought back into a request: a header naming it, then its content. */
export function rehydratedText(artifactId: string, content: string, truncated: boolean): string {
  return `[Rehydrated artifact ${artifactId}${truncated ? " (truncated)" : ""}]\n${content}`;
}
