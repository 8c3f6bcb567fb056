import { checkThreadId } from "../log-store.js";
import {
  callNotFound,
  checkCallId,
  checkCallRecord,
  checkLimit,
  checkUsage,
  duplicateCallError,
  type ModelCallRecord,
  type ModelCallStore,
  type ModelUsage,
} from "../model-call-store.js";

/**
 * An in-memory `ModelCallStore`; records keep their recording order, which `list` and `listWithUsage` follow.
 *
 * @example
 * const calls = createMemoryModelCallStore();
 * await calls.record(record);
 */
export function createMemoryModelCallStore(): ModelCallStore {
  // A Map iterates in insertion order, which is the recording order.
  const records = new Map<string, ModelCallRecord>();
  // Per thread, its call ids in recording order: a turn reads its thread's last calls without scanning all.
  const byThread = new Map<string, string[]>();

  function record(input: ModelCallRecord): void {
    const checked = checkCallRecord(input);
    if (records.has(checked.callId)) throw duplicateCallError(checked);
    records.set(checked.callId, checked);
    const ids = byThread.get(checked.threadId) ?? [];
    ids.push(checked.callId);
    byThread.set(checked.threadId, ids);
  }

  function callsOf(threadId: string, from = 0): ReadonlyArray<ModelCallRecord> {
    const ids = byThread.get(threadId) ?? [];
    return Object.freeze(ids.slice(Math.max(0, from)).map((id) => records.get(id)!));
  }

  function setUsage(callId: string, usage: ModelUsage): void {
    checkCallId(callId);
    const checked = checkUsage(callId, usage);
    const existing = records.get(callId);
    if (existing === undefined) throw callNotFound(callId);
    records.set(callId, Object.freeze({ ...existing, usage: checked }));
  }

  function listWithUsage(model: string, limit: number): ReadonlyArray<ModelCallRecord> {
    checkLimit(limit);
    const out: ModelCallRecord[] = [];
    for (const r of [...records.values()].reverse()) {
      if (out.length >= limit) break;
      if (r.model === model && r.usage !== undefined) out.push(r);
    }
    return Object.freeze(out);
  }

  return Object.freeze({
    record: async (input: ModelCallRecord) => record(input),
    get: async (callId: string) => {
      checkCallId(callId);
      return records.get(callId);
    },
    setUsage: async (callId: string, usage: ModelUsage) => setUsage(callId, usage),
    list: async (threadId: string) => {
      checkThreadId(threadId);
      return callsOf(threadId);
    },
    recent: async (threadId: string, limit: number) => {
      checkThreadId(threadId);
      checkLimit(limit);
      return callsOf(threadId, (byThread.get(threadId)?.length ?? 0) - limit);
    },
    listWithUsage: async (model: string, limit: number) => listWithUsage(model, limit),
  });
}
