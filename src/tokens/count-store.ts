/**
 * Token counts of whole texts kept on disk between processes, beside the cached vocabulary. A CLI command counts
 * the same few dozen synthetic texts (stubs, summaries, pointers) of a thread that the last command counted; with
 * their counts on disk it needs neither the vocabulary nor a merge. Off unless the vocabulary cache has a
 * directory. A count is keyed by the text's SHA-256 under the rank data's own key, so a count can only come back
 * for the same text counted with the same vocabulary; a damaged record is skipped.
 *
 * File: 16-byte records appended (key: 8 bytes of the text's SHA-256; the count, u32; a check word over both).
 */
import { createHash } from "node:crypto";
import { appendFileSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { EncodingName } from "./encoding-data.js";
import { vocabularyCacheDir, vocabularySourceKey } from "./vocabulary-cache.js";

const RECORD = 16;
/** A file past this size is started afresh (about a million counts). */
const MAX_FILE_BYTES = 16 << 20;

function checkWord(record: Buffer): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < 12; i++) h = Math.imul(h ^ record[i]!, 0x01000193);
  return h >>> 0;
}

/** The counts of one encoding's texts: read on first use, new ones appended by {@link flushCountStores}. */
export class CountStore {
  private counts: Map<string, number> | undefined;
  private readonly added: Buffer[] = [];
  private restart = false;

  /**
   * @param file where the records live
   * @param maxFileBytes a file past this size is started afresh at the next flush
   */
  constructor(
    private readonly file: string,
    private readonly maxFileBytes = MAX_FILE_BYTES,
  ) {}

  /** The stored count of `text`, if any. */
  get(text: string): number | undefined {
    return this.load().get(keyOf(text));
  }

  /** The stored count of `text`, or `count(text)` remembered for the next flush (the text is hashed once). */
  countOr(text: string, count: (text: string) => number): number {
    const key = keyOf(text);
    const known = this.load().get(key);
    if (known !== undefined) return known;
    const n = count(text);
    this.remember(key, n);
    return n;
  }

  /** Remembers a count (written by the next flush). */
  set(text: string, count: number): void {
    this.remember(keyOf(text), count);
  }

  private remember(key: string, count: number): void {
    const counts = this.load();
    if (counts.has(key) || !Number.isInteger(count) || count < 0 || count > 0xffffffff) return;
    counts.set(key, count);
    const record = Buffer.alloc(RECORD);
    record.write(key, 0, "hex");
    record.writeUInt32LE(count, 8);
    record.writeUInt32LE(checkWord(record), 12);
    this.added.push(record);
  }

  /** Appends what was added since the last flush; a failure only costs a later process the counting. */
  flush(): void {
    if (this.added.length === 0) return;
    const data = Buffer.concat(this.added.splice(0));
    try {
      if (this.restart) writeFileSync(this.file, data, { mode: 0o600 });
      else appendFileSync(this.file, data, { mode: 0o600 });
      this.restart = false;
    } catch {}
  }

  private load(): Map<string, number> {
    if (this.counts !== undefined) return this.counts;
    this.counts = new Map();
    try {
      if (statSync(this.file).size > this.maxFileBytes) {
        this.restart = true;
        return this.counts;
      }
      const data = readFileSync(this.file);
      for (let at = 0; at + RECORD <= data.length; at += RECORD) {
        const record = data.subarray(at, at + RECORD);
        if (record.readUInt32LE(12) !== checkWord(record)) continue; // torn or damaged: skip it
        this.counts.set(record.toString("hex", 0, 8), record.readUInt32LE(8));
      }
    } catch {}
    return this.counts;
  }
}

function keyOf(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex").slice(0, 16);
}

const stores = new Map<string, CountStore>();

/** The count store of an encoding under the cache directory, or `undefined` when there is no cache. */
export function countStoreFor(encoding: EncodingName): CountStore | undefined {
  const dir = vocabularyCacheDir();
  if (dir === undefined) return undefined;
  let key: string;
  try {
    key = vocabularySourceKey(encoding).toString("hex").slice(0, 16);
  } catch {
    return undefined;
  }
  const file = join(dir, `counts-${encoding}-${key}.bin`);
  let store = stores.get(file);
  if (store === undefined) {
    store = new CountStore(file);
    stores.set(file, store);
  }
  return store;
}

/** Writes every store's new counts (the CLI calls it when a command ends). */
export function flushCountStores(): void {
  for (const store of stores.values()) store.flush();
}
