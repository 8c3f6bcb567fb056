/**
 * AI SDK messages into the log: each `ModelMessage` (or provider-level prompt message) becomes one log message
 * whose parts hold what the model reads — text, reasoning (with its signature), tool calls with their input as
 * JSON text, tool results as text, user images and files as media — and whose `meta.aiSdk` note keeps the rest
 * (provider options, data forms, output kinds), so `toModelMessages` gives the same message back.
 */
import { type MessageInput, type MessageMeta, type Part, ValidationError } from "../../index.js";
import { checkSdkMessage } from "./model-message-schema.js";
import {
  encodeData,
  jsonOf,
  type MessageNote,
  NOTE_KEY,
  type OutputKind,
  optionsOf,
  type PartNote,
  type Where,
} from "./sdk-notes.js";
import type { JsonObject, JsonValue, SdkMessage } from "./sdk-types.js";

/** A part of any SDK message, as the schema checked it (fields read by name). */
type SdkPart = { readonly type: string; readonly [key: string]: unknown };

/** A log part and its note; no part for SDK parts the model never reads (tool approvals). */
interface Converted {
  readonly part?: Part;
  readonly note?: PartNote;
}

/** The reasoning fields, per provider, that make a block opaque: sent back byte for byte or not at all. */
const SIGNATURE_FIELDS: ReadonlyArray<readonly [string, string, string]> = [
  ["anthropic", "signature", "redactedData"],
  ["bedrock", "signature", "redactedData"],
  ["openai", "itemId", "reasoningEncryptedContent"],
  ["google", "thoughtSignature", ""],
  ["vertex", "thoughtSignature", ""],
];

/** The signature and redacted payload of a reasoning part, from its provider options (first provider that has one). */
function signatureOf(options: JsonObject | undefined): { signature?: string; redacted?: string } {
  for (const [provider, signatureKey, redactedKey] of SIGNATURE_FIELDS) {
    const entry = options?.[provider];
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) continue;
    const signature = entry[signatureKey];
    const redacted = redactedKey === "" ? undefined : entry[redactedKey];
    if (typeof signature !== "string" && typeof redacted !== "string") continue;
    return {
      ...(typeof signature === "string" ? { signature } : {}),
      ...(typeof redacted === "string" ? { redacted } : {}),
    };
  }
  return {};
}

/** The tool output as the text the model reads, whether it is an error, and what the note keeps. */
function outputOf(
  output: SdkPart,
  where: Where,
): { content: string; isError: boolean; kind: OutputKind; reason?: true; value?: JsonValue } {
  const kind = output.type as OutputKind;
  switch (kind) {
    case "text":
      return { content: output.value as string, isError: false, kind };
    case "error-text":
      return { content: output.value as string, isError: true, kind };
    case "json":
    case "error-json": {
      const value = jsonOf(output.value, { ...where, field: `${where.field}.value` });
      return { content: JSON.stringify(value), isError: kind === "error-json", kind };
    }
    case "execution-denied": {
      const reason = output.reason as string | undefined;
      return reason === undefined
        ? { content: "Tool execution denied.", isError: true, kind }
        : { content: reason, isError: true, kind, reason: true };
    }
    case "content": {
      const value = jsonOf(output.value, { ...where, field: `${where.field}.value` }) as JsonObject[];
      return { content: value.map(contentItemText).join("\n"), isError: false, kind, value };
    }
  }
}

/** The text a model reads for one item of a `content` tool output (media items as a short stand-in). */
function contentItemText(item: JsonObject): string {
  if (item.type === "text") return String(item.text ?? "");
  const what = String(item.type);
  const detail = item.mediaType ?? item.url ?? item.fileId ?? "";
  const name = typeof item.filename === "string" ? ` ${item.filename}` : "";
  return `[${what}${detail === "" ? "" : ` ${typeof detail === "string" ? detail : JSON.stringify(detail)}`}${name}]`;
}

