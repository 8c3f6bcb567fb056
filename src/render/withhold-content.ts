import { ClearanceError } from "../errors/ledger-error.js";
import type { LogView } from "../log/log-view.js";
import type { Part, Sensitivity } from "../log/message.js";
import { mayRead, sensitivityOfMessage, stricterOf } from "../log/sensitivity.js";
import type { RenderFormatVersion } from "../texts/placeholders.js";
import type { MessageCounter } from "../tokens/tokenizer.js";
import { finishPrompt, makeRendered } from "./prompt-hash.js";
import type { RenderedMessage, RenderedPrompt } from "./rendered-prompt.js";
import { recordedClassOf, setSpanClass, spanClassOf } from "./span-classes.js";

/**
 * What a read does with content above the reader's clearance: `placeholder` keeps the message with its content
 * replaced by a stub (tool calls and results keep their ids, so every provider's pairing rules still hold);
 * `refuse` throws `ClearanceError`.
 */
export type AboveClearancePolicy = "placeholder" | "refuse";

/** Who reads a rendered request, and what to do with content above their clearance. */
export interface ReaderClearance {
  readonly clearance: Sensitivity;
  readonly policy: AboveClearancePolicy;
}

/** The stub that stands for content of class `sensitivity` a reader may not see. */
export function withheldText(sensitivity: Sensitivity): string {
  return `[content withheld: ${sensitivity}, above this reader's clearance]`;
}

/**
 * The parts of a message withheld from its reader: text becomes one stub, a tool call keeps its id and name
 * with empty arguments, a tool result keeps its id (and error flag) with the stub as content, reasoning and
 * media go. A message left without parts gets the stub as text.
 */
export function withheldParts(parts: ReadonlyArray<Part>, sensitivity: Sensitivity): ReadonlyArray<Part> {
  const stub = withheldText(sensitivity);
  const out: Part[] = [];
  let text = false;
  for (const part of parts) {
    if (part.type === "text" && !text) {
      out.push({ type: "text", text: stub });
      text = true;
    } else if (part.type === "tool_call")
      out.push({ type: "tool_call", callId: part.callId, name: part.name, args: "{}" });
    else if (part.type === "tool_result") {
      out.push({
        type: "tool_result",
        callId: part.callId,
        content: stub,
        ...(part.isError === undefined ? {} : { isError: part.isError }),
      });
    }
  }
  return out.length === 0 ? [{ type: "text", text: stub }] : out;
}

/**
 * The strictest class among the log messages a rendered message stands for (`public` for none), and for a summary
 * or pointer the class its plan record names when that is stricter still.
 */
function classOf(message: RenderedMessage, log: LogView): Sensitivity {
  const { provenance } = message;
  if (provenance.kind === "injection" || provenance.kind === "rehydration") return "public";
  if (provenance.kind === "pending_stub" || provenance.kind === "drop_marker") return "public";
  if (!provenance.synthetic && message.meta !== undefined) return sensitivityOfMessage(message);
  const known = spanClassOf(provenance);
  if (known !== undefined) return known;
  // The plan record's class may only raise the span's: on a whole log its messages are read whatever it says. A
  // projection (restored from a checkpoint) takes the record's class: naming the span's ids would read the
  // checkpoint's tail, and the built-in strategies record the strictest class of what they condense. Without a
  // record's class, `at` of a message a projected log does not hold stops the operation, which then loads more of
  // the thread: a summary's class is never guessed.
  const recorded = recordedClassOf(provenance);
  if (recorded !== undefined && log.partial) {
    setSpanClass(provenance, recorded);
    return recorded;
  }
  let out: Sensitivity = recorded ?? "public";
  for (const id of out === "restricted" ? [] : provenance.sourceIds) {
    const seq = log.seqOf(id);
    const source = seq === undefined ? undefined : log.at(seq);
    if (source !== undefined) out = stricterOf(out, sensitivityOfMessage(source));
  }
  setSpanClass(provenance, out);
  return out;
}

/** The rendered messages above the reader's clearance: index and class. */
export function aboveClearance(
  prompt: RenderedPrompt,
  log: LogView,
  clearance: Sensitivity,
): ReadonlyArray<{ readonly index: number; readonly sensitivity: Sensitivity }> {
  if (clearance === "restricted") return [];
  const out: { index: number; sensitivity: Sensitivity }[] = [];
  prompt.messages.forEach((message, index) => {
    const sensitivity = classOf(message, log);
    if (!mayRead(sensitivity, clearance)) out.push({ index, sensitivity });
  });
  return out;
}

