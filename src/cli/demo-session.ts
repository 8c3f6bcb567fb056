/**
 * The demo's input: a generated agent session (no shared data needed), split into the part that is ingested as
 * a JSONL file and the turns a harness appends afterwards, one model call each.
 */
import type { MessageInput } from "../index.js";
import { exportTranscript } from "../log/import-jsonl.js";
import { splitAtReplies } from "../log/reply-batches.js";
import { ThreadLog } from "../log/thread-log.js";
import { generateSampleSession } from "../sample/index.js";

/** The session the demo runs. */
export interface DemoSession {
  /** The history written to a JSONL file and ingested first. */
  readonly transcript: string;
  readonly ingested: number;
  /** What happens after each model call: the assistant's reply, its tool results, maybe a new user request. */
  readonly turns: ReadonlyArray<ReadonlyArray<MessageInput>>;
}

/** Drops the generator's ids: transcripts carry none, and the log numbers messages itself. */
function withoutId(input: MessageInput): MessageInput {
  const { id: _, ...rest } = input;
  return rest;
}

/** Splits batches into `n` consecutive turns of about the same number of messages. */
function intoTurns(batches: ReadonlyArray<ReadonlyArray<MessageInput>>, n: number): MessageInput[][] {
  const total = batches.reduce((sum, b) => sum + b.length, 0);
  const turns: MessageInput[][] = [];
  let current: MessageInput[] = [];
  let done = 0;
  for (const batch of batches) {
    current.push(...batch.map(withoutId));
    done += batch.length;
    if (done >= (total * (turns.length + 1)) / n) {
      turns.push(current);
      current = [];
    }
  }
  if (current.length > 0) turns.push(current);
  return turns;
}

/**
 * Generates the session (deterministic for a seed): the first `ingestShare` of its messages become the JSONL
 * transcript, the rest is split into `turns` turns.
 */
export function demoSession(options: {
  readonly messages: number;
  readonly ingestShare: number;
  readonly turns: number;
  readonly seed: number;
}): DemoSession {
  const inputs = generateSampleSession({ messages: options.messages, seed: options.seed });
  const batches = splitAtReplies(inputs);
  let cut = 1;
  let ingested = batches[0]!.length;
  while (cut < batches.length - options.turns && ingested < inputs.length * options.ingestShare) {
    ingested += batches[cut++]!.length;
  }
  const head = batches.slice(0, cut).flat();
  // The generator writes log inputs; exporting them gives the JSONL shape real transcripts come in.
  const transcript = exportTranscript(ThreadLog.from("demo", head));
  return { transcript, ingested: head.length, turns: intoTurns(batches.slice(cut), options.turns) };
}
