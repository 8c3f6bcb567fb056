/**
 * Keeps a thread's log in step with an AI SDK conversation. The SDK hands every step (and every model call) the
 * whole conversation so far; the log must get each message once. Each message gets an id made from its content
 * and the id before it, so the same conversation always maps to the same ids: a step that sees messages already
 * logged skips them, and a new run that resends the history (a chat app's usual request) appends only what is new.
 */

import { canonicalJson, sha256Hex } from "../../extend.js";
import { type ContextEngine, type MessageInput, NotFoundError, ValidationError } from "../../index.js";
import { convertSdkMessage } from "./from-model-messages.js";
import type { SdkMessage } from "./sdk-types.js";

/** One message of the conversation: its log input (none for approvals only) and its content fingerprint. */
interface Entry {
  readonly input: MessageInput | undefined;
  readonly fingerprint: string;
  /** Index in the caller's `messages` (-1 for the system prompt given as an option). */
  readonly index: number;
}

/** The id of a message after the message whose chain value is `previous`. */
function chainId(previous: string, fingerprint: string): string {
  return `ai-${sha256Hex(`${previous}\n${fingerprint}`).slice(0, 32)}`;
}

// Converted messages by object: the SDK hands each step the same message objects as the step before (and never
// changes them), so a step converts and hashes only the messages it has not seen, not the whole conversation.
const converted = new WeakMap<object, Omit<Entry, "index">>();

function entryOf(message: SdkMessage, index: number): Entry {
  const known = typeof message === "object" && message !== null ? converted.get(message) : undefined;
  if (known !== undefined) return { ...known, index };
  const input = convertSdkMessage(message, index);
  const entry = { input, fingerprint: sha256Hex(canonicalJson(input ?? message)) };
  converted.set(message, entry);
  return { ...entry, index };
}

/** The conversation as entries: the system prompt (when given apart from the messages) first. */
export function entriesOf(system: string | undefined, messages: ReadonlyArray<SdkMessage>): Entry[] {
  if (!Array.isArray(messages)) {
    throw new ValidationError("the step's messages must be an array of model messages", {
      field: "messages",
    });
  }
  const entries: Entry[] = [];
  if (system !== undefined) {
    const input = convertSdkMessage({ role: "system", content: system }, 0)!;
    entries.push({ input, fingerprint: sha256Hex(canonicalJson(input)), index: -1 });
  }
  messages.forEach((message, index) => {
    entries.push(entryOf(message, index));
  });
  return entries;
}

/** What the sync did. */
export interface SyncResult {
  /** Messages appended to the log. */
  readonly appended: number;
}

/**
 * Appends to one thread what a conversation adds to it, never twice. Calls run one at a time (a step waits for
 * the previous step's append).
 */
export class ConversationSync {
  /** The fingerprints of the conversation last synced and the chain value of its last message. */
  #known: { readonly fingerprints: ReadonlyArray<string>; readonly last: string } | undefined;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly engine: ContextEngine,
    private readonly threadId: string,
  ) {}

  /** Runs `task` after every task queued before it (whether those failed or not). */
  serialized<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task, task);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Appends the entries the log does not hold yet (one atomic batch). */
  async sync(entries: ReadonlyArray<Entry>): Promise<SyncResult> {
    const fingerprints = entries.map((e) => e.fingerprint);
    const known = this.#known;
    const continues =
      known !== undefined &&
      known.fingerprints.length <= fingerprints.length &&
      known.fingerprints.every((f, i) => f === fingerprints[i]);
    const { start, previous } = continues
      ? { start: known.fingerprints.length, previous: known.last }
      : await this.#locate(entries);
    const batch: MessageInput[] = [];
    let chain = previous;
    for (let i = start; i < entries.length; i++) {
      chain = chainId(chain, fingerprints[i]!);
      const input = entries[i]!.input;
      if (input !== undefined) batch.push({ ...input, id: chain });
    }
    if (batch.length > 0) await this.engine.append(this.threadId, batch);
    this.#known = { fingerprints, last: chain };
    return { appended: batch.length };
  }

  /** The ids of the thread's messages, in order (none for a thread not started). */
  async #logIds(): Promise<ReadonlyArray<string>> {
    try {
      return (await this.engine.explain(this.threadId)).rows.map((row) => row.id);
    } catch (error) {
      if (error instanceof NotFoundError) return [];
      throw error;
    }
  }

  /**
   * Where a conversation this sync has not followed meets the log: after the longest leading run of messages the
   * log holds, when that run ends at the log's last message (the history was resent); after the log's last message
   * when the run holds at most the system prompt (the messages are new to a thread that keeps the history).
   * Anything else means the conversation rewrote history the log holds, which an append-only log cannot follow.
   */
  async #locate(entries: ReadonlyArray<Entry>): Promise<{ start: number; previous: string }> {
    const ids = await this.#logIds();
    if (ids.length === 0) return { start: 0, previous: "" };
    const held = new Set(ids);
    let previous = "";
    let lastHeld: string | undefined;
    let start = 0;
    for (; start < entries.length; start++) {
      const id = chainId(previous, entries[start]!.fingerprint);
      if (entries[start]!.input !== undefined) {
        if (!held.has(id)) break;
        lastHeld = id;
      }
      previous = id;
    }
    const last = ids[ids.length - 1]!;
    if (lastHeld === last) return { start, previous };
    const shared = entries.slice(0, start).filter((e) => e.input !== undefined);
    if (shared.every((e) => e.input!.role === "system")) return { start, previous: last };
    const index = entries[start]?.index ?? entries.length;
    const after = ids.length - 1 - ids.indexOf(lastHeld!);
    throw new ValidationError(
      `messages[${index}] does not continue thread ${JSON.stringify(this.threadId)}: the log holds ${after} ` +
        "message(s) after the ones this conversation shares with it. The log is append-only, so a conversation " +
        "whose history changed needs a new thread; to add to a thread, pass its whole conversation or only the new messages",
      { threadId: this.threadId, index, field: "messages" },
    );
  }
}
