/**
 * A thread checkpoint's tail (docs/decisions/0009): the part a turn rarely reads, stored beside the body and read
 * only when asked for. It is a sequence of chunks, each two lines of JSON:
 *
 *     {"absent": [start, end, …], "ids": [id, …]}   ids of messages not held, at the seqs of the runs, in order
 *     {"retired": […], "deferred": […]}            retired actions and deferred fields (plan-checkpoint.ts)
 *
 * Retired actions and deferred fields are numbered across the chunks in order. A checkpoint made from scratch
 * has one chunk. One that continues the tail of a checkpoint already stored adds a chunk holding only what it
 * adds — the seqs held then and not now, or appended since and not held; the actions retired since; the new
 * actions' deferred fields — and the store appends it to the stored tail (`CheckpointStore.putExtending`), so
 * the engine neither reads nor writes the old tail again: a checkpoint per commit costs what changed.
 */
import * as z from "zod";
import { CheckpointUnfitError, MessageNotLoadedError } from "../errors/ledger-error.js";
import { forEachAbsentSeq, inRuns } from "../log/history-store.js";
import type { CheckpointStore, ThreadCheckpoint } from "../stores/checkpoint-store.js";
import { reportMiss } from "./checkpoint-misses.js";
import type { ActionCheckpoint, DeferredField } from "./plan-checkpoint.js";

// Seq and id lists may hold tens of thousands of entries: one loop checks them (a schema per element costs ~10×).
export const seqList = z.custom<number[]>(
  (value) => Array.isArray(value) && value.every((n) => Number.isSafeInteger(n) && n >= 0),
  "expected an array of integers ≥ 0",
);
const idList = z.custom<string[]>(
  (value) => Array.isArray(value) && value.every((id) => typeof id === "string"),
  "expected an array of strings",
);
const absentChunk = z.strictObject({ absent: seqList, ids: idList });

/** The two lines of one chunk (see the module comment). */
export function tailChunk(
  absent: ReadonlyArray<number>,
  ids: ReadonlyArray<string>,
  retired: ReadonlyArray<ActionCheckpoint>,
  deferred: ReadonlyArray<DeferredField>,
): string {
  return `${JSON.stringify({ absent, ids })}\n${JSON.stringify({ retired, deferred })}`;
}

/**
 * The runs of seqs not held at `length` that were held (or not yet there) in a checkpoint at `baseLength`
 * holding `baseHeld`: what a checkpoint continuing that one's tail adds to it. Undefined when a seq not held
 * then is held now (that tail would name it): such a checkpoint cannot continue it.
 */
export function newlyAbsent(
  baseHeld: ReadonlyArray<number>,
  baseLength: number,
  held: ReadonlyArray<number>,
  length: number,
): number[] | undefined {
  if (length < baseLength) return undefined;
  const heldThen = (seq: number) => seq >= baseLength || inRuns(baseHeld, seq);
  for (let r = 0; r < held.length; r += 2) {
    for (let seq = held[r]!; seq < Math.min(held[r + 1]!, baseLength); seq++) {
      if (!heldThen(seq)) return undefined;
    }
  }
  const runs: number[] = [];
  forEachAbsentSeq(held, length, (seq) => {
    if (!heldThen(seq)) return;
    if (runs.length > 0 && runs[runs.length - 1] === seq) runs[runs.length - 1] = seq + 1;
    else runs.push(seq, seq + 1);
  });
  return runs;
}

/** The retired actions and deferred fields of a whole tail, in the order their indices count. */
export interface TailLists {
  readonly retired: ReadonlyArray<ActionCheckpoint>;
  readonly deferred: ReadonlyArray<DeferredField>;
}

const listsChunk = z.strictObject({
  retired: z.array(z.looseObject({ kind: z.string() })),
  deferred: z.array(
    z.strictObject({ action: z.number().int().nonnegative(), field: z.string(), value: z.unknown() }),
  ),
});

/**
 * A restored checkpoint's tail, read from the store the first time something asks for it. Before then, reading
 * throws `MessageNotLoadedError` whose `fetch` reads it (none once the store no longer holds it: a full load).
 * A tail that does not fit the checkpoint throws `CheckpointUnfitError` (a full load too).
 */
