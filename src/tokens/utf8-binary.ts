/**
 * UTF-8 as a "binary string": one UTF-16 code unit per byte (0–255). Byte sequences become cheap, hashable
 * `Map` keys, and a slice of bytes is a `substring`.
 */

const CHUNK = 4096;

/** True when every code unit of `text` is below 0x80, i.e. the string already is its own UTF-8 byte string. */
export function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) >= 0x80) return false;
  return true;
}

/**
 * Encodes `text` as UTF-8 and returns the bytes as a binary string; lone surrogates become U+FFFD
 * (`EF BF BD`), exactly like `TextEncoder`, which is what tiktoken's byte sequences are built from.
 */
export function utf8Binary(text: string): string {
  if (isAscii(text)) return text;
  const bytes: number[] = [];
  let out = "";
  for (let i = 0; i < text.length; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      bytes.push(c);
    } else if (c < 0x800) {
      bytes.push(0xc0 | (c >> 6), 0x80 | (c & 0x3f));
    } else if (c >= 0xd800 && c <= 0xdfff) {
      const d = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
        bytes.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 0x3f), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
      } else {
        bytes.push(0xef, 0xbf, 0xbd);
      }
    } else {
      bytes.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
    }
    if (bytes.length >= CHUNK) {
      out += String.fromCharCode(...bytes);
      bytes.length = 0;
    }
  }
  return out + String.fromCharCode(...bytes);
}
