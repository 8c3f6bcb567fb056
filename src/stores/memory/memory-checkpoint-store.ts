import {
  CHECKPOINTS_KEPT,
  type CheckpointKey,
  type CheckpointStore,
  checkBaseKey,
  checkCheckpoint,
  checkLatestArguments,
  newestFirst,
  type ThreadCheckpoint,
} from "../checkpoint-store.js";

/**
 * An in-memory `CheckpointStore`: each thread's checkpoints in a short list, newest first, trimmed to
 * `CHECKPOINTS_KEPT` on every put (a tail continuing another is stored joined). Checkpoints are handed out as the frozen copies `put` made (without tails).
 *
 * @example
 * const checkpoints = createMemoryCheckpointStore();
 * await checkpoints.put({ threadId: "t1", planVersion: 2, logLength: 40, format: "cl-checkpoint/1", body });
 * await checkpoints.latest("t1", 2, 55); // the one above
 */
export function createMemoryCheckpointStore(): CheckpointStore {
  // Newest first (plan version, then log length); never longer than CHECKPOINTS_KEPT.
  const byThread = new Map<string, ThreadCheckpoint[]>();
  const tails = new WeakMap<ThreadCheckpoint, string>();

  function put(input: ThreadCheckpoint): boolean {
    const { head, tail } = checkCheckpoint(input);
    return store(head, tail);
  }

  /** The stored checkpoint of a thread under a key, if any. */
  function find(threadId: string, key: CheckpointKey): ThreadCheckpoint | undefined {
    return byThread
      .get(threadId)
      ?.find((c) => c.planVersion === key.planVersion && c.logLength === key.logLength);
  }

  function store(head: ThreadCheckpoint, tail: string): boolean {
    if (find(head.threadId, head) !== undefined) return false;
    const kept = byThread.get(head.threadId) ?? [];
    tails.set(head, tail);
    byThread.set(head.threadId, [...kept, head].sort(newestFirst).slice(0, CHECKPOINTS_KEPT));
    return true;
  }

  function putExtending(input: ThreadCheckpoint, base: CheckpointKey): "stored" | "exists" | "missing" {
    const { head, tail } = checkCheckpoint(input);
    checkBaseKey(head.threadId, base);
    if (find(head.threadId, head) !== undefined) return "exists";
    const from = find(head.threadId, base);
    if (from === undefined) return "missing";
    store(head, tails.get(from)! + tail);
    return "stored";
  }

  function latest(threadId: string, planVersion: number, maxLogLength: number): ThreadCheckpoint | undefined {
    checkLatestArguments(threadId, planVersion, maxLogLength);
    // Newest first, so the first match has the greatest log length.
    return byThread.get(threadId)?.find((c) => c.planVersion === planVersion && c.logLength <= maxLogLength);
  }

  function tail(threadId: string, planVersion: number, logLength: number): string | undefined {
    checkLatestArguments(threadId, planVersion, logLength, "logLength");
    const found = find(threadId, { planVersion, logLength });
    return found === undefined ? undefined : tails.get(found);
  }

  return Object.freeze({
    put: async (checkpoint: ThreadCheckpoint) => put(checkpoint),
    putExtending: async (checkpoint: ThreadCheckpoint, base: CheckpointKey) => putExtending(checkpoint, base),
    latest: async (threadId: string, planVersion: number, maxLogLength: number) =>
      latest(threadId, planVersion, maxLogLength),
    tail: async (threadId: string, planVersion: number, logLength: number) =>
      tail(threadId, planVersion, logLength),
  });
}
