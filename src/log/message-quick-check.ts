/**
 * Quick checks of messages and their parts: plain loops that accept only values the zod schemas of
 * `message-schema.ts` accept (not every one of them), several times faster than the schemas. A value a quick check
 * refuses goes to its schema, which names what is wrong with it; so a quick check may refuse anything unusual
 * (objects that are not plain, a `__proto__` key, …) and stay simple. Appends (`prepareBatch`) and the stores'
 * row reads share them; property tests hold them to the schemas.
 */
import type { MessageInput, MessageMeta, Part } from "./message.js";
import { idProblem, MAX_META_DEPTH } from "./message-schema.js";

const ROLES: ReadonlySet<unknown> = new Set(["system", "user", "assistant", "tool"]);
const DURABILITIES: ReadonlySet<unknown> = new Set([
  "ephemeral",
  "anchoring",
  "replayable",
  "non-replayable",
]);
const SENSITIVITIES: ReadonlySet<unknown> = new Set(["public", "internal", "confidential", "restricted"]);

/** The keys of each part type, in the order of their `partSchema` object (the order zod's output has). */
const PART_KEYS: Readonly<Record<Part["type"], ReadonlyArray<string>>> = {
  text: ["type", "text"],
  tool_call: ["type", "callId", "name", "args"],
  tool_result: ["type", "callId", "content", "isError"],
  reasoning: ["type", "text", "signature", "redacted"],
  media: ["type", "mediaType", "uri", "sizeBytes", "alt"],
};

/** The typed metadata keys, in the order of `metaSchema`'s object (the order zod's output has). */
const META_KEYS = ["sourceId", "toolName", "durability", "sensitivity", "pinned", "createdAt"] as const;
const META_KEY_SET: ReadonlySet<string> = new Set(META_KEYS);

/** A caller-added metadata value may nest this deep below the metadata object (see `metaSchema`). */
const META_VALUE_DEPTH = MAX_META_DEPTH - 1;

/**
 * An object made as JSON decoding, an object literal or `Object.create(null)` make one (a prototype of
 * `Object.prototype` or none), as a message, part, metadata object or record must be for the quick checks. The
 * schemas take other objects there too (a `Map` as metadata, a class instance); those are left to them.
 */
export function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** An object inside a metadata value: `jsonProblem` takes only those whose prototype is `Object.prototype`. */
function isJsonObject(value: object): value is Record<string, unknown> {
  return Object.getPrototypeOf(value) === Object.prototype;
}

/** A non-negative safe integer (`z.number().int().nonnegative()`). */
export const isCount = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0;
/** A non-empty string (`z.string().min(1)`). */
export const isName = (value: unknown): boolean => typeof value === "string" && value.length > 0;
const isText = (value: unknown): boolean => typeof value === "string";
const isFlag = (value: unknown): boolean => typeof value === "boolean";
const isId = (value: unknown): boolean => idProblem(value) === undefined;
const isOptional = (value: unknown, check: (v: unknown) => boolean): boolean =>
  value === undefined || check(value);

/** Whether every key of `value` (`for…in`, as zod's strict objects read them) is one of `keys`. */
export function onlyKeys(value: Record<string, unknown>, keys: ReadonlyArray<string>): boolean {
  for (const key in value) if (!keys.includes(key)) return false;
  return true;
}

/** A quick check that accepts only values `partSchema` accepts. */
export function isPart(part: unknown): part is Part {
  if (!isPlainRecord(part)) return false;
  switch (part.type) {
    case "text":
      return onlyKeys(part, PART_KEYS.text) && isText(part.text);
    case "tool_call":
      return (
        onlyKeys(part, PART_KEYS.tool_call) && isId(part.callId) && isName(part.name) && isText(part.args)
      );
    case "tool_result":
      return (
        onlyKeys(part, PART_KEYS.tool_result) &&
        isId(part.callId) &&
        isText(part.content) &&
        isOptional(part.isError, isFlag)
      );
    case "reasoning":
      return (
        onlyKeys(part, PART_KEYS.reasoning) &&
        isText(part.text) &&
        isOptional(part.signature, isText) &&
        isOptional(part.redacted, isText)
      );
    case "media":
      return (
        onlyKeys(part, PART_KEYS.media) &&
        isName(part.mediaType) &&
        isName(part.uri) &&
        isOptional(part.sizeBytes, isCount) &&
        isOptional(part.alt, isText)
      );
    default:
      return false;
  }
}

/** A quick check that accepts only values `z.array(partSchema)` accepts: an array without holes of parts. */
export function isPartList(parts: unknown): parts is Part[] {
  if (!Array.isArray(parts)) return false;
  for (let i = 0; i < parts.length; i++) if (!isPart(parts[i])) return false;
  return true;
}