/** The text a log holds for an assistant part it cannot hold as such (a file, a provider-executed tool). */
function standInText(part: SdkPart, where: Where): { text: string; standsFor: JsonObject } {
  const options = optionsOf(part.providerOptions, where);
  const withOptions = options === undefined ? {} : { providerOptions: options };
  if (part.type === "file") {
    const mediaType = part.mediaType as string;
    const encoded = encodeData(part.data, mediaType);
    const filename = typeof part.filename === "string" ? part.filename : undefined;
    return {
      text: `[file ${mediaType}${filename === undefined ? "" : ` ${filename}`}]`,
      standsFor: {
        type: "file",
        mediaType,
        data: encoded.uri,
        dataForm: encoded.form,
        ...(filename === undefined ? {} : { filename }),
        ...(typeof part.originalUrl === "string" ? { originalUrl: part.originalUrl } : {}),
        ...withOptions,
      },
    };
  }
  const toolCallId = part.toolCallId as string;
  const toolName = part.toolName as string;
  if (part.type === "tool-call") {
    const input =
      part.input === undefined ? undefined : jsonOf(part.input, { ...where, field: `${where.field}.input` });
    return {
      text: `[${toolName} call ${toolCallId}] ${input === undefined ? "" : JSON.stringify(input)}`,
      standsFor: {
        type: "tool-call",
        toolCallId,
        toolName,
        ...(input === undefined ? {} : { input }),
        ...(part.providerExecuted === undefined
          ? {}
          : { providerExecuted: part.providerExecuted as boolean }),
        ...withOptions,
      },
    };
  }
  // A provider-executed tool's result, inside the assistant message.
  const output = part.output as SdkPart;
  const { content } = outputOf(output, { ...where, field: `${where.field}.output` });
  return {
    text: `[${toolName} result ${toolCallId}] ${content}`,
    standsFor: {
      type: "tool-result",
      toolCallId,
      toolName,
      output: jsonOf(output, { ...where, field: `${where.field}.output` }),
      ...withOptions,
    },
  };
}

function convertPart(part: SdkPart, role: SdkMessage["role"], where: Where): Converted {
  const options = optionsOf(part.providerOptions, where);
  const withOptions = options === undefined ? {} : { providerOptions: options };
  switch (part.type) {
    case "text":
      return { part: { type: "text", text: part.text as string }, note: { type: "text", ...withOptions } };
    case "reasoning":
      return {
        part: { type: "reasoning", text: part.text as string, ...signatureOf(options) },
        note: { type: "reasoning", ...withOptions },
      };
    case "image":
    case "file": {
      if (role === "assistant") {
        const { text, standsFor } = standInText(part, where);
        return { part: { type: "text", text }, note: { type: "text", standsFor } };
      }
      const given = part.mediaType as string | undefined;
      const mediaType = given ?? "image/*";
      const encoded = encodeData(part.type === "image" ? part.image : part.data, mediaType);
      return {
        part: {
          type: "media",
          mediaType,
          uri: encoded.uri,
          ...(encoded.sizeBytes === undefined ? {} : { sizeBytes: encoded.sizeBytes }),
        },
        note: {
          type: "media",
          sdkType: part.type,
          data: encoded.form,
          ...(given === undefined ? { noMediaType: true as const } : {}),
          ...(typeof part.filename === "string" ? { filename: part.filename } : {}),
          ...(typeof part.originalUrl === "string" ? { originalUrl: part.originalUrl } : {}),
          ...withOptions,
        },
      };
    }
    case "tool-call": {
      if (part.providerExecuted === true) {
        const { text, standsFor } = standInText(part, where);
        return { part: { type: "text", text }, note: { type: "text", standsFor } };
      }
      const callId = part.toolCallId as string;
      const noInput = part.input === undefined;
      const args = noInput
        ? ""
        : JSON.stringify(jsonOf(part.input, { ...where, field: `${where.field}.input` }));
      return {
        part: { type: "tool_call", callId, name: part.toolName as string, args },
        note: { type: "tool_call", callId, ...(noInput ? { noInput: true as const } : {}), ...withOptions },
      };
    }
    case "tool-result": {
      if (role === "assistant") {
        const { text, standsFor } = standInText(part, where);
        return { part: { type: "text", text }, note: { type: "text", standsFor } };
      }
      const callId = part.toolCallId as string;
      const output = part.output as SdkPart;
      const out = outputOf(output, { ...where, field: `${where.field}.output` });
      const outputOptions = optionsOf(output.providerOptions, where, ".output.providerOptions");
      return {
        part: {
          type: "tool_result",
          callId,
          content: out.content,
          ...(out.isError ? { isError: true } : {}),
        },
        note: {
          type: "tool_result",
          callId,
          output: out.kind,
          ...(out.reason === undefined ? {} : { reason: out.reason }),
          ...(out.value === undefined ? {} : { value: out.value }),
          ...(outputOptions === undefined ? {} : { outputProviderOptions: outputOptions }),
          ...withOptions,
        },
      };
    }
    default:
      // Tool approval requests and responses: the SDK settles them before the model call and sends the model
      // none of them, so the log has nothing to keep.
      return {};
  }
}

