import { hash } from "node:crypto";
import { hashMessageContent } from "../log/canonical-json.js";
import { deepFreeze } from "../log/deep-freeze.js";
import type { LogView } from "../log/log-view.js";
import type { MessageMeta, Part, Role } from "../log/message.js";
import type { CompactionPlan } from "../plan/compaction-plan.js";
import { RENDER_FORMAT_VERSION, type RenderFormatVersion } from "../texts/placeholders.js";
import type { MessageCounter } from "../tokens/tokenizer.js";
import type { Provenance, RenderedMessage, RenderedPrompt } from "./rendered-prompt.js";

/**
 * What one rendered message contributes to the prompt hash: role, content hash (sha256 of role + parts) and
 * provenance (kind, synthetic, source ids). Roles and kinds come from fixed sets, the content hash has a fixed
 * length and the sources field is tagged, so the encoding is unambiguous.
 */
function hashLine(message: RenderedMessage): Buffer {
  const known = lines.get(message);
  if (known !== undefined) return known;
  const { provenance } = message;
  const { kind, synthetic } = provenance;
  const digest = digests.get(provenance);
  const sources = digest === undefined ? sourcesField(provenance.sourceIds) : `#${digest}`;
  const line = Buffer.from(
    `${message.role}\n${message.contentHash}\n${kind}\n${synthetic}\n${sources}\n`,
    "utf8",
  );
  lines.set(message, line);
  return line;
}

/** Source lists up to this many ids enter the hash as JSON; longer ones as a digest. */
const INLINE_SOURCES = 8;

/**
 * The sources field of a hash line: `=` and the JSON list for a short list (most rendered messages have one
 * source; a digest per message made hashing a cold render's main cost), `#` and the sha256 of that JSON for a
 * long one (a summary can stand for 100,000 ids, and the hash is computed every turn, so its input must not grow
 * with the thread). JSON escapes newlines, so the field never contains the line separator.
 */
function sourcesField(sourceIds: ReadonlyArray<string>): string {
  return sourceIds.length <= INLINE_SOURCES
    ? `=${JSON.stringify(sourceIds)}`
    : `#${sourcesDigest(sourceIds)}`;
}

const sourceDigests = new WeakMap<ReadonlyArray<string>, string>();

/**
 * The digest a long source list enters the prompt hash as (sha256 of its JSON); a thread checkpoint keeps it so
 * a restored summary hashes without its list (see `lazyProvenance`).
 */
export function sourcesDigest(sourceIds: ReadonlyArray<string>): string {
  let digest = sourceDigests.get(sourceIds);
  if (digest === undefined) {
    digest = hash("sha256", JSON.stringify(sourceIds), "hex");
    sourceDigests.set(sourceIds, digest);
  }
  return digest;
}

/** Whether a source list of this length enters the hash as a digest (longer than the inline limit). */
export function hashedAsDigest(count: number): boolean {
  return count > INLINE_SOURCES;
}

// Provenance objects whose long source list is built on demand, with the digest that stands for it in the hash.
const digests = new WeakMap<Provenance, string>();

/**
 * A frozen provenance whose `sourceIds` (more than the inline limit of them, with digest `digest`) are built by
 * `ids` when first read: hashing the message uses the digest and never builds the list.
 */
export function lazyProvenance(
  kind: Provenance["kind"],
  digest: string,
  ids: () => ReadonlyArray<string>,
): Provenance {
  const provenance = {} as Provenance;
  Object.defineProperties(provenance, {
    kind: { value: kind, enumerable: true },
    sourceIds: { get: ids, enumerable: true },
    synthetic: { value: true, enumerable: true },
  });
  digests.set(Object.freeze(provenance), digest);
  return provenance;
}

// Rendered messages are frozen and reused across renders (memos), and a summary's provenance can list tens of
// thousands of ids: its line is built once per message object, as bytes, so hashing a prompt is one copy of
// the lines and one hash update (not a string of every line re-encoded each turn).
const lines = new WeakMap<RenderedMessage, Buffer>();

