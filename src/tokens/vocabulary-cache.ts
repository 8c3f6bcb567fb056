/**
 * An optional on-disk copy of parsed vocabularies. Parsing `o200k_base` from js-tiktoken's rank text takes tens
 * of milliseconds, most of a short CLI command; reading the parsed arrays back is a file read and a checksum.
 * Off unless a directory is given (the CLI gives its per-user cache directory); every failure to read or write
 * falls back to parsing, so the cache can only make a process faster, never change a count.
 */
import { createHash } from "node:crypto";
import {
  existsSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { EncodingName } from "./encoding-data.js";
import { TokenTable } from "./token-table.js";

/** A vocabulary as the cache holds it: the token table and the pre-tokenizer pattern. */
export interface CachedVocabulary {
  readonly table: TokenTable;
  readonly pattern: string;
}

const MAGIC = "CLVOCAB1";
const HEADER = 96; // magic 8, source key 32, payload sha256 32, four u32 lengths 16, padding 8

let directory: string | undefined;

/**
 * Keeps parsed vocabularies in `dir` from now on (`undefined` turns the cache off). The directory must exist and
 * should be private to the user (the CLI makes one with mode 0700).
 */
export function useVocabularyCache(dir: string | undefined): void {
  directory = dir;
}

/** The directory vocabularies are cached in, if any. */
export function vocabularyCacheDir(): string | undefined {
  return directory;
}

const sourceKeys = new Map<EncodingName, Buffer>();

/**
 * The js-tiktoken install a module here would load, found the way Node's resolution begins (the nearest
 * `node_modules/js-tiktoken` above this file), without the package-exports resolver: loading that costs a short
 * command a few milliseconds, and the rank data is only resolved through it when a vocabulary is parsed.
 */
function nearestTiktokenManifest(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, "node_modules", "js-tiktoken", "package.json");
    if (existsSync(manifest)) return manifest;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/**
 * What the cached copy must have been made from: the js-tiktoken install's manifest (real path, size,
 * modification time and text, so a reinstall or another version gives a new key and a stale file is never
 * read), or, where no install sits above this file (a bundler's layout), the rank module's own path, size and
 * modification time.
 */
export function vocabularySourceKey(encoding: EncodingName): Buffer {
  const known = sourceKeys.get(encoding);
  if (known !== undefined) return known;
  const manifest = nearestTiktokenManifest();
  // The real path and the manifest's own text: a package manager that links installs from a store keeps the
  // linked path and may keep a modification time across versions, but not the file's target or its version.
  const path = realpathSync(
    manifest ?? createRequire(import.meta.url).resolve(`js-tiktoken/ranks/${encoding}`),
  );
  const { size, mtimeMs } = statSync(path);
  const text = manifest === undefined ? "" : readFileSync(path, "utf8");
  const key = createHash("sha256").update(`${encoding}\n${path}\n${size}\n${mtimeMs}\n${text}`).digest();
  sourceKeys.set(encoding, key);
  return key;
}

function fileOf(dir: string, encoding: EncodingName, key: Buffer): string {
  return join(dir, `vocabulary-${encoding}-${key.toString("hex").slice(0, 16)}.bin`);
}

/** The cached vocabulary of `encoding`, or `undefined` when the cache is off, empty, stale or damaged. */
export function readCachedVocabulary(encoding: EncodingName): CachedVocabulary | undefined {
  if (directory === undefined) return undefined;
  try {
    const key = vocabularySourceKey(encoding);
    const file = readFileSync(fileOf(directory, encoding, key));
    return decodeVocabulary(file, key);
  } catch {
    return undefined;
  }
}

/** Stores a freshly parsed vocabulary (atomically: a reader sees the old file, no file, or the whole new one). */
export function writeCachedVocabulary(encoding: EncodingName, vocabulary: CachedVocabulary): void {
  if (directory === undefined) return;
  let temp: string | undefined;
  try {
    const key = vocabularySourceKey(encoding);
    const target = fileOf(directory, encoding, key);
    temp = `${target}.${process.pid}.tmp`;
    writeFileSync(temp, encodeVocabulary(vocabulary, key), { mode: 0o600 });
    renameSync(temp, target);
    temp = undefined;
  } catch {
    // A read-only or full disk only costs the next process the parse.
  } finally {
    if (temp !== undefined) {
      try {
        unlinkSync(temp);
      } catch {}
    }
  }
}

/** The file image of a vocabulary: header, then `start`, `slots`, the token bytes and the pattern (UTF-8). */
export function encodeVocabulary(vocabulary: CachedVocabulary, key: Buffer): Buffer {
  const { bytes, start, slots } = vocabulary.table.parts();
  const pattern = Buffer.from(vocabulary.pattern, "utf8");
  const payload = Buffer.concat([
    Buffer.from(start.buffer, start.byteOffset, start.byteLength),
    Buffer.from(slots.buffer, slots.byteOffset, slots.byteLength),
    Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    pattern,
  ]);
  const header = Buffer.alloc(HEADER);
  header.write(MAGIC, 0, "latin1");
  key.copy(header, 8);
  createHash("sha256").update(payload).digest().copy(header, 40);
  header.writeUInt32LE(start.length, 72);
  header.writeUInt32LE(slots.length, 76);
  header.writeUInt32LE(bytes.length, 80);
  header.writeUInt32LE(pattern.length, 84);
  return Buffer.concat([header, payload]);
}

/** Reads a file image back; throws when it is not one made from `key` or its payload does not check out. */
export function decodeVocabulary(file: Buffer, key: Buffer): CachedVocabulary {
  if (file.length < HEADER || file.toString("latin1", 0, 8) !== MAGIC)
    throw new Error("not a vocabulary file");
  if (!file.subarray(8, 40).equals(key)) throw new Error("vocabulary file made from other rank data");
  const startLength = file.readUInt32LE(72);
  const slotsLength = file.readUInt32LE(76);
  const bytesLength = file.readUInt32LE(80);
  const patternLength = file.readUInt32LE(84);
  const payloadLength = (startLength + slotsLength) * 4 + bytesLength + patternLength;
  if (file.length !== HEADER + payloadLength) throw new Error("vocabulary file has the wrong length");
  if (slotsLength === 0 || (slotsLength & (slotsLength - 1)) !== 0)
    throw new Error("vocabulary slots not 2^n");
  const payload = file.subarray(HEADER);
  if (!createHash("sha256").update(payload).digest().equals(file.subarray(40, 72))) {
    throw new Error("vocabulary file checksum mismatch");
  }
  // Typed arrays need 4-byte alignment; a large file read is its own buffer (offset 0), else copy once.
  const own = payload.byteOffset % 4 === 0 ? payload : Uint8Array.from(payload);
  const start = new Int32Array(own.buffer, own.byteOffset, startLength);
  const slots = new Int32Array(own.buffer, own.byteOffset + startLength * 4, slotsLength);
  const bytesAt = (startLength + slotsLength) * 4;
  const bytes = own.subarray(bytesAt, bytesAt + bytesLength);
  const pattern = Buffer.from(own.buffer, own.byteOffset + bytesAt + bytesLength, patternLength).toString(
    "utf8",
  );
  // The checksum proves these are the arrays a parse built (only a parse's table is ever written), so they are
  // not walked again here: a walk over ~700,000 entries cost more than the read and the checksum together.
  if (start[0] !== 0 || start[startLength - 1] !== bytesLength)
    throw new Error("vocabulary offsets out of range");
  return { table: new TokenTable({ bytes, start, slots }), pattern };
}
