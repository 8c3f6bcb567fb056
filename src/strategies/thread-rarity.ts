/**
 * The word rarity of a thread as a plan leaves it: document frequencies over the messages that still render
 * (included or cleared), kept per history and brought up to date by difference, so a turn only reads the
 * messages that appeared or went since the last one.
 */

import type { LogView } from "../log/log-view.js";
import type { Message } from "../log/message.js";
import type { SeqResolution } from "../plan/resolve-for-log.js";
import { type Rarity, wordsOf } from "./salient-lines.js";

/** Everything of a message a reader sees as words: texts, tool results, call names and arguments. */
export function messageWords(message: Message): ReadonlySet<string> {
  const texts: string[] = [];
  for (const part of message.parts) {
    if (part.type === "text") texts.push(part.text);
    else if (part.type === "tool_result") texts.push(part.content);
    else if (part.type === "tool_call") texts.push(part.name, part.args);
  }
  return wordsOf(texts.join("\n"));
}

/** Per action index + 1 (0: no action, included by default): 1 when its messages render as themselves. */
function renderFlags(resolution: SeqResolution): Uint8Array {
  const flags = new Uint8Array(resolution.decisions.length + 1);
  flags[0] = 1;
  resolution.decisions.forEach(({ kind }, i) => {
    flags[i + 1] = kind === "include" || kind === "clear" ? 1 : 0;
  });
  return flags;
}

/** Document frequencies over a set of messages, updated by adding and removing messages. */
class IncrementalRarity implements Rarity {
  readonly #df = new Map<string, number>();
  /** Words per counted seq (what removing it takes away). */
  readonly #words = new Map<number, ReadonlySet<string>>();
  /** 1 at each counted seq (the keys of `#words`, as a table a sweep reads without hashing). */
  #counted = new Uint8Array(0);
  /** What the last sync counted for: a resolution and a log length of this history. */
  #synced: { readonly resolution: SeqResolution; readonly length: number } | undefined;

  get documents(): number {
    return this.#words.size;
  }

  documentFrequency(word: string): number {
    return this.#df.get(word) ?? 0;
  }

  /**
   * Counts exactly the messages of `log` that render under `resolution` (all of them are held). A decision is a
   * function of the resolution and the seq alone, so after a sync for the same resolution only the seqs the log
   * gained or lost can differ; another resolution is compared seq by seq on its action table.
   */
  sync(log: LogView, resolution: SeqResolution): void {
    const length = log.length;
    const last = this.#synced;
    for (const seq of this.#words.keys()) if (seq >= length) this.#remove(seq);
    if (this.#counted.length < length) {
      const grown = new Uint8Array(Math.max(length, this.#counted.length * 2));
      grown.set(this.#counted);
      this.#counted = grown;
    }
    const flags = renderFlags(resolution);
    const { actionAt } = resolution;
    const from = last?.resolution === resolution ? Math.min(last.length, length) : 0;
    const covered = Math.min(actionAt.length, length);
    const counted = this.#counted;
    for (let seq = from; seq < length; seq++) {
      const renders = seq < covered ? flags[actionAt[seq]! + 1]! : 1;
      if (renders === counted[seq]) continue;
      if (renders === 1) this.#add(seq, log.at(seq)!);
      else this.#remove(seq);
    }
    this.#synced = { resolution, length };
  }

  #add(seq: number, message: Message): void {
    const words = messageWords(message);
    this.#words.set(seq, words);
    this.#counted[seq] = 1;
    for (const word of words) this.#df.set(word, (this.#df.get(word) ?? 0) + 1);
  }

  #remove(seq: number): void {
    const words = this.#words.get(seq)!;
    this.#words.delete(seq);
    this.#counted[seq] = 0;
    for (const word of words) {
      const n = this.#df.get(word)! - 1;
      if (n === 0) this.#df.delete(word);
      else this.#df.set(word, n);
    }
  }
}

const RARITY_MEMO = Object.freeze({ memo: "threadRarity" });

/**
 * The rarity of words over the messages of `log` that render under `resolution` (a summarized, externalized or
 * dropped message no longer counts). The result is valid until the next call for the same history.
 */
export function threadRarity(log: LogView, resolution: SeqResolution): Rarity {
  const rarity = log.historyMemo(RARITY_MEMO, () => new IncrementalRarity());
  rarity.sync(log, resolution);
  return rarity;
}
