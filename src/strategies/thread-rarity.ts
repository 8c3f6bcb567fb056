/**
 * The word rarity of a thread as a plan leaves it: document frequencies over the messages that still render
 * (included or cleared), kept per history and brought up to date by difference, so a turn only reads the
 * messages that appeared or went since the last one.
 */
import type { Message } from "../log/message.js";
import type { ThreadLog } from "../log/thread-log.js";
import { decisionAt, type SeqResolution } from "../plan/resolve-for-log.js";
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

/** Whether a message renders as itself (whole or cleared) under a resolution. */
function renders(resolution: SeqResolution, seq: number): boolean {
  const kind = decisionAt(resolution, seq)?.kind;
  return kind === undefined || kind === "include" || kind === "clear";
}

/** Document frequencies over a set of messages, updated by adding and removing messages. */
class IncrementalRarity implements Rarity {
  readonly #df = new Map<string, number>();
  /** Words per counted seq (what removing it takes away). */
  readonly #words = new Map<number, { readonly message: Message; readonly words: ReadonlySet<string> }>();

  get documents(): number {
    return this.#words.size;
  }

  documentFrequency(word: string): number {
    return this.#df.get(word) ?? 0;
  }

  /** Counts exactly the messages of `log` that render under `resolution` (all of them are held). */
  sync(log: ThreadLog, resolution: SeqResolution): void {
    for (const [seq, entry] of this.#words) {
      const stays = seq < log.length && renders(resolution, seq) && log.at(seq) === entry.message;
      if (!stays) this.#remove(seq, entry.words);
    }
    for (let seq = 0; seq < log.length; seq++) {
      if (this.#words.has(seq) || !renders(resolution, seq)) continue;
      const message = log.at(seq)!;
      const words = messageWords(message);
      this.#words.set(seq, { message, words });
      for (const word of words) this.#df.set(word, (this.#df.get(word) ?? 0) + 1);
    }
  }

  #remove(seq: number, words: ReadonlySet<string>): void {
    this.#words.delete(seq);
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
export function threadRarity(log: ThreadLog, resolution: SeqResolution): Rarity {
  const rarity = log.historyMemo(RARITY_MEMO, () => new IncrementalRarity());
  rarity.sync(log, resolution);
  return rarity;
}