export class CheckpointTail {
  #lines: ReadonlyArray<string> | undefined;
  #gone = false;

  constructor(
    private readonly checkpoints: CheckpointStore,
    private readonly key: ThreadCheckpoint,
  ) {}

  /** Reads the tail (once; nothing when already read or gone). */
  async load(): Promise<void> {
    if (this.#lines !== undefined || this.#gone) return;
    const { threadId, planVersion, logLength } = this.key;
    const text = await this.checkpoints.tail(threadId, planVersion, logLength);
    if (text === undefined) this.#gone = true;
    else this.#lines = text.split("\n");
  }

  /**
   * The ids of the messages not held by a checkpoint at `length` holding the `held` runs, in seq order: every
   * such seq named by exactly one chunk, and no other.
   */
  absentIds(held: ReadonlyArray<number>, length: number): string[] {
    const lines = this.#chunkLines();
    const bySeq: Array<string | undefined> = new Array(length);
    let named = 0;
    for (let c = 0; c < lines.length; c += 2) {
      const { absent, ids } = this.#parse(lines[c]!, absentChunk, c);
      let i = 0;
      for (let r = 0; r < absent.length; r += 2) {
        for (let seq = absent[r]!; seq < (absent[r + 1] ?? seq); seq++) {
          if (seq >= length || bySeq[seq] !== undefined || i >= ids.length) {
            throw this.#unfit(`chunk ${c / 2} names seq ${seq} again, past the log or without an id`);
          }
          bySeq[seq] = ids[i++];
        }
      }
      if (i !== ids.length) throw this.#unfit(`chunk ${c / 2} has ${ids.length} ids for ${i} seqs`);
      named += i;
    }
    const out: string[] = [];
    forEachAbsentSeq(held, length, (seq) => {
      const id = bySeq[seq];
      if (id === undefined) throw this.#unfit(`no id for seq ${seq}, which the checkpoint does not hold`);
      out.push(id);
    });
    if (out.length !== named) throw this.#unfit(`it names ${named - out.length} seqs the checkpoint holds`);
    return out;
  }

  /** The retired actions and deferred fields of all chunks, which must number `counts` in all. */
  lists(counts: { readonly retired: number; readonly deferred: number }): TailLists {
    const lines = this.#chunkLines();
    const retired: ActionCheckpoint[] = [];
    const deferred: DeferredField[] = [];
    for (let c = 1; c < lines.length; c += 2) {
      const chunk = this.#parse(lines[c]!, listsChunk, c);
      retired.push(...(chunk.retired as unknown as ActionCheckpoint[]));
      deferred.push(...chunk.deferred);
    }
    if (retired.length !== counts.retired || deferred.length !== counts.deferred) {
      throw this.#unfit(
        `it holds ${retired.length} retired actions and ${deferred.length} deferred fields, not ${counts.retired} and ${counts.deferred}`,
      );
    }
    return { retired, deferred };
  }

  #chunkLines(): ReadonlyArray<string> {
    if (this.#lines === undefined) {
      const fetch = this.#gone ? undefined : () => this.load();
      return reportMiss(
        new MessageNotLoadedError(
          "the checkpoint's tail (ids of messages not held, retired actions, long fields)",
          { threadId: this.key.threadId },
          undefined,
          fetch,
        ),
      );
    }
    if (this.#lines.length % 2 !== 0) throw this.#unfit(`it has ${this.#lines.length} lines, not pairs`);
    return this.#lines;
  }

  #parse<T>(text: string, schema: z.ZodType<T>, line: number): T {
    try {
      return schema.parse(JSON.parse(text));
    } catch (error) {
      throw this.#unfit(`line ${line + 1} is unreadable: ${(error as Error).message}`);
    }
  }

  #unfit(problem: string): never {
    return reportMiss(
      new CheckpointUnfitError(`its tail does not fit: ${problem}`, {
        threadId: this.key.threadId,
        field: "checkpoint.tail",
      }),
    );
  }
}
