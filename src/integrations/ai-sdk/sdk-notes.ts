/**
 * What a log message keeps of its AI SDK message beyond what its parts hold: provider options, the exact form of
 * media data, tool output kinds, and the SDK parts the log holds as text. It is stored in `meta.aiSdk` (plain
 * JSON), and rendered messages copied from the log carry it back, so the way out restores the SDK message exactly.
 */
import { ValidationError } from "../../index.js";
import type { JsonObject, JsonValue } from "./sdk-types.js";

/** The metadata key of the note. */
export const NOTE_KEY = "aiSdk";

/**
 * How media data was given: bytes (a `Uint8Array`, `ArrayBuffer` or `Buffer`), a base64 string, a URL string or
 * a `URL`. The log's media part holds the data itself (a `data:` URI for bytes and base64).
 */
export type DataForm = "bytes" | "base64" | "url-string" | "url";

/** The kinds of tool output the SDK has. */
export type OutputKind = "text" | "json" | "error-text" | "error-json" | "execution-denied" | "content";

/** The note of one log part; the list of them follows the log message's parts one for one. */
export type PartNote =
  | {
      readonly type: "text";
      readonly providerOptions?: JsonObject;
      /** The SDK part this text stands for when the log cannot hold it as a part (encoded as JSON). */
      readonly standsFor?: JsonObject;
    }
  | { readonly type: "reasoning"; readonly providerOptions?: JsonObject }
  | {
      readonly type: "media";
      readonly sdkType: "image" | "file";
      readonly data: DataForm;
      /** An image given without a media type (the log says `image/*`). */
      readonly noMediaType?: true;
      readonly filename?: string;
      readonly originalUrl?: string;
      readonly providerOptions?: JsonObject;
    }
  | {
      readonly type: "tool_call";
      readonly callId: string;
      /** The call's input was `undefined` (the log's arguments are empty). */
      readonly noInput?: true;
      readonly providerOptions?: JsonObject;
    }
  | {
      readonly type: "tool_result";
      readonly callId: string;
      readonly output: OutputKind;
      /** A denial's reason was given (it is the result's content). */
      readonly reason?: true;
      /** A `content` output's parts (the log's content is their text). */
      readonly value?: JsonValue;
      readonly outputProviderOptions?: JsonObject;
      readonly providerOptions?: JsonObject;
    };

/** The note of one log message. */
export interface MessageNote {
  /** The SDK message's content was a string rather than a list of parts. */
  readonly stringContent?: true;
  readonly providerOptions?: JsonObject;
  /** One note per log part, in order; absent when no part has anything to keep. */
  readonly parts?: ReadonlyArray<PartNote>;
}

/** The note a rendered message carries, or undefined (a message that did not come from the AI SDK). */
export function noteOf(meta: { readonly [key: string]: unknown } | undefined): MessageNote | undefined {
  const note = meta?.[NOTE_KEY];
  if (typeof note !== "object" || note === null || Array.isArray(note)) return undefined;
  const parts = (note as MessageNote).parts;
  return parts === undefined || Array.isArray(parts) ? (note as MessageNote) : undefined;
}

/** Where a value being converted sits, for errors. */
export interface Where {
  readonly index: number;
  readonly field: string;
}

function notJson(where: Where, path: string, problem: string): never {
  const field = `${where.field}${path}`;
  throw new ValidationError(`invalid model message at index ${where.index}: ${field} ${problem}`, {
    index: where.index,
    field,
  });
}

/**
 * A plain-JSON copy of `value` (object fields that are `undefined` left out, as JSON does), or a
 * `ValidationError` naming the field that JSON cannot hold. Strings are copied as they are, so a signature or an
 * encrypted payload stays byte for byte the same.
 */
export function jsonOf(value: unknown, where: Where, path = ""): JsonValue {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") {
    if (!Number.isFinite(value))
      notJson(where, path, "must be a finite number (JSON has no NaN or Infinity)");
    return value;
  }
  if (Array.isArray(value)) return value.map((item, i) => jsonOf(item ?? null, where, `${path}[${i}]`));
  if (typeof value !== "object" || Object.getPrototypeOf(value) !== Object.prototype) {
    if (value instanceof Date) return value.toJSON();
    notJson(where, path, `must be JSON (got ${value === undefined ? "undefined" : typeof value})`);
  }
  const out: JsonObject = {};
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    if (item !== undefined) out[key] = jsonOf(item, where, `${path}.${key}`);
  }
  return out;
}

/** Provider options as JSON, or undefined when absent or empty. */
export function optionsOf(value: unknown, where: Where, path = ".providerOptions"): JsonObject | undefined {
  if (value === undefined) return undefined;
  const json = jsonOf(value, where, path) as JsonObject;
  return Object.keys(json).length === 0 ? undefined : json;
}

/** Media data in the log: the URI the media part holds and the form to give back. */
export interface EncodedData {
  readonly uri: string;
  readonly form: DataForm;
  readonly sizeBytes?: number;
}

function isUrlString(value: string): boolean {
  // A base64 string never holds ":", so it is never taken for a URL.
  if (!value.includes(":")) return false;
  try {
    new URL(value);
    return true;
  } catch {
    return false;
  }
}

/** Encodes SDK media data (bytes, base64, URL string or URL) as a URI for a log media part. */
export function encodeData(data: unknown, mediaType: string): EncodedData {
  if (data instanceof URL) return { uri: data.href, form: "url" };
  if (typeof data === "string") {
    if (isUrlString(data)) return { uri: data, form: "url-string" };
    return {
      uri: `data:${mediaType};base64,${data}`,
      form: "base64",
      sizeBytes: Buffer.byteLength(data, "base64"),
    };
  }
  const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : (data as Uint8Array);
  const base64 = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
  return { uri: `data:${mediaType};base64,${base64}`, form: "bytes", sizeBytes: bytes.byteLength };
}

/** The base64 payload of a `data:` URI (empty when it holds none). */
function payloadOf(uri: string): string {
  const comma = uri.indexOf(",");
  return comma < 0 ? "" : uri.slice(comma + 1);
}

/** The SDK data a log media part's URI stands for, in the form it was given. */
export function decodeData(uri: string, form: DataForm): string | Uint8Array | URL {
  switch (form) {
    case "url":
      return new URL(uri);
    case "url-string":
      return uri;
    case "base64":
      return payloadOf(uri);
    case "bytes":
      return new Uint8Array(Buffer.from(payloadOf(uri), "base64"));
  }
}