/**
 * Holds back what a rendered request carries above the reader's clearance, by the reader's policy: the same
 * prompt when nothing is above it; with `placeholder`, a prompt whose messages above it are stubs (same roles,
 * same call ids and provenance, recounted and rehashed); with `refuse`, `ClearanceError` naming the first such
 * message's source and class. Summaries and pointers take the strictest class of the messages they stand for.
 */
export function withholdAboveClearance(
  prompt: RenderedPrompt,
  log: LogView,
  reader: ReaderClearance,
  options: {
    readonly counter: MessageCounter;
    readonly formatVersion?: RenderFormatVersion;
    readonly what: string;
  },
): RenderedPrompt {
  const above = aboveClearance(prompt, log, reader.clearance);
  if (above.length === 0) return prompt;
  if (reader.policy === "refuse") {
    const first = above[0]!;
    const source = prompt.messages[first.index]!.provenance.sourceIds[0];
    throw new ClearanceError(
      `${options.what} refused: it would show ${first.sensitivity} content (${above.length} message${above.length === 1 ? "" : "s"}) to a reader with clearance ${reader.clearance}; raise the clearance, or use aboveClearance "placeholder" to see stubs instead`,
      { threadId: prompt.threadId, ...(source === undefined ? {} : { messageId: source }) },
    );
  }
  const messages = prompt.messages.slice();
  // The tool-use cycle in progress (after the request's last user message) must keep its signed thinking with its
  // calls, or Anthropic refuses the request: a stub there cannot stand in, whatever the policy.
  const lastUser = messages.findLastIndex((m) => m.role === "user");
  for (const { index, sensitivity } of above) {
    const m = messages[index]!;
    const signed = m.parts.some(
      (p) => p.type === "reasoning" && (p.signature !== undefined || p.redacted !== undefined),
    );
    if (index > lastUser && signed && m.parts.some((p) => p.type === "tool_call")) {
      const source = m.provenance.sourceIds[0];
      throw new ClearanceError(
        `${options.what} refused: the tool-use cycle in progress holds ${sensitivity} content with signed reasoning, which a reader with clearance ${reader.clearance} may not see and a stub cannot replace (the provider needs the signed block with its calls); raise the clearance, or answer the pending calls first`,
        { threadId: prompt.threadId, ...(source === undefined ? {} : { messageId: source }) },
      );
    }
    // Of the log's metadata only the class and tool name stay: a harness's own notes (an SDK's per-part fields)
    // describe the content withheld, and its parts no longer match them.
    const meta =
      m.meta === undefined
        ? undefined
        : {
            sensitivity,
            ...(typeof m.meta.toolName === "string" ? { toolName: m.meta.toolName } : {}),
          };
    messages[index] = makeRendered(
      m.role,
      withheldParts(m.parts, sensitivity),
      m.provenance,
      options.counter,
      undefined,
      meta,
    );
  }
  const finished = finishPrompt(
    { threadId: prompt.threadId, length: prompt.logSeq },
    { version: prompt.planVersion },
    messages,
    {
      counter: options.counter,
      ...(options.formatVersion === undefined ? {} : { formatVersion: options.formatVersion }),
    },
  );
  // Counted up to the first withheld message only (a lower bound: the previous request is not at hand here).
  let lead = 0;
  for (let i = 0; i < above[0]!.index; i++) lead += messages[i]!.tokens;
  return Object.freeze({
    ...finishedFields(finished),
    unchangedLeadingTokens: Math.min(lead, prompt.unchangedLeadingTokens),
  });
}

/** A prompt's fields as a plain object (its hash is a lazy getter: read it once here). */
function finishedFields(prompt: RenderedPrompt): RenderedPrompt {
  return {
    threadId: prompt.threadId,
    messages: prompt.messages,
    tokenCount: prompt.tokenCount,
    planVersion: prompt.planVersion,
    logSeq: prompt.logSeq,
    hash: prompt.hash,
    counterId: prompt.counterId,
    unchangedLeadingTokens: prompt.unchangedLeadingTokens,
    stablePrefixEnd: prompt.stablePrefixEnd,
  };
}
