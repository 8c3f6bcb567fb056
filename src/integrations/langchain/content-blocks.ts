/**
 * LangChain content blocks ↔ context-ledger parts. One handler per block type reads a block into a part; the
 * way back writes each part kind in one fixed shape, so a message converted in and out again keeps its blocks
 * (see the README of this wing for the few shapes that come back in their standard form instead).
 */
import type { ContentBlock } from "@langchain/core/messages";
import { ValidationError } from "../../errors/ledger-error.js";
import type { MediaPart, Part, ReasoningPart } from "../../log/message.js";

/** Where a block sits: the message's index in the batch, its id, and the block's field path. */
export interface BlockSite {
  readonly index: number;
  readonly messageId: string | undefined;
  readonly field: string;
}

/** A content block as read: an object with a string `type`. */
export type Block = Readonly<Record<string, unknown>> & { readonly type: string };

/** Throws the `ValidationError` of a block that cannot be converted, naming the message and the field. */
export function badBlock(problem: string, site: BlockSite, subfield?: string): never {
  throw new ValidationError(problem, {
    index: site.index,
    ...(site.messageId === undefined ? {} : { messageId: site.messageId }),
    field: subfield === undefined ? site.field : `${site.field}.${subfield}`,
  });
}

const isString = (value: unknown): value is string => typeof value === "string";

function stringField(block: Block, key: string, site: BlockSite): string {
  const value = block[key];
  if (!isString(value)) badBlock(`a ${block.type} block needs a string ${key}`, site, key);
  return value;
}

/** The media type of a `data:` URL, when it names one. */
function dataUrlType(url: string): string | undefined {
  const match = /^data:([^;,]+)[;,]/.exec(url);
  return match?.[1];
}

/** What a media part's type is when the block does not say: the kind with an unspecified subtype. */
const UNSPECIFIED: Readonly<Record<string, string>> = {
  image: "image/*",
  audio: "audio/*",
  video: "video/*",
  file: "application/*",
};

function base64Of(data: unknown, site: BlockSite): string {
  if (isString(data)) return data;
  if (data instanceof Uint8Array) return Buffer.from(data).toString("base64");
  return badBlock("data must be a base64 string or bytes", site, "data");
}

function media(mediaType: string, uri: string): MediaPart {
  return { type: "media", mediaType, uri };
}

/**
 * A media block of any of LangChain's shapes: the standard one (`url`, or `data` with `mimeType`), the older
 * standard one (`source_type`, `mime_type`) and Anthropic's (`source: { type, media_type, data | url }`).
 */
function mediaPart(block: Block, site: BlockSite): MediaPart {
  const kind = block.type;
  const fallback = UNSPECIFIED[kind] ?? "application/*";
  const source = block.source;
  if (typeof source === "object" && source !== null) {
    const s = source as Readonly<Record<string, unknown>>;
    if (s.type === "url" && isString(s.url)) return media(dataUrlType(s.url) ?? fallback, s.url);
    if (s.type === "base64" && isString(s.media_type) && isString(s.data)) {
      return media(s.media_type, `data:${s.media_type};base64,${s.data}`);
    }
    return badBlock(`a ${kind} block's source must be { type: "url", url } or base64 data`, site, "source");
  }
  const mimeType = isString(block.mimeType)
    ? block.mimeType
    : isString(block.mime_type)
      ? block.mime_type
      : "";
  if (block.data !== undefined) {
    if (mimeType === "") badBlock(`a ${kind} block with data needs its mimeType`, site, "mimeType");
    return media(mimeType, `data:${mimeType};base64,${base64Of(block.data, site)}`);
  }
  if (isString(block.url)) return media(mimeType || dataUrlType(block.url) || fallback, block.url);
  if (block.fileId !== undefined || block.file_id !== undefined || block.source_type === "id") {
    return badBlock(
      `a ${kind} block that names a provider file id cannot be kept: pass its url or data instead`,
      site,
      "fileId",
    );
  }
  return badBlock(`a ${kind} block needs a url or data`, site);
}

function imageUrlPart(block: Block, site: BlockSite): MediaPart {
  const value = block.image_url;
  const url = isString(value) ? value : (value as { url?: unknown } | null | undefined)?.url;
  if (!isString(url)) return badBlock("an image_url block needs image_url.url", site, "image_url");
  return media(dataUrlType(url) ?? "image/*", url);
}

/** A standard reasoning block: Anthropic's signature, or OpenAI's item id with its encrypted content. */
function reasoningPart(block: Block, site: BlockSite): ReasoningPart {
  const text = stringField(block, "reasoning", site);
  if (isString(block.signature)) return { type: "reasoning", text, signature: block.signature };
  if (isString(block.encrypted_content) && isString(block.id)) {
    return { type: "reasoning", text, signature: block.id, redacted: block.encrypted_content };
  }
  return { type: "reasoning", text };
}

