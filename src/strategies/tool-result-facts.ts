/**
 * What tool-result retention knows about each tool result of a history: facts fixed once the result is
 * appended (tool name, policy, call, turn, its ordinal among the tool's results), kept in the history's shared
 * store and extended as the log grows, and whether a result has expired in one log value.
 */

import { ValidationError } from "../errors/ledger-error.js";
import { countBelow } from "../log/history-store.js";
import { type LogView, toolNameOfResult } from "../log/log-view.js";
import type { Message, ToolResultPart } from "../log/message.js";
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

/**
 * The result facts of one history under one policy resolver. Shared by every log value of the history, so it
 * may hold facts past a value's length; a value only reads results below its own length.
 */
export class ResultFacts {
  #length = 0;
  readonly #bySeq = new Map<number, ReadonlyArray<ResultRef>>();
  /** Per tool name: the seq of each of its results in log order (twice for two results in one message). */
  readonly #toolSeqs = new Map<string, number[]>();
  /**
   * Per tool name: its results before the seqs `#toolSeqs` lists (restored facts start counting at the
   * checkpoint's length and only serve log values at least that long).
   */
  readonly #before = new Map<string, number>();

  constructor(private readonly policyOf: PolicyResolver) {}

  /**
   * What a thread checkpoint keeps of these facts at `log.length`: per tool its result count, and the facts of
   * the results in the tool messages `held` says the checkpoint holds (policies are resolved again on restore).
   */
  stateAt(log: LogView, held: (seq: number) => boolean): ResultFactsState {
    this.extend(log);
    const counts: Array<[string, number]> = [];
    for (const tool of new Set([...this.#before.keys(), ...this.#toolSeqs.keys()])) {
      counts.push([tool, this.resultsBelow(tool, log.length)]);
    }
    const results: Array<[number, number, number, string, number, number]> = [];
    for (const [seq, refs] of this.#bySeq) {
      if (seq >= log.length || !held(seq)) continue;
      const parts = log.at(seq)!.parts;
      for (const r of refs)
        results.push([seq, parts.indexOf(r.part), r.callSeq, r.toolName, r.turn, r.ordinal]);
    }
    return { length: log.length, counts, results };
  }

  /**
   * Facts restored from `stateAt` on a log holding (at least) the tool messages it lists, at its length. Throws
   * `ValidationError` when a listed result is not in the log.
   */
  static restore(policyOf: PolicyResolver, log: LogView, state: ResultFactsState): ResultFacts {
    const facts = new ResultFacts(policyOf);
    facts.#length = state.length;
    for (const [tool, count] of state.counts) facts.#before.set(tool, count);
    const bySeq = new Map<number, ResultRef[]>();
    for (const [seq, partIndex, callSeq, toolName, turn, ordinal] of state.results) {
      const message = log.at(seq);
      const part = message?.parts[partIndex];
      if (message?.role !== "tool" || part?.type !== "tool_result" || seq >= state.length) {
        throw new ValidationError(
          `checkpoint lists a tool result at seq ${seq} part ${partIndex} the log lacks`,
          {
            threadId: log.threadId,
            field: "checkpoint.memos",
          },
        );
      }
      const policy = facts.#policyFor(log, message, callSeq, toolName);
      const refs = bySeq.get(seq) ?? [];
      refs.push(Object.freeze({ seq, part, callSeq, toolName, policy, turn, ordinal }));
      bySeq.set(seq, refs);
    }
    for (const [seq, refs] of bySeq) facts.#bySeq.set(seq, Object.freeze(refs));
    return facts;
  }

  /** The policy in force for a result: by tool, and the durability of the result's message or else its call's. */
  #policyFor(log: LogView, message: Message, callSeq: number, toolName: string): ResolvedToolPolicy {
    return this.policyOf(toolName, message.meta.durability ?? log.at(callSeq)!.meta.durability);
  }

  /** Results by tool-message seq (read only seqs below the asking value's length). */
  get bySeq(): ResultIndex {
    return this.#bySeq;
  }

  /** Indexes the results of the messages up to `log.length` not indexed yet. */
  extend(log: LogView): void {
    for (let seq = this.#length; seq < log.length; seq++) {
      const message = log.at(seq)!;
      if (message.role !== "tool") continue;
      const callSeqs = log.callSeqsOfParts(seq);
      const turn = log.turnIndexOf(seq);
      const refs: ResultRef[] = [];
      message.parts.forEach((part, i) => {
        if (part.type !== "tool_result") return;
        const callSeq = callSeqs[i]!;
        const toolName = toolNameOfResult(log, seq, i) ?? "tool";
        const policy = this.#policyFor(log, message, callSeq, toolName);
        let seqs = this.#toolSeqs.get(toolName);
        if (seqs === undefined) {
          seqs = [];
          this.#toolSeqs.set(toolName, seqs);
        }
        const ordinal = (this.#before.get(toolName) ?? 0) + seqs.length;
        refs.push(Object.freeze({ seq, part, callSeq, toolName, policy, turn, ordinal }));
        seqs.push(seq);
      });
      this.#bySeq.set(seq, Object.freeze(refs));
    }
    this.#length = Math.max(this.#length, log.length);
  }

  /** Number of results of `tool` among the first `length` messages. */
  resultsBelow(tool: string, length: number): number {
    return (this.#before.get(tool) ?? 0) + countBelow(this.#toolSeqs.get(tool) ?? [], length);
  }
}

/**
 * Result facts as a checkpoint keeps them: the log length, per tool its result count, and per held result
 * `[seq, part index, call seq, tool name, turn, ordinal]`.
 */
export interface ResultFactsState {
  readonly length: number;
  readonly counts: ReadonlyArray<readonly [string, number]>;
  readonly results: ReadonlyArray<readonly [number, number, number, string, number, number]>;
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

/** The history-memo key prefix of retention memos (the options' canonical JSON follows it). */
export const RETENTION_PREFIX = "toolResultRetention:";

/** The history's retention memo for the options `key` (their canonical JSON), facts extended to `log`. */
export function retentionMemo(log: LogView, key: string, policyOf: PolicyResolver): RetentionMemo {
  const memo = log.historyMemo(`${RETENTION_PREFIX}${key}`, () => ({
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
    private readonly log: LogView,
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
