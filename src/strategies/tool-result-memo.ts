/**
 * How tool-result retention's memo travels in a thread checkpoint: its sweep (the groups left open) and the
 * facts it keeps per result of the messages the checkpoint holds.
 */

import type { LogView } from "../log/log-view.js";
import type { SeqResolution } from "../plan/resolve-for-log.js";
import { durabilityClasses, toolClassesSchema } from "./durability-classes.js";
import { GroupSweep } from "./group-sweep.js";
import { parseOptions } from "./options.js";
import { isCount, record, type StrategyMemo } from "./strategy-memo.js";
import {
  classedPolicies,
  type PolicyResolver,
  policyResolver,
  toolResultRetentionOptionsSchema,
} from "./tool-policy.js";
import {
  RETENTION_PREFIX,
  ResultFacts,
  type ResultFactsState,
  type RetentionMemo,
} from "./tool-result-facts.js";

function factsOf(value: unknown): ResultFactsState {
  const facts = record(value, ["length", "counts", "results"], "result facts");
  if (!isCount(facts.length)) throw new RangeError("result facts length must be an integer ≥ 0");
  const perTool = facts.counts;
  if (
    !Array.isArray(perTool) ||
    !perTool.every((c) => Array.isArray(c) && c.length === 2 && typeof c[0] === "string" && isCount(c[1]))
  ) {
    throw new RangeError("result facts counts must be [tool, count] pairs");
  }
  const results = facts.results;
  const isResult = (r: unknown): boolean =>
    Array.isArray(r) &&
    r.length === 6 &&
    isCount(r[0]) &&
    isCount(r[1]) &&
    isCount(r[2]) &&
    typeof r[3] === "string" &&
    isCount(r[4]) &&
    isCount(r[5]);
  if (!Array.isArray(results) || !results.every(isResult)) {
    throw new RangeError("result facts results must be [seq, seq, seq, tool, count, count] tuples");
  }
  return facts as unknown as ResultFactsState;
}

/** The policy resolver of the retention whose history-memo key is `memoKey` (its options follow the prefix). */
export function retentionPolicyOf(memoKey: string): PolicyResolver {
  // `[options, [builtIn, [[tool, class], …]]]`: the options and the pipeline's durability classes (see
  // `DurabilityClasses.key`). A key of an older checkpoint holds the options alone.
  const parsed = JSON.parse(memoKey.slice(RETENTION_PREFIX.length)) as unknown;
  const [options, classes] = Array.isArray(parsed) ? parsed : [parsed, undefined];
  const policyOf = policyResolver(
    parseOptions(toolResultRetentionOptionsSchema, options, "toolResultRetention"),
  );
  if (classes === undefined) return policyOf;
  const [builtIn, tools] = classes as [boolean, Array<[string, string]>];
  const spec = parseOptions(toolClassesSchema, Object.fromEntries(tools), "toolClasses");
  return classedPolicies(policyOf, durabilityClasses({ builtIn, tools: spec }));
}

/**
 * The checkpoint memo of tool-result retention; `prime` brings the memo under a key up to a plan (the strategy's
 * own sweep, passed in so this module needs nothing of the strategy).
 */
export function retentionCheckpointMemo(
  prime: (log: LogView, resolution: SeqResolution, key: string) => boolean,
): StrategyMemo {
  return {
    prefix: RETENTION_PREFIX,
    prime,
    sweep: (log, key) => (log.peekHistoryMemo(key) as RetentionMemo | undefined)?.sweep,
    exportExtra: (log, key, held) => (log.peekHistoryMemo(key) as RetentionMemo).facts.stateAt(log, held),
    encodeData: () => null,
    restore: (log, resolution, key, sweep, extra) => {
      const state = factsOf(extra);
      const policyOf = retentionPolicyOf(key);
      const memo = log.historyMemo<RetentionMemo>(key, () => ({
        facts: ResultFacts.restore(policyOf, log, state),
        sweep: new GroupSweep<undefined>(),
      }));
      memo.sweep.restore(log, resolution, { ...sweep, data: undefined });
    },
  };
}
