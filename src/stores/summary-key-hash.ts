import { ValidationError } from "../errors/ledger-error.js";
import { sha256Hex } from "../log/canonical-json.js";

/**
 * The database key of a summary cache entry: sha256 of the key's JSON text. Keys contain NUL separators, which
 * PostgreSQL text cannot hold; JSON escapes them (and lone surrogates), so distinct keys stay distinct.
 */
export function summaryKeyHash(key: string): string {
  if (typeof key !== "string" || key.length === 0) {
    throw new ValidationError("summary cache key must be a non-empty string", { field: "key" });
  }
  return sha256Hex(JSON.stringify(key));
}
