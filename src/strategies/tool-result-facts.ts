/**
 * What tool-result retention knows about each tool result of a history: facts fixed once the result is
 * appended (tool name, policy, call, turn, its ordinal among the tool's results), kept in the history's shared
 * store and extended as the log grows, and whether a result has expired in one log value.
 */

import { countBelow } from "../log/history-store.js";
import type { ToolResultPart } from "../log/message.js";
import type { ThreadLog } from "../log/thread-log.js";
import { GroupSweep } from "./group-sweep.js";
import type { PolicyResolver, ResolvedToolPolicy } from "./tool-policy.js";

/** One tool result of the log with the policy in force for it. */
export interface ResultRef {
  readonly seq: number;
  readonly part: ToolResultPart;
  /** Seq of the assistant message holding the call. */
  readonly callSeq: number;
  readonly toolName: string;
  readonly policy: ResolvedToolPolicy;
  /** Index of the turn holding the tool message. */
  readonly turn: number;
  /** Index among the results of the same tool, in log order. */
  readonly ordinal: number;
}

/** Tool results by tool-message seq. */
export type ResultIndex = ReadonlyMap<number, ReadonlyArray<ResultRef>>;

function toolNameOf(log: ThreadLog, callSeq: number, callId: string): string {
  for (const p of log.at(callSeq)!.parts) if (p.type === "tool_call" && p.callId === callId) return p.name;
  return "tool";
}

/**
 * The result facts of one history under one policy resolver. Shared by every log value of the history, so it
 * may hold facts past a value's length; a value only reads results below its own length.
 */
export class ResultFacts {
  #length = 0;
  readonly #bySeq = new Map<number, ReadonlyArray<ResultRef>>();
  /** Per tool name: the seq of each of its results in log order (twice for two results in one message). */
  readonly #toolSeqs = new Map<string, number[]>();

  constructor(private readonly policyOf: PolicyResolver) {}

  /** Results by tool-message seq (read only seqs below the asking value's length). */
  get bySeq(): ResultIndex {
    return this.#bySeq;
  }

  /** Indexes the results of the messages up to `log.length` not indexed yet. */
  extend(log: ThreadLog): void {
    for (let seq = this.#length; seq < log.length; seq++) {
      const message = log.at(seq)!;
      if (message.role !== "tool") continue;
      const callSeqs = log.callSeqsOfParts(seq);
      const turn = log.turnIndexOf(seq);
      const refs: ResultRef[] = [];
      message.parts.forEach((part, i) => {
        if (part.type !== "tool_result") return;
        const callSeq = callSeqs[i]!;
        const toolName = toolNameOf(log, callSeq, part.callId);
        const policy = this.policyOf(toolName, message.meta.durability ?? log.at(callSeq)!.meta.durability);
        let seqs = this.#toolSeqs.get(toolName);
        if (seqs === undefined) {
          seqs = [];
          this.#toolSeqs.set(toolName, seqs);
        }
        refs.push(Object.freeze({ seq, part, callSeq, toolName, policy, turn, ordinal: seqs.length }));
        seqs.push(seq);
      });
      this.#bySeq.set(seq, Object.freeze(refs));
    }
    this.#length = Math.max(this.#length, log.length);
  }

  /** Number of results of `tool` among the first `length` messages. */
  resultsBelow(tool: string, length: number): number {
    return countBelow(this.#toolSeqs.get(tool) ?? [], length);
  }
}

/**
 * What retention keeps per history and policy: the result facts and the sweep of settled groups. Both depend on
 * nothing but the log, the plan and the policy, so every retention instance with the same options shares them
 * (an engine's inline and background pipelines each have one).
 */
export interface RetentionMemo {
  readonly facts: ResultFacts;
  readonly sweep: GroupSweep<undefined>;
}

/** The history's retention memo for the options `key` (their canonical JSON), facts extended to `log`. */
export function retentionMemo(log: ThreadLog, key: string, policyOf: PolicyResolver): RetentionMemo {
  const memo = log.historyMemo(`toolResultRetention:${key}`, () => ({
    facts: new ResultFacts(policyOf),
    sweep: new GroupSweep<undefined>(),
  }));
  memo.facts.extend(log);
  return memo;
}

/**
 * Which results have expired in one log value: older than `keepTurns` turns, or not among the last `keepLast`
 * results of their tool. Both ages only grow as the log grows, so an expired result stays expired.
 */
export class Expiry {
  readonly #lastTurn: number;
  readonly #counts = new Map<string, number>();

  constructor(
    private readonly log: ThreadLog,
    private readonly facts: ResultFacts,
  ) {
    this.#lastTurn = log.turnCount - 1;
  }

  /** Whether the result's policy says it has expired in this log value. */
  expired(ref: ResultRef): boolean {
    const { policy } = ref;
    if (policy.neverEvict) return false;
    if (this.#lastTurn - ref.turn >= policy.keepTurns) return true;
    // Rank counts the tool's results newest first: the last N are ranks 0..N-1.
    return this.#count(ref.toolName) - 1 - ref.ordinal >= policy.keepLast;
  }

  /** Whether the result's expiry can no longer change as the log grows: expired already, or it never will. */
  final(ref: ResultRef): boolean {
    const { policy } = ref;
    const never = policy.neverEvict || (policy.keepTurns === Infinity && policy.keepLast === Infinity);
    return never || this.expired(ref);
  }

  #count(tool: string): number {
    let n = this.#counts.get(tool);
    if (n === undefined) {
      n = this.facts.resultsBelow(tool, this.log.length);
      this.#counts.set(tool, n);
    }
    return n;
  }
}
