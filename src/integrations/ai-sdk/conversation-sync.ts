/**
 * Keeps a thread's log in step with an AI SDK conversation. The SDK hands every step (and every model call) the
 * whole conversation so far; the log must get each message once. Each message gets an id made from its content
 * and the id before it, so the same conversation always maps to the same ids: a step that sees messages already
 * logged skips them, and a new run that resends the history (a chat app's usual request) appends only what is new.
 */

import { canonicalJson, sha256Hex } from "../../extend.js";
import { type ContextEngine, type MessageInput, ValidationError } from "../../index.js";
import { queueOnThread } from "../thread-queue.js";
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

/** A conversation whose entries are converted and fingerprinted only when asked for. */
export interface Conversation {
  /** Entries, the system prompt given apart (when there is one) first. */
  readonly size: number;
  entry(index: number): Entry;
}

/** The conversation as lazy entries: the system prompt (when given apart from the messages) first. */
export function conversationOf(
  system: string | undefined,
  messages: ReadonlyArray<SdkMessage>,
): Conversation {
  if (!Array.isArray(messages)) {
    throw new ValidationError("the step's messages must be an array of model messages", {
      field: "messages",
    });
  }
  const offset = system === undefined ? 0 : 1;
  const entries: Entry[] = [];
  return {
    size: messages.length + offset,
    entry(index) {
      let entry = entries[index];
      if (entry === undefined) {
        entry = index < offset ? systemEntry(system!) : entryOf(messages[index - offset]!, index - offset);
        entries[index] = entry;
      }
      return entry;
    },
  };
}

const systemEntries = new Map<string, Entry>();

/** The entry of a system prompt given apart (the last few texts remembered: a helper has one). */
function systemEntry(text: string): Entry {
  let entry = systemEntries.get(text);
  if (entry === undefined) {
    const input = convertSdkMessage({ role: "system", content: text }, 0)!;
    entry = { input, fingerprint: sha256Hex(canonicalJson(input)), index: -1 };
    if (systemEntries.size >= 16) systemEntries.clear();
    systemEntries.set(text, entry);
  }
  return entry;
}

/** What the sync did. */
export interface SyncResult {
  /** Messages appended to the log. */
  readonly appended: number;
}

/** What a sync remembers of the conversation it last synced. */
interface Synced {
  /** Its entries. */
  readonly size: number;
  /** The fingerprints of its first and last entries (empty strings for an empty conversation). */
  readonly first: string;
  readonly last: string;
  /** The chain value (log id) after its last entry. */
  readonly chain: string;
}

/**
 * Appends to one thread what a conversation adds to it, never twice. Calls on one engine and thread run one at a
 * time across every helper of the process (a step waits for the previous step's append).
 */
export class ConversationSync {
  #synced: Synced | undefined;

  constructor(
    private readonly engine: ContextEngine,
    private readonly threadId: string,
  ) {}

  /** Runs `task` after every task queued before it on this engine and thread (whether those failed or not). */
  serialized<T>(task: () => Promise<T>): Promise<T> {
    return queueOnThread(this.engine, this.threadId, task);
  }

  /**
   * Appends the entries the log does not hold yet (one atomic batch). A conversation that goes on from the one
   * synced last (as long or longer, with the same first message and the same message where that one ended) is
   * taken to share its history: only the new messages are converted and hashed, so a loop of n steps costs O(n),
   * not O(n²). Anything else is matched against the log afresh.
   */
  async sync(conversation: Conversation): Promise<SyncResult> {
    const size = conversation.size;
    const synced = this.#synced;
    const fingerprint = (i: number) => conversation.entry(i).fingerprint;
    const continues =
      synced !== undefined &&
      synced.size <= size &&
      (synced.size === 0 ||
        (fingerprint(0) === synced.first && fingerprint(synced.size - 1) === synced.last));
    const { start, previous } = continues
      ? { start: synced.size, previous: synced.chain }
      : await this.#locate(conversation);
    const batch: MessageInput[] = [];
    let chain = previous;
    for (let i = start; i < size; i++) {
      chain = chainId(chain, fingerprint(i));
      const input = conversation.entry(i).input;
      if (input !== undefined) batch.push({ ...input, id: chain });
    }
    this.#synced = undefined; // until the append is known to have landed
    if (batch.length > 0) await this.engine.append(this.threadId, batch);
    this.#synced = {
      size,
      first: size === 0 ? "" : fingerprint(0),
      last: size === 0 ? "" : fingerprint(size - 1),
      chain,
    };
    return { appended: batch.length };
  }

  /**
   * Where a conversation this sync has not followed meets the log: after the longest leading run of messages the
   * log holds, when that run ends at the log's last message (the history was resent); after the log's last message
   * when the run holds at most the system prompt (the messages are new to a thread that keeps the history).
   * Anything else means the conversation rewrote history the log holds, which an append-only log cannot follow.
   * The log is asked only about this conversation's ids (`locateMessages`), not read whole.
   */
  async #locate(conversation: Conversation): Promise<{ start: number; previous: string }> {
    const chains: string[] = [];
    let value = "";
    for (let i = 0; i < conversation.size; i++) {
      value = chainId(value, conversation.entry(i).fingerprint);
      chains.push(value);
    }
    const asked = chains.filter((_, i) => conversation.entry(i).input !== undefined);
    const located = await this.engine.locateMessages(this.threadId, asked);
    if (located.length === 0) return { start: 0, previous: "" };
    let previous = "";
    let lastHeld: string | undefined;
    let start = 0;
    for (; start < conversation.size; start++) {
      const id = chains[start]!;
      if (conversation.entry(start).input !== undefined) {
        if (!located.seqs.has(id)) break;
        lastHeld = id;
      }
      previous = id;
    }
    if (lastHeld !== undefined && lastHeld === located.lastId) return { start, previous };
    const shared: Entry[] = [];
    for (let i = 0; i < start; i++) {
      const entry = conversation.entry(i);
      if (entry.input !== undefined) shared.push(entry);
    }
    if (shared.every((e) => e.input!.role === "system")) return { start, previous: located.lastId! };
    const index = start < conversation.size ? conversation.entry(start).index : conversation.size;
    const heldAt = lastHeld === undefined ? -1 : located.seqs.get(lastHeld)!;
    const after = located.length - 1 - heldAt;
    throw new ValidationError(
      `messages[${index}] does not continue thread ${JSON.stringify(this.threadId)}: the log holds ${after} ` +
        "message(s) after the ones this conversation shares with it. The log is append-only, so a conversation " +
        "whose history changed needs a new thread; to add to a thread, pass its whole conversation or only the new messages",
      { threadId: this.threadId, index, field: "messages" },
    );
  }
}
