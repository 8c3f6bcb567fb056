import { ValidationError } from "../errors/ledger-error.js";

/**
 * The byte offset of the first byte in `bytes` that does not start or continue a well-formed UTF-8 sequence
 * (overlong forms, surrogates and code points past U+10FFFF included), or -1 when all of it is UTF-8.
 */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let min: number;
    let max = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
      min = 0x80;
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      min = b === 0xe0 ? 0xa0 : 0x80; // no overlong forms
      if (b === 0xed) max = 0x9f; // no surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      min = b === 0xf0 ? 0x90 : 0x80;
      if (b === 0xf4) max = 0x8f; // nothing past U+10FFFF
    } else {
      return i;
    }
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      const lo = k === 1 ? min : 0x80;
      const hi = k === 1 ? max : 0xbf;
      if (c === undefined || c < lo || c > hi) return i;
    }
    i += need + 1;
  }
  return -1;
}

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * `bytes` as text, refusing what is not UTF-8 rather than replacing it with U+FFFD (the log would then hold
 * something the file did not): the error names `source`, the line and the byte offset in that line.
 */
export function decodeUtf8(bytes: Uint8Array, source: string): string {
  try {
    return decoder.decode(bytes);
  } catch {
    const at = firstInvalidUtf8(bytes);
    let line = 1;
    let lineStart = 0;
    for (let i = 0; i < at; i++) {
      if (bytes[i] === 0x0a) {
        line++;
        lineStart = i + 1;
      }
    }
    const byte = bytes[at]?.toString(16).padStart(2, "0") ?? "end of input";
    throw new ValidationError(
      `${source} is not valid UTF-8: byte 0x${byte} at byte ${at - lineStart} of the line (byte ${at} of the file)`,
      { line },
    );
  }
}