/** Whether a part's note says nothing its log part does not (the way back reads such a part the same). */
function isPlain(note: PartNote, part: Part): boolean {
  const keys = Object.keys(note);
  switch (note.type) {
    case "text":
    case "reasoning":
      return keys.length === 1;
    case "tool_call":
      return keys.length === 2;
    case "tool_result": {
      const isError = part.type === "tool_result" && part.isError === true;
      return keys.length === 3 && note.output === (isError ? "error-text" : "text");
    }
    case "media":
      return false;
  }
}

/** The names of the tools a tool message answers, when it is one (retention policies key on `meta.toolName`). */
function toolNameOf(content: ReadonlyArray<SdkPart>): string | undefined {
  const names = new Set(content.filter((p) => p.type === "tool-result").map((p) => p.toolName as string));
  return names.size === 1 ? [...names][0] : undefined;
}

/**
 * One SDK message as a log message input, or undefined when it holds nothing the model reads (a tool message of
 * approval responses only). Throws `ValidationError` naming the message index, the part and the field.
 */
export function convertSdkMessage(message: unknown, index: number): MessageInput | undefined {
  checkSdkMessage(message, index);
  const m = message as SdkMessage;
  const stringContent = typeof m.content === "string";
  const content: ReadonlyArray<SdkPart> =
    typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content as SdkPart[]);
  const parts: Part[] = [];
  const notes: PartNote[] = [];
  content.forEach((sdkPart, i) => {
    const converted = convertPart(sdkPart, m.role, { index, field: `content[${i}]` });
    if (converted.part === undefined || converted.note === undefined) return;
    parts.push(converted.part);
    notes.push(converted.note);
  });
  // Content made only of approvals: nothing to log (a tool message needs a result, and the model sees none).
  if (parts.length === 0 && (content.length > 0 || m.role === "tool")) return undefined;
  const options = optionsOf(m.providerOptions, { index, field: "" }, "providerOptions");
  const note: MessageNote = {
    ...(stringContent && m.role !== "system" ? { stringContent: true as const } : {}),
    ...(options === undefined ? {} : { providerOptions: options }),
    ...(notes.every((n, i) => isPlain(n, parts[i]!)) ? {} : { parts: notes }),
  };
  const toolName = m.role === "tool" ? toolNameOf(content) : undefined;
  const meta: MessageMeta = {
    ...(toolName === undefined ? {} : { toolName }),
    ...(Object.keys(note).length === 0 ? {} : { [NOTE_KEY]: note }),
  };
  return { role: m.role, parts, ...(Object.keys(meta).length === 0 ? {} : { meta }) };
}

/**
 * The log message inputs for a list of AI SDK messages (`ModelMessage[]`, or a provider-level prompt), to give to
 * `engine.append`. Messages keep their order; a tool message holding only approval responses has no log message
 * (the model never sees approvals). Bad input throws a `ValidationError` naming the message index and the field,
 * e.g. `content[1].toolCallId`; nothing is converted then.
 *
 * @example
 * await engine.append("t1", fromModelMessages([{ role: "user", content: "Fix the flaky test" }]));
 */
export function fromModelMessages(messages: ReadonlyArray<SdkMessage>): MessageInput[] {
  if (!Array.isArray(messages)) {
    throw new ValidationError("fromModelMessages takes an array of model messages", { field: "messages" });
  }
  const out: MessageInput[] = [];
  messages.forEach((message, index) => {
    const input = convertSdkMessage(message, index);
    if (input !== undefined) out.push(input);
  });
  return out;
}
