import { hashMessageContent } from "../log/canonical-json.js";
import type { Message, Part, ToolResultPart } from "../log/message.js";
import type { ThreadLog } from "../log/thread-log.js";
import type { ClearRecord, ExternalizationRecord, SummarizationRecord } from "../plan/compaction-plan.js";

/** Version of the placeholder and synthetic-message texts; part of every render hash. */
export const RENDER_FORMAT_VERSION = "cl-render/3";

/** A human-readable size: `812 chars`, `48 KB`, `1.2 MB` (characters, 1 KB = 1024). */
export function formatSize(chars: number): string {
  if (chars < 1024) return `${chars} chars`;
  if (chars < 1024 * 1024) return `${Math.round(chars / 1024)} KB`;
  return `${(chars / (1024 * 1024)).toFixed(1)} MB`;
}

/** The body a cleared tool result gets: it keeps the tool name and the size of what was there. */
export function clearedResultText(toolName: string, chars: number): string {
  return `[result cleared: ${toolName}, ${formatSize(chars)}]`;
}

/** The arguments a cleared tool call gets: still a JSON object, as providers require. */
export function clearedArgsText(chars: number): string {
  return JSON.stringify({ _cleared: `arguments, ${formatSize(chars)}` });
}

/** Applies a clear record to one message. `toolNameOf` names the tool whose call a result part answers. */
export function clearMessage(
  message: Message,
  record: ClearRecord,
  toolNameOf: (part: ToolResultPart) => string,
): ReadonlyArray<Part> {
  return message.parts.map((part): Part => {
    switch (part.type) {
      case "tool_result":
        return { ...part, content: clearedResultText(toolNameOf(part), part.content.length) };
      case "tool_call":
        return record.clearArgs === true ? { ...part, args: clearedArgsText(part.args.length) } : part;
      case "text":
        // Text next to tool calls is the model's own narration; only messages without calls lose their text.
        return message.parts.some((p) => p.type === "tool_call")
          ? part
          : { type: "text", text: `[message cleared: ${formatSize(part.text.length)}]` };
      default:
        // Reasoning is never edited (signed blocks must stay byte-identical); media references are tiny.
        return part;
    }
  });
}

/** The text of the synthetic message standing for a summarized span. */
export function summaryText(record: SummarizationRecord, messageCount: number): string {
  return `[Summary of ${messageCount} earlier message${messageCount === 1 ? "" : "s"}]\n${record.summary}`;
}

/** The text of the synthetic message standing for an externalized span. */
export function pointerText(record: ExternalizationRecord, messageCount: number): string {
  const size = record.sizeChars === undefined ? "" : `, ${formatSize(record.sizeChars)}`;
  const head = `[Externalized: ${messageCount} message${messageCount === 1 ? "" : "s"} stored as artifact ${record.artifactId}${size}]`;
  const body = record.summary === "" ? "" : `\n${record.summary}`;
  return `${head}${body}\n(Reference artifact ${record.artifactId} to bring the full content back.)`;
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
export function pendingStub(log: ThreadLog, seq: number): PendingStub | undefined {
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