/** Builds a frozen rendered message and counts its tokens (cached by content hash in the counter). */
export function makeRendered(
  role: Role,
  parts: ReadonlyArray<Part>,
  provenance: Provenance,
  counter: MessageCounter,
  contentHash?: string,
  meta?: MessageMeta,
): RenderedMessage {
  const digest = contentHash ?? hashMessageContent(role, parts);
  const tokens = counter.countMessage({ role, parts }, digest);
  const rendered = { role, parts, provenance, tokens, contentHash: digest };
  return deepFreeze(meta === undefined ? rendered : { ...rendered, meta });
}

const versionLines = new Map<string, Buffer>();

function versionLine(version: RenderFormatVersion): Buffer {
  let line = versionLines.get(version);
  if (line === undefined) {
    line = Buffer.from(`${version}\n`, "utf8");
    versionLines.set(version, line);
  }
  return line;
}

/** Leading tokens of `current` that are identical, message for message, to `previous`. */
export function unchangedLeadingTokens(
  previous: ReadonlyArray<RenderedMessage>,
  current: ReadonlyArray<RenderedMessage>,
): number {
  let tokens = 0;
  const n = Math.min(previous.length, current.length);
  for (let i = 0; i < n; i++) {
    const a = previous[i]!;
    const b = current[i]!;
    if (a !== b && !hashLine(a).equals(hashLine(b))) break;
    tokens += b.tokens;
  }
  return tokens;
}

const STABLE_KINDS: ReadonlySet<Provenance["kind"]> = new Set(["summary", "pointer", "drop_marker"]);

/**
 * Index of the last message of the leading run of system messages and synthetic stand-ins for older history
 * (summaries, pointers, markers of dropped runs); -1 when there is none.
 */
export function stablePrefixEnd(messages: ReadonlyArray<RenderedMessage>): number {
  let end = -1;
  for (const [i, m] of messages.entries()) {
    if (m.role === "system" || STABLE_KINDS.has(m.provenance.kind)) end = i;
    else break;
  }
  return end;
}

/**
 * sha256 over the render format version and, per message, its role, content hash and provenance: equal requests,
 * equal hashes. Content hashes are computed once when a message is rendered (they key the token cache too), so
 * hashing a prompt never re-reads message text.
 */
export function hashRendered(
  messages: ReadonlyArray<RenderedMessage>,
  version: RenderFormatVersion = RENDER_FORMAT_VERSION,
): string {
  const chunks = new Array<Buffer>(messages.length + 1);
  chunks[0] = versionLine(version);
  for (let i = 0; i < messages.length; i++) chunks[i + 1] = hashLine(messages[i]!);
  return hash("sha256", Buffer.concat(chunks), "hex");
}

/** Assembles the final `RenderedPrompt` with totals, hash and cache-stability figures. */
export function finishPrompt(
  log: Pick<LogView, "threadId" | "length">,
  plan: Pick<CompactionPlan, "version">,
  messages: ReadonlyArray<RenderedMessage>,
  options: {
    readonly counter: MessageCounter;
    readonly previous?: RenderedPrompt;
    readonly formatVersion?: RenderFormatVersion;
  },
): RenderedPrompt {
  let tokenCount = options.counter.requestOverhead;
  for (const m of messages) tokenCount += m.tokens;
  const frozen = Object.freeze(messages.slice());
  // Hashed when first read: the pipeline renders many candidate requests only to measure them.
  let hash: string | undefined;
  return Object.freeze({
    threadId: log.threadId,
    messages: frozen,
    tokenCount,
    planVersion: plan.version,
    logSeq: log.length,
    get hash() {
      hash ??= hashRendered(frozen, options.formatVersion);
      return hash;
    },
    counterId: options.counter.id,
    unchangedLeadingTokens:
      options.previous !== undefined && options.previous.counterId === options.counter.id
        ? unchangedLeadingTokens(options.previous.messages, frozen)
        : 0,
    stablePrefixEnd: stablePrefixEnd(frozen),
  });
}