/**
 * Whether `value` is JSON that `jsonProblem(value, maxDepth)` accepts: finite numbers, arrays without holes and
 * plain objects, objects and arrays at most `maxDepth` levels down. With `noNul`, also what `nulProblem` accepts
 * (no NUL in a string or key). A `__proto__` key is refused: a copy made by assignment would lose it.
 */
function isJsonValue(value: unknown, maxDepth: number, noNul: boolean, depth = 0): boolean {
  switch (typeof value) {
    case "string":
      return !noNul || !value.includes("\u0000");
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value);
    case "object": {
      if (value === null) return true;
      if (depth >= maxDepth) return false;
      if (Array.isArray(value)) {
        // A hole reads as undefined, which is refused, as `jsonProblem` refuses it.
        for (let i = 0; i < value.length; i++) {
          if (!isJsonValue(value[i], maxDepth, noNul, depth + 1)) return false;
        }
        return true;
      }
      if (!isJsonObject(value)) return false;
      for (const key in value) {
        if (!isMetaKey(key, noNul) || !isJsonValue(value[key], maxDepth, noNul, depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

function isMetaKey(key: string, noNul: boolean): boolean {
  return key !== "__proto__" && (!noNul || !key.includes("\u0000"));
}

function isKnownMetaValue(key: (typeof META_KEYS)[number], value: unknown, noNul: boolean): boolean {
  if (value === undefined) return true;
  switch (key) {
    case "durability":
      return DURABILITIES.has(value);
    case "sensitivity":
      return SENSITIVITIES.has(value);
    case "pinned":
      return isFlag(value);
    default:
      return typeof value === "string" && (!noNul || !value.includes("\u0000"));
  }
}

/**
 * A quick check that accepts only values `metaSchema` accepts, or with `noNul` only those `metaInputSchema`
 * accepts (what is appended: no NUL in any string or key).
 */
export function isMeta(meta: unknown, noNul: boolean): meta is MessageMeta {
  if (!isPlainRecord(meta)) return false;
  for (const key in meta) {
    const value = meta[key];
    const ok = META_KEY_SET.has(key)
      ? isKnownMetaValue(key as (typeof META_KEYS)[number], value, noNul)
      : isMetaKey(key, noNul) && isJsonValue(value, META_VALUE_DEPTH, noNul);
    if (!ok) return false;
  }
  return true;
}

/** A quick check that accepts only values `messageInputSchema` accepts (what `ThreadLog.append` takes). */
export function isMessageInput(value: unknown): value is MessageInput {
  if (!isPlainRecord(value)) return false;
  for (const key in value)
    if (key !== "id" && key !== "role" && key !== "parts" && key !== "meta") return false;
  return (
    isOptional(value.id, isId) &&
    ROLES.has(value.role) &&
    isPartList(value.parts) &&
    isOptional(value.meta, (meta) => isMeta(meta, true))
  );
}

/**
 * A copy of a part {@link isPart} accepted, equal to what `partSchema` parses it to with keys set to `undefined`
 * left out: the part's keys in schema order (so a stored message's JSON does not depend on the caller's key order).
 */
export function copyPart(part: Part): Part {
  const source = part as unknown as Record<string, unknown>;
  const copy: Record<string, unknown> = {};
  for (const key of PART_KEYS[part.type]) {
    const value = source[key];
    if (value !== undefined) copy[key] = value;
  }
  return copy as unknown as Part;
}

/**
 * A detached copy of metadata {@link isMeta} accepted, equal to the JSON round trip of what `metaSchema` parses it
 * to: the typed keys first in schema order, then the others in the caller's order, `undefined` values left out and
 * `-0` made `0` (as JSON does).
 */
export function copyMeta(meta: MessageMeta): MessageMeta {
  const source = meta as Record<string, unknown>;
  const copy: Record<string, unknown> = {};
  for (const key of META_KEYS) {
    const value = source[key];
    if (value !== undefined) copy[key] = value;
  }
  for (const key in source) if (!META_KEY_SET.has(key)) copy[key] = copyJson(source[key]);
  return copy as MessageMeta;
}

/** A copy of a JSON value {@link isJsonValue} accepted (so its depth is bounded), as a JSON round trip makes it. */
function copyJson(value: unknown): unknown {
  if (typeof value === "number") return value === 0 ? 0 : value;
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map(copyJson);
  const source = value as Record<string, unknown>;
  const copy: Record<string, unknown> = {};
  // Object.keys, as JSON.stringify reads an object (own keys only).
  for (const key of Object.keys(source)) copy[key] = copyJson(source[key]);
  return copy;
}