function redactedPart(data: unknown, site: BlockSite): ReasoningPart {
  if (!isString(data)) badBlock("a redacted_thinking block needs a string data", site, "data");
  return { type: "reasoning", text: "", redacted: data };
}

/** What reading a block needs besides the block: the ids of the message's `tool_calls`. */
export interface BlockContext {
  readonly callIds: ReadonlySet<string>;
}

type BlockReader = (block: Block, site: BlockSite, context: BlockContext) => Part | undefined;

/** A tool-use block repeats a call of the message's `tool_calls`, which is what the log keeps. */
const repeatedCall: BlockReader = (block, site, context) => {
  if (isString(block.id) && context.callIds.has(block.id)) return undefined;
  return badBlock(`a ${block.type} block whose call is not among the message's tool_calls`, site, "id");
};

/** One reader per block type; a type not listed is refused, naming the field. */
const BLOCK_READERS: Readonly<Record<string, BlockReader>> = {
  text: (block, site) => ({ type: "text", text: stringField(block, "text", site) }),
  image_url: imageUrlPart,
  image: mediaPart,
  audio: mediaPart,
  video: mediaPart,
  file: mediaPart,
  reasoning: reasoningPart,
  thinking: (block, site) => {
    const text = stringField(block, "thinking", site);
    return isString(block.signature)
      ? { type: "reasoning", text, signature: block.signature }
      : { type: "reasoning", text };
  },
  redacted_thinking: (block, site) => redactedPart(block.data, site),
  // LangChain's standard form of an Anthropic redacted_thinking block.
  non_standard: (block, site) => {
    const value = block.value as { type?: unknown; data?: unknown } | undefined;
    if (value?.type === "redacted_thinking")
      return redactedPart(value.data, { ...site, field: `${site.field}.value` });
    return badBlock("a non_standard block other than redacted thinking cannot be kept", site, "value");
  },
  tool_use: repeatedCall,
  tool_call: repeatedCall,
};

/** The part a content block stands for (undefined when the message keeps it elsewhere, as tool calls). */
export function partOfBlock(raw: unknown, site: BlockSite, context: BlockContext): Part | undefined {
  if (isString(raw)) return { type: "text", text: raw };
  if (typeof raw !== "object" || raw === null || !isString((raw as { type?: unknown }).type)) {
    return badBlock("a content block must be an object with a string type", site, "type");
  }
  const block = raw as Block;
  const reader = Object.hasOwn(BLOCK_READERS, block.type) ? BLOCK_READERS[block.type] : undefined;
  if (reader === undefined) {
    return badBlock(`content blocks of type ${JSON.stringify(block.type)} are not supported`, site, "type");
  }
  return reader(block, site, context);
}

/** The LangChain block kind of a media type: image, audio and video by name, anything else a file. */
function mediaKind(mediaType: string): "image" | "audio" | "video" | "file" {
  const top = mediaType.split("/")[0];
  return top === "image" || top === "audio" || top === "video" ? top : "file";
}

/** A media part as a standard LangChain block: base64 `data` for a `data:` URI, else its `url`. */
function mediaBlock(part: MediaPart): ContentBlock {
  const type = mediaKind(part.mediaType);
  const base64 = /^data:([^;,]*);base64,(.*)$/s.exec(part.uri);
  if (base64 !== null) return { type, data: base64[2], mimeType: part.mediaType };
  return { type, url: part.uri, ...(part.mediaType.endsWith("/*") ? {} : { mimeType: part.mediaType }) };
}

/**
 * A reasoning part as the block it came from: a signed one as Anthropic's `thinking`, a redacted one as
 * `redacted_thinking`, OpenAI's (item id and encrypted content) and plain reasoning as standard `reasoning`.
 */
function reasoningBlock(part: ReasoningPart): ContentBlock {
  if (part.signature !== undefined && part.redacted !== undefined) {
    return { type: "reasoning", reasoning: part.text, id: part.signature, encrypted_content: part.redacted };
  }
  if (part.signature !== undefined)
    return { type: "thinking", thinking: part.text, signature: part.signature };
  if (part.redacted !== undefined) return { type: "redacted_thinking", data: part.redacted };
  return { type: "reasoning", reasoning: part.text };
}

/** Content parts (text, media, reasoning) → LangChain content: one text part as a string, else blocks. */
export function contentOf(parts: ReadonlyArray<Part>): string | ContentBlock[] {
  if (parts.length === 0) return "";
  const only = parts[0]!;
  if (parts.length === 1 && only.type === "text") return only.text;
  const blocks: ContentBlock[] = [];
  for (const part of parts) {
    if (part.type === "text") blocks.push({ type: "text", text: part.text });
    else if (part.type === "media") blocks.push(mediaBlock(part));
    else if (part.type === "reasoning") blocks.push(reasoningBlock(part));
  }
  return blocks;
}
