import { hash } from "node:crypto";

/**
 * Canonical JSON: object keys sorted, no whitespace, `undefined` fields omitted. Two values that are equal as
 * data always give the same string, which is what content hashes and render hashes are computed over.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") {
    const s = JSON.stringify(value);
    // JSON.stringify(undefined) is undefined; inside arrays JSON uses null, as we do.
    return s === undefined ? "null" : s;
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const keys = Object.keys(value as Record<string, unknown>).sort();
  const fields: string[] = [];
  for (const key of keys) {
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined) continue;
    fields.push(`${JSON.stringify(key)}:${canonicalJson(v)}`);
  }
  return `{${fields.join(",")}}`;
}

/** sha256 (hex) of a string's UTF-8 bytes (one-shot `crypto.hash`: a third of `createHash`'s cost on short input). */
export function sha256Hex(text: string): string {
  return hash("sha256", text, "hex");
}

/** Content hash of a message: sha256 over the canonical JSON of its role and parts. */
export function hashMessageContent(role: string, parts: ReadonlyArray<unknown>): string {
  return sha256Hex(canonicalJson({ role, parts }));
}
