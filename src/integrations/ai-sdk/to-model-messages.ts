/**
 * A rendered prompt back into AI SDK messages. A message copied unchanged from the log comes back as the SDK
 * message it was made from (its `meta.aiSdk` note restores what the parts do not hold); a cleared one keeps its
 * provider options and takes its new text (a cleared tool result becomes a text output); synthetic messages
 * (summaries, pointers, stubs for pending calls, injections) become plain text messages and text tool results.
 */
import type {
  AssistantModelMessage,
  ModelMessage,
  SystemModelMessage,
  ToolModelMessage,
  UserModelMessage,
} from "ai";
import {
  type MediaPart,
  type Part,
  type RenderedMessage,
  type RenderedPrompt,
  textOf,
  ValidationError,
} from "../../index.js";
import { type DataForm, decodeData, type MessageNote, noteOf, type PartNote } from "./sdk-notes.js";
import type { JsonObject, LanguageModelPrompt } from "./sdk-types.js";

type UserPart = Exclude<UserModelMessage["content"], string>[number];
type AssistantPart = Exclude<AssistantModelMessage["content"], string>[number];
type ToolResultPart = Extract<ToolModelMessage["content"][number], { type: "tool-result" }>;
type ToolOutput = ToolResultPart["output"];
type ProviderOptions = NonNullable<ModelMessage["providerOptions"]>;

/** What `toModelMessages` reads: a rendered prompt, or anything with its messages. */
export type PromptLike = Pick<RenderedPrompt, "messages">;

function withOptions(options: JsonObject | undefined): { providerOptions?: ProviderOptions } {
  return options === undefined ? {} : { providerOptions: options as ProviderOptions };
}

/**
 * The note of each rendered part. A rendered message is its log message's parts in order, some left out (results
 * split between calls, held pending calls): call and result notes are matched by call id, the others in order.
 */
function alignNotes(parts: ReadonlyArray<Part>, notes: ReadonlyArray<PartNote> | undefined) {
  const out: Array<PartNote | undefined> = [];
  if (notes === undefined) return out;
  const byCall = new Map<string, PartNote>();
  const ordered: PartNote[] = [];
  for (const note of notes) {
    if (note.type === "tool_call" || note.type === "tool_result")
      byCall.set(`${note.type}:${note.callId}`, note);
    else ordered.push(note);
  }
  let next = 0;
  let aligned = true;
  for (const part of parts) {
    if (part.type === "tool_call" || part.type === "tool_result") {
      out.push(byCall.get(`${part.type}:${part.callId}`));
      continue;
    }
    const note = aligned ? ordered[next++] : undefined;
    // A note of another type means the parts are not the ones the notes were written for: stop trusting them.
    if (note !== undefined && note.type !== part.type) aligned = false;
    out.push(aligned ? note : undefined);
  }
  return out;
}

function parseArgs(args: string): unknown {
  try {
    return JSON.parse(args);
  } catch {
    // Arguments a plan cleared (or that never were JSON) go back as the text the model will read.
    return args;
  }
}

function mediaOf(part: MediaPart, note: PartNote | undefined): UserPart {
  if (note?.type === "media") {
    const data = decodeData(part.uri, note.data);
    const options = withOptions(note.providerOptions);
    if (note.sdkType === "image") {
      return {
        type: "image",
        image: data,
        ...(note.noMediaType ? {} : { mediaType: part.mediaType }),
        ...options,
      };
    }
    return {
      type: "file",
      data,
      mediaType: part.mediaType,
      ...(note.filename === undefined ? {} : { filename: note.filename }),
      ...(note.originalUrl === undefined ? {} : { originalUrl: note.originalUrl }),
      ...options,
    } as UserPart;
  }
  let url: URL | undefined;
  try {
    url = new URL(part.uri);
  } catch {
    return { type: "text", text: `[media ${part.mediaType}: ${part.uri}]` };
  }
  return part.mediaType.startsWith("image/")
    ? { type: "image", image: url, mediaType: part.mediaType }
    : { type: "file", data: url, mediaType: part.mediaType };
}

/** The SDK part an assistant text stood for (a file, a provider-executed tool call or result). */
function standIn(standsFor: JsonObject): AssistantPart {
  if (standsFor.type !== "file") return standsFor as unknown as AssistantPart;
  const { data, dataForm, ...rest } = standsFor;
  return { ...rest, data: decodeData(String(data), dataForm as DataForm) } as unknown as AssistantPart;
}

function outputOf(content: string, isError: boolean, note: PartNote | undefined, exact: boolean): ToolOutput {
  if (note?.type !== "tool_result" || !exact) {
    return { type: isError ? "error-text" : "text", value: content };
  }
  const options = withOptions(note.outputProviderOptions);
  switch (note.output) {
    case "text":
    case "error-text":
      return { type: note.output, value: content, ...options };
    case "json":
    case "error-json":
      return { type: note.output, value: JSON.parse(content), ...options };
    case "execution-denied":
      return { type: "execution-denied", ...(note.reason ? { reason: content } : {}), ...options };
    case "content":
      return { type: "content", value: note.value, ...options } as ToolOutput;
  }
}

