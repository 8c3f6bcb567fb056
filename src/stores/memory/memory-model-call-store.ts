import {
  callNotFound,
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

  function record(input: ModelCallRecord): void {
    const checked = checkCallRecord(input);
    if (records.has(checked.callId)) throw duplicateCallError(checked);
    records.set(checked.callId, checked);
  }

  function setUsage(callId: string, usage: ModelUsage): void {
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
    get: async (callId: string) => records.get(callId),
    setUsage: async (callId: string, usage: ModelUsage) => setUsage(callId, usage),
    list: async (threadId: string) =>
      Object.freeze([...records.values()].filter((r) => r.threadId === threadId)),
    recent: async (threadId: string, limit: number) => {
      checkLimit(limit);
      const out: ModelCallRecord[] = [];
      for (const r of [...records.values()].reverse()) {
        if (out.length >= limit) break;
        if (r.threadId === threadId) out.push(r);
      }
      return Object.freeze(out.reverse());
    },
    listWithUsage: async (model: string, limit: number) => listWithUsage(model, limit),
  });
}