/** Converts one rendered message; `toolNames` maps call ids to tool names, filled in as calls go by. */
function convertMessage(message: RenderedMessage, toolNames: Map<string, string>): ModelMessage {
  const note: MessageNote | undefined = message.provenance.synthetic ? undefined : noteOf(message.meta);
  const exact = message.provenance.kind === "original";
  const notes = alignNotes(message.parts, note?.parts);
  const options = withOptions(note?.providerOptions);
  const { parts } = message;
  switch (message.role) {
    case "system":
      return { role: "system", content: textOf(message), ...options } satisfies SystemModelMessage;
    case "user": {
      const content = parts.map((part, i): UserPart => {
        if (part.type === "media") return mediaOf(part, notes[i]);
        const text = part.type === "text" ? part.text : "";
        return {
          type: "text",
          text,
          ...withOptions(notes[i]?.type === "text" ? notes[i].providerOptions : undefined),
        };
      });
      return { role: "user", content: asString(content, note) ?? content, ...options };
    }
    case "assistant": {
      const content: AssistantPart[] = [];
      parts.forEach((part, i) => {
        const partNote = notes[i];
        const partOptions = withOptions(
          partNote?.type === "text" || partNote?.type === "reasoning" || partNote?.type === "tool_call"
            ? partNote.providerOptions
            : undefined,
        );
        if (part.type === "text") {
          if (exact && partNote?.type === "text" && partNote.standsFor !== undefined) {
            content.push(standIn(partNote.standsFor));
          } else content.push({ type: "text", text: part.text, ...partOptions });
        } else if (part.type === "reasoning") {
          content.push({ type: "reasoning", text: part.text, ...partOptions });
        } else if (part.type === "tool_call") {
          toolNames.set(part.callId, part.name);
          const noInput = partNote?.type === "tool_call" && partNote.noInput === true;
          content.push({
            type: "tool-call",
            toolCallId: part.callId,
            toolName: part.name,
            input: noInput ? undefined : parseArgs(part.args),
            ...partOptions,
          });
        }
      });
      return { role: "assistant", content: asString(content, note) ?? content, ...options };
    }
    case "tool": {
      const content: ToolResultPart[] = [];
      parts.forEach((part, i) => {
        if (part.type !== "tool_result") return;
        const partNote = notes[i];
        content.push({
          type: "tool-result",
          toolCallId: part.callId,
          toolName: toolNames.get(part.callId) ?? String(message.meta?.toolName ?? "tool"),
          output: outputOf(part.content, part.isError === true, partNote, exact),
          ...withOptions(partNote?.type === "tool_result" ? partNote.providerOptions : undefined),
        });
      });
      return { role: "tool", content, ...options };
    }
  }
}

/** The content as a string when the SDK message had a string and it is still one plain text part. */
function asString(
  content: ReadonlyArray<UserPart | AssistantPart>,
  note: MessageNote | undefined,
): string | undefined {
  if (note?.stringContent !== true || content.length !== 1) return undefined;
  const only = content[0]!;
  return only.type === "text" && only.providerOptions === undefined ? only.text : undefined;
}

/**
 * The AI SDK messages of a rendered prompt (`PreparedTurn.prompt`): the inverse of `fromModelMessages` for every
 * message the plan left as it was, and plain text for what compaction wrote (summaries, pointers, cleared results,
 * stubs for calls still pending). A tool result's `toolName` comes from its call, which the renderer always shows.
 *
 * @example
 * const turn = await engine.prepareTurn("t1", { format: "openai", budget: 20_000 });
 * const { text } = await generateText({ model, messages: toModelMessages(turn.prompt) });
 */
export function toModelMessages(prompt: PromptLike): ModelMessage[] {
  if (!Array.isArray(prompt?.messages)) {
    throw new ValidationError("toModelMessages takes a rendered prompt (PreparedTurn.prompt)", {
      field: "prompt.messages",
    });
  }
  const toolNames = new Map<string, string>();
  return prompt.messages.map((message) => convertMessage(message, toolNames));
}

/**
 * The provider-level prompt of a rendered prompt, for a language-model middleware: `toModelMessages` with the
 * normalizations the SDK makes before a model call (content always a list of parts, images as files).
 */
export function toLanguageModelPrompt(prompt: PromptLike): LanguageModelPrompt {
  return toModelMessages(prompt).map((message) => {
    if (message.role === "system" || message.role === "tool") return message;
    const content =
      typeof message.content === "string"
        ? [{ type: "text" as const, text: message.content }]
        : message.content;
    const parts = content.map((part) => {
      if (part.type !== "image") return part;
      const { image, mediaType, ...rest } = part;
      const data = image instanceof ArrayBuffer ? new Uint8Array(image) : image;
      return { ...rest, type: "file" as const, data, mediaType: mediaType ?? "image/*" };
    });
    return { ...message, content: parts };
  }) as LanguageModelPrompt;
}
